//! A plugin's JSON Schemas: parsed and compiled when it loads, then the checks every input
//! and output passes, the same at submission, at run time and in `caseload plugin check`.

use serde_json::Value;

use super::objective::Scored;
use super::{Plugin, PluginError};
use crate::violation::Violation;

/// The input schema keyword that lists the use case's parameters: input fields a data file
/// does not carry (an objective's sense, say), which a dataset launch may give beside the
/// `data_file_identifier`. Each must be one of the schema's `properties`.
pub const DATASET_PARAMETERS_KEYWORD: &str = "x-caseload-dataset-parameters";

/// The input schema keyword that says which file extensions stand for which of the use
/// case's media types, as `{"text/x-qubo": {"extensions": [".qubo"]}}`: an upload sent
/// without a telling `Content-Type` is given the media type its filename's extension names.
/// Each media type must be one the plugin's `describe` lists.
pub const MEDIA_TYPES_KEYWORD: &str = "x-caseload-media-types";

/// The longest extension a use case may declare, its dot included.
const MAX_EXTENSION_LENGTH: usize = 16;

/// At most this many schema violations are listed; the rest are counted.
const MAX_LISTED_ERRORS: usize = 100;

/// Violation messages longer than this quote the offending value no more.
const MAX_MESSAGE_LENGTH: usize = 200;

impl Plugin {
    /// Every violation of the input schema, each at its JSON pointer.
    pub fn input_violations(&self, input: &Value) -> Vec<Violation> {
        let mut errors = Vec::new();
        let mut unlisted = 0usize;
        for error in self.input_schema.iter_errors(input) {
            if errors.len() == MAX_LISTED_ERRORS {
                unlisted += 1;
                continue;
            }
            let mut message = error.to_string();
            if message.len() > MAX_MESSAGE_LENGTH {
                message = error.masked().to_string();
            }
            errors.push(Violation::new(error.instance_path().as_str(), message));
        }
        if unlisted > 0 {
            errors.push(Violation::new(
                "",
                format!("{unlisted} more violations not listed"),
            ));
        }
        errors
    }

    /// The output must be JSON that the plugin's own output schema accepts, with its
    /// objective where the schema declares one. Returns that objective.
    pub fn check_output(&self, output: &str) -> Result<Option<Scored>, String> {
        let value: Value = serde_json::from_str(output)
            .map_err(|error| format!("the output is not JSON: {error}"))?;
        let problems: Vec<String> = self
            .output_schema
            .iter_errors(&value)
            .take(10)
            .map(|error| format!("{}: {}", error.instance_path().as_str(), error.masked()))
            .collect();
        if problems.is_empty() {
            self.objective
                .as_ref()
                .map(|objective| objective.score(&value))
                .transpose()
                .map(Option::flatten)
        } else {
            Err(format!(
                "the output does not match the output schema: {}",
                problems.join("; ")
            ))
        }
    }
}

