//! A plugin's JSON Schemas: parsed and compiled when it loads, then the checks every input
//! and output passes, the same at submission, at run time and in `caseload plugin check`.

use serde_json::Value;

use super::{Plugin, PluginError};
use crate::violation::Violation;

/// The input schema keyword that lists the use case's parameters: input fields a data file
/// does not carry (an objective's sense, say), which a dataset launch may give beside the
/// `data_file_identifier`. Each must be one of the schema's `properties`.
pub const DATASET_PARAMETERS_KEYWORD: &str = "x-caseload-dataset-parameters";

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

    /// The output must be JSON that the plugin's own output schema accepts.
    pub fn check_output(&self, output: &str) -> Result<(), String> {
        let value: Value = serde_json::from_str(output)
            .map_err(|error| format!("the output is not JSON: {error}"))?;
        let problems: Vec<String> = self
            .output_schema
            .iter_errors(&value)
            .take(10)
            .map(|error| format!("{}: {}", error.instance_path().as_str(), error.masked()))
            .collect();
        if problems.is_empty() {
            Ok(())
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
}
