//! A dataset as a plugin's input: JSON as it is, another media type through the plugin's
//! `decode`, with the launch's parameters set in it.

use serde_json::{Map, Value};

use super::Plugin;
use crate::runtime::{CallError, Limits};

/// Why a dataset cannot be a plugin's input.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The plugin does not read files of this media type.
    #[error("{name} reads {accepted} datasets, not {media_type}")]
    Unsupported {
        name: String,
        media_type: String,
        accepted: String,
    },
    /// A JSON dataset that is not UTF-8 text.
    #[error("the dataset is declared {0} but is not UTF-8 text")]
    NotText(String),
    /// `decode` failed or rejected the file.
    #[error(transparent)]
    Decode(CallError),
    /// Parameters were given beside a dataset whose input is not a JSON object.
    #[error("the dataset's input is not a JSON object, so parameters cannot stand beside it")]
    NotAnObject,
}

/// True for `application/json` and `…+json`: a JSON dataset is the input itself.
pub fn is_json(media_type: &str) -> bool {
    media_type == "application/json" || media_type.ends_with("+json")
}

impl Plugin {
    /// The JSON input a dataset file stands for, with the launch's `parameters` set in it
    /// (they replace what the file says of them): JSON as it is, another media type the
    /// plugin declares through its `decode`, under `limits`. The same at submission and at
    /// run time.
    pub fn dataset_input(
        &self,
        media_type: &str,
        bytes: Vec<u8>,
        parameters: &Map<String, Value>,
        limits: &Limits,
    ) -> Result<String, DatasetError> {
        let input = self.decoded_dataset(media_type, bytes, limits)?;
        if parameters.is_empty() {
            return Ok(input);
        }
        let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(&input) else {
            return Err(DatasetError::NotAnObject);
        };
        for (name, value) in parameters {
            fields.insert(name.clone(), value.clone());
        }
        Ok(Value::Object(fields).to_string())
    }

    fn decoded_dataset(
        &self,
        media_type: &str,
        bytes: Vec<u8>,
        limits: &Limits,
    ) -> Result<String, DatasetError> {
        if is_json(media_type) {
            return String::from_utf8(bytes).map_err(|_| DatasetError::NotText(media_type.into()));
        }
        if !self
            .info
            .media_types
            .iter()
            .any(|accepted| accepted == media_type)
        {
            return Err(DatasetError::Unsupported {
                name: self.info.name.clone(),
                media_type: media_type.to_owned(),
                accepted: self.info.media_types.join(", "),
            });
        }
        self.component
            .decode(media_type, &bytes, limits)
            .map_err(DatasetError::Decode)
    }
}