/// The example inputs the input schema lists under JSON Schema's own `examples` keyword:
/// what `GET /problem/<id>` shows and `caseload plugin check` runs.
pub fn examples(input_schema: &Value) -> Vec<Value> {
    input_schema
        .get("examples")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub(super) fn parse_schema(which: &'static str, text: &str) -> Result<Value, PluginError> {
    serde_json::from_str(text).map_err(|error| PluginError::Schema {
        which,
        message: error.to_string(),
    })
}

pub(super) fn compile_schema(
    which: &'static str,
    schema: &Value,
) -> Result<jsonschema::Validator, PluginError> {
    jsonschema::validator_for(schema).map_err(|error| PluginError::Schema {
        which,
        message: error.to_string(),
    })
}

/// The names the input schema lists under [`DATASET_PARAMETERS_KEYWORD`]: each must be a
/// string naming one of its top-level `properties`.
pub(super) fn dataset_parameters(schema: &Value) -> Result<Vec<String>, PluginError> {
    let Some(listed) = schema.get(DATASET_PARAMETERS_KEYWORD) else {
        return Ok(Vec::new());
    };
    let invalid = |message: String| PluginError::Schema {
        which: "input",
        message: format!("{DATASET_PARAMETERS_KEYWORD}: {message}"),
    };
    let Some(listed) = listed.as_array() else {
        return Err(invalid("must be an array of property names".into()));
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    listed
        .iter()
        .map(|name| {
            let name = name
                .as_str()
                .ok_or_else(|| invalid("must be an array of property names".into()))?;
            if properties.is_some_and(|properties| properties.contains_key(name)) {
                Ok(name.to_owned())
            } else {
                Err(invalid(format!(
                    "{name:?} is not one of the schema's properties"
                )))
            }
        })
        .collect()
}

/// The file extensions the input schema declares under [`MEDIA_TYPES_KEYWORD`], each
/// lowercased without its dot, with the media type it stands for, in the order declared.
/// `declared` are the media types `describe` lists: the keyword may name only those.
pub(super) fn media_type_extensions(
    schema: &Value,
    declared: &[String],
) -> Result<Vec<(String, String)>, PluginError> {
    let Some(listed) = schema.get(MEDIA_TYPES_KEYWORD) else {
        return Ok(Vec::new());
    };
    let invalid = |message: String| PluginError::Schema {
        which: "input",
        message: format!("{MEDIA_TYPES_KEYWORD}: {message}"),
    };
    let shape = || {
        invalid(r#"must be an object of media types, each {"extensions": [".ext", ...]}"#.into())
    };
    let listed = listed.as_object().ok_or_else(shape)?;
    let mut extensions = Vec::new();
    for (media_type, declaration) in listed {
        if !declared.iter().any(|known| known == media_type) {
            return Err(invalid(format!(
                "{media_type:?} is not one of the media types the plugin reads ({})",
                declared.join(", ")
            )));
        }
        let names = declaration
            .get("extensions")
            .and_then(Value::as_array)
            .ok_or_else(shape)?;
        for name in names {
            let name = name.as_str().ok_or_else(shape)?;
            let extension = name
                .strip_prefix('.')
                .filter(|extension| {
                    !extension.is_empty()
                        && name.len() <= MAX_EXTENSION_LENGTH
                        && extension.bytes().all(|byte| {
                            byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'+')
                        })
                })
                .ok_or_else(|| {
                    invalid(format!(
                        "{name:?} is not a file extension: a dot, then up to {} letters, \
                         digits, '-', '_' or '+'",
                        MAX_EXTENSION_LENGTH - 1
                    ))
                })?;
            extensions.push((extension.to_ascii_lowercase(), media_type.clone()));
        }
    }
    Ok(extensions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_parameters_must_be_properties_of_the_input_schema() {
        let schema = |extra: &str| -> Value {
            serde_json::from_str(&format!(
                r#"{{"type": "object", "properties": {{"sense": {{}}, "data": {{}}}}{extra}}}"#
            ))
            .expect("JSON")
        };
        assert_eq!(
            dataset_parameters(&schema("")).expect("none declared"),
            Vec::<String>::new()
        );
        assert_eq!(
            dataset_parameters(&schema(r#", "x-caseload-dataset-parameters": ["sense"]"#))
                .expect("a property"),
            ["sense"]
        );
        for (extra, expected) in [
            (
                r#", "x-caseload-dataset-parameters": ["seed"]"#,
                "\"seed\" is not one",
            ),
            (r#", "x-caseload-dataset-parameters": "sense""#, "an array"),
            (r#", "x-caseload-dataset-parameters": [1]"#, "an array"),
        ] {
            let error = dataset_parameters(&schema(extra)).expect_err(extra);
            assert!(error.to_string().contains(expected), "{extra}: {error}");
        }
    }

    #[test]
    fn extensions_name_media_types_the_plugin_reads() {
        let declared = ["application/json".to_owned(), "text/x-qubo".to_owned()];
        let read = |keyword: &str| {
            let schema: Value =
                serde_json::from_str(&format!(r#"{{"x-caseload-media-types": {keyword}}}"#))
                    .expect("JSON");
            media_type_extensions(&schema, &declared)
        };
        assert_eq!(
            media_type_extensions(&serde_json::json!({}), &declared).expect("none declared"),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            read(r#"{"text/x-qubo": {"extensions": [".qubo", ".QBSolv"]}}"#).expect("declared"),
            [
                ("qubo".to_owned(), "text/x-qubo".to_owned()),
                ("qbsolv".to_owned(), "text/x-qubo".to_owned())
            ]
        );
        for (keyword, expected) in [
            (
                r#"{"text/x-gset": {"extensions": [".gset"]}}"#,
                "not one of the media types",
            ),
            (
                r#"{"text/x-qubo": {"extensions": ["qubo"]}}"#,
                "not a file extension",
            ),
            (
                r#"{"text/x-qubo": {"extensions": [".a/b"]}}"#,
                "not a file extension",
            ),
            (
                r#"{"text/x-qubo": {"extensions": ["."]}}"#,
                "not a file extension",
            ),
            (r#"{"text/x-qubo": [".qubo"]}"#, "must be an object"),
            (r#"[".qubo"]"#, "must be an object"),
        ] {
            let error = read(keyword).expect_err(keyword);
            assert!(error.to_string().contains(expected), "{keyword}: {error}");
        }
    }
}
