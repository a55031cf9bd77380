//! Where a use case takes a warm start, declared in its input schema: the input field an
//! earlier job's output (or a part of it) goes into when a launch gives
//! `options.warm_start`.
//!
//! ```json
//! "x-caseload-warm-start": {"pointer": "/initial_partition", "from": "/partition"}
//! "x-caseload-warm-start": "/initial_state"
//! ```
//!
//! The first form takes the output's `partition` into the input's `initial_partition`; the
//! second takes the whole output. The field is one of the input schema's top-level
//! properties, so that it can stand beside a dataset as well as in inline input.

use serde_json::Value;

/// The input schema keyword that declares where a warm start goes.
pub const WARM_START_KEYWORD: &str = "x-caseload-warm-start";

/// Where a warm start comes from in an output, and where it goes in an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmStartSpec {
    /// The input's top-level property it goes into.
    pub field: String,
    /// A JSON pointer into the earlier output; empty for the whole output.
    pub from: String,
}

impl WarmStartSpec {
    /// The declaration in an input schema, if it has one.
    pub fn parse(input_schema: &Value) -> Result<Option<WarmStartSpec>, String> {
        let Some(declared) = input_schema.get(WARM_START_KEYWORD) else {
            return Ok(None);
        };
        let (pointer, from) = match declared {
            Value::String(pointer) => (pointer.as_str(), ""),
            Value::Object(fields) => {
                let from = match fields.get("from") {
                    None => "",
                    Some(Value::String(from)) if from.is_empty() || from.starts_with('/') => {
                        from.as_str()
                    }
                    Some(_) => {
                        return Err(format!(
                            "{WARM_START_KEYWORD}.from must be a JSON pointer into the output \
                             (\"/partition\"), or \"\" for the whole output"
                        ));
                    }
                };
                let pointer = fields.get("pointer").and_then(Value::as_str).unwrap_or("");
                (pointer, from)
            }
            _ => {
                return Err(format!(
                    "{WARM_START_KEYWORD} must be a JSON pointer to an input property \
                     (\"/initial_partition\") or {{\"pointer\": ..., \"from\": ...}}"
                ));
            }
        };
        let field = pointer
            .strip_prefix('/')
            .filter(|field| !field.is_empty() && !field.contains('/') && !field.contains('~'))
            .ok_or_else(|| {
                format!(
                    "{WARM_START_KEYWORD}.pointer must name one top-level input property \
                     (\"/initial_partition\"), not {pointer:?}"
                )
            })?;
        let declared = input_schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key(field));
        if !declared {
            return Err(format!(
                "{WARM_START_KEYWORD}: {field:?} is not one of the input schema's properties"
            ));
        }
        Ok(Some(WarmStartSpec {
            field: field.to_owned(),
            from: from.to_owned(),
        }))
    }

    /// The part of an earlier output that goes into the input, or why there is none.
    pub fn take(&self, output: &Value) -> Result<Value, String> {
        output.pointer(&self.from).cloned().ok_or_else(|| {
            format!(
                "its output has nothing at {} (the input schema's {WARM_START_KEYWORD}.from)",
                self.from
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(keyword: Value) -> Value {
        json!({
            "type": "object",
            "properties": {"initial_partition": {}, "edges": {}},
            WARM_START_KEYWORD: keyword,
        })
    }

    #[test]
    fn reads_both_forms_and_takes_from_an_output() {
        let spec = WarmStartSpec::parse(&schema(
            json!({"pointer": "/initial_partition", "from": "/partition"}),
        ))
        .expect("valid")
        .expect("declared");
        assert_eq!(spec.field, "initial_partition");
        assert_eq!(
            spec.take(&json!({"partition": [0, 1], "cut_value": 1}))
                .expect("present"),
            json!([0, 1])
        );
        let error = spec.take(&json!({"cut_value": 1})).expect_err("absent");
        assert!(error.contains("/partition"), "{error}");

        let whole = WarmStartSpec::parse(&schema(json!("/initial_partition")))
            .expect("valid")
            .expect("declared");
        assert_eq!(whole.from, "");
        assert_eq!(
            whole.take(&json!({"a": 1})).expect("whole"),
            json!({"a": 1})
        );
        assert_eq!(
            WarmStartSpec::parse(&json!({"properties": {}})).expect("valid"),
            None
        );
    }

    #[test]
    fn refuses_what_names_no_top_level_property() {
        for (keyword, expected) in [
            (
                json!("/missing"),
                "not one of the input schema's properties",
            ),
            (json!("/edges/0"), "one top-level input property"),
            (json!("initial_partition"), "one top-level input property"),
            (
                json!({"from": "/partition"}),
                "one top-level input property",
            ),
            (
                json!({"pointer": "/initial_partition", "from": "partition"}),
                "JSON pointer into the output",
            ),
            (json!(3), "must be a JSON pointer"),
        ] {
            let error = WarmStartSpec::parse(&schema(keyword.clone())).expect_err("invalid");
            assert!(error.contains(expected), "{keyword}: {error}");
        }
    }
}
