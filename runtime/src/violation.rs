//! One problem with an input, located by a JSON pointer: what a schema check, the options
//! parser, a plugin's `decode`, `validate` and `run` all report. It becomes WIT's `violation`
//! in `runtime` and the problem document's `errors` entry in `api/error.rs`, nowhere else.

/// One problem with an input, at a JSON pointer into it (`""` for the input as a whole).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

impl Violation {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Violation {
        Violation {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}
