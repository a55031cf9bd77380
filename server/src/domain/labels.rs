//! A launch's `labels`: a few short strings a client attaches to a job to find it again
//! (`GET /jobs?label=key:value`).

use serde_json::Value;

use crate::violation::Violation;

/// The most labels one job may carry.
pub const MAX_LABELS: usize = 16;

/// The longest key.
const MAX_KEY: usize = 63;

/// The longest value.
const MAX_VALUE: usize = 255;

/// Whether `key` may name a label: 1 to 63 letters, digits and `-_./`.
pub fn valid_key(key: &str) -> bool {
    (1..=MAX_KEY).contains(&key.len())
        && key
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_./".contains(&byte))
}

/// Whether `value` may be a label's value: at most 255 bytes.
pub fn valid_value(value: &str) -> bool {
    value.len() <= MAX_VALUE
}

/// Reads the body's `labels` (absent or `{}` means none) as the JSON stored with the job.
pub fn parse_labels(labels: Option<&Value>) -> Result<Option<String>, Vec<Violation>> {
    let error = |field: &str, message: &str| Violation::new(format!("/labels{field}"), message);
    let Some(labels) = labels else {
        return Ok(None);
    };
    let Some(labels) = labels.as_object() else {
        return Err(vec![error("", "must be an object of strings")]);
    };
    let mut errors = Vec::new();
    if labels.len() > MAX_LABELS {
        errors.push(error("", &format!("at most {MAX_LABELS} labels")));
    }
    for (key, value) in labels {
        let field = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        if !valid_key(key) {
            errors.push(error(
                &field,
                &format!("a key is 1 to {MAX_KEY} letters, digits and -_./"),
            ));
        }
        match value.as_str() {
            Some(value) if valid_value(value) => {}
            _ => errors.push(error(
                &field,
                &format!("must be a string of at most {MAX_VALUE} bytes"),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if labels.is_empty() {
        return Ok(None);
    }
    // A `Map` keeps its keys in order, so equal labels are equal text.
    Ok(Some(Value::Object(labels.clone()).to_string()))
}
