//! A small request body (an account's, a key's, a project's) read as the type its handler
//! takes, every refusal a problem document with its pointer.

use serde_json::Value;

use crate::api::ApiError;
use crate::violation::Violation;

/// A body read as `T`: it must be a JSON object, and so must each of `objects` it has (or
/// null), where serde would take an array for a struct too.
pub fn parse<T: serde::de::DeserializeOwned>(
    body: &[u8],
    shape: &str,
    objects: &[&str],
) -> Result<T, ApiError> {
    let invalid = |pointer: String, message: String| ApiError::Validation {
        detail: "the body is not what this request takes".into(),
        errors: vec![Violation::new(pointer, message)],
    };
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| invalid(String::new(), format!("expected {shape}: {error}")))?;
    let Value::Object(fields) = &value else {
        return Err(invalid(
            String::new(),
            format!("expected an object, {shape}"),
        ));
    };
    for name in objects {
        if fields
            .get(*name)
            .is_some_and(|field| !field.is_object() && !field.is_null())
        {
            return Err(invalid(format!("/{name}"), "expected an object".into()));
        }
    }
    serde_json::from_value(value)
        .map_err(|error| invalid(String::new(), format!("expected {shape}: {error}")))
}
