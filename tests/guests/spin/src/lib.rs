//! A test guest whose `run` never returns: the sandbox's time limit must stop it.
//! Built by the host's build script for the end-to-end tests; never shipped.

use caseload_sdk::{Describe, RunContext, RunError, UseCase};

pub struct Spin;

impl UseCase for Spin {
    type Input = serde_json::Value;
    type Output = serde_json::Value;

    fn describe() -> Describe {
        Describe {
            name: "spin",
            version: "0.1.0",
            aliases: &["urn:caseload:test:spin"],
            description: "Loops forever without yielding (test guest).",
            input_schema: r#"{"type": "object"}"#,
            output_schema: r#"{"type": "object"}"#,
            media_types: &["application/json"],
        }
    }

    fn run(
        _input: serde_json::Value,
        _context: &RunContext,
    ) -> Result<serde_json::Value, RunError> {
        // Lands in the execution's log: stdout is captured, even for a run that is killed.
        println!("spinning until the sandbox stops me");
        let mut counter = 0u64;
        loop {
            counter = std::hint::black_box(counter.wrapping_add(1));
        }
    }
}

caseload_sdk::export_use_case!(Spin);
