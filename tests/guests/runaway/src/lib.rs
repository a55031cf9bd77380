//! A test guest that misbehaves as its input asks, so that each sandbox limit can be tested
//! against a real component: `{"mode": "spin"}` loops without calling the host, `"sleep"`
//! blocks in a WASI sleep for an hour, `"grow"` allocates `grow_mib` MiB (or without end).
//! Built by the host's build script for the end-to-end tests; never shipped.

use std::time::Duration;

use caseload_sdk::{Describe, RunContext, RunError, UseCase};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Spin,
    Sleep,
    Grow,
}

#[derive(Debug, Deserialize, Serialize)]
pub struct Input {
    pub mode: Mode,
    pub grow_mib: Option<usize>,
}

pub struct Runaway;

impl UseCase for Runaway {
    type Input = Input;
    type Output = Value;

    fn describe() -> Describe {
        Describe {
            name: "runaway",
            version: "0.1.0",
            aliases: &["urn:caseload:test:runaway"],
            description: "Spins, sleeps or grows memory on request (test guest).",
            input_schema: r#"{
                "type": "object",
                "required": ["mode"],
                "properties": {
                    "mode": {"enum": ["spin", "sleep", "grow"]},
                    "grow_mib": {"type": "integer", "minimum": 0}
                },
                "additionalProperties": false
            }"#,
            output_schema: r#"{"type": "object"}"#,
            media_types: &["application/json"],
        }
    }

    fn run(input: Input, _context: &RunContext) -> Result<Value, RunError> {
        // Lands in the execution's log: stdout is captured, even for a run that is killed.
        println!("running away: {:?}", input.mode);
        match input.mode {
            Mode::Spin => {
                let mut counter = 0u64;
                loop {
                    counter = std::hint::black_box(counter.wrapping_add(1));
                }
            }
            Mode::Sleep => {
                std::thread::sleep(Duration::from_secs(3600));
                Ok(json!({"slept": true}))
            }
            Mode::Grow => {
                let mut kept: Vec<Vec<u8>> = Vec::new();
                while input.grow_mib.is_none_or(|limit| kept.len() < limit) {
                    // Touch every page so the memory is really used.
                    kept.push(vec![1u8; 1 << 20]);
                }
                Ok(json!({"allocated_mib": std::hint::black_box(kept).len()}))
            }
        }
    }
}

caseload_sdk::export_use_case!(Runaway);
