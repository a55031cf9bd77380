//! {{name}}: a caseload use case. `caseload plugin build` makes the component;
//! `caseload plugin watch .` rebuilds, checks and publishes it on every change.

use caseload_sdk::{Describe, RunContext, RunError, UseCase, Violation};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize)]
pub struct Input {
    numbers: Vec<f64>,
}

#[derive(Serialize)]
pub struct Output {
    /// The side (0 or 1) of each number.
    sides: Vec<u8>,
    difference: f64,
}

struct Plugin;

impl UseCase for Plugin {
    type Input = Input;
    type Output = Output;

    fn describe() -> Describe {
        Describe {
            name: "{{name}}",
            version: env!("CARGO_PKG_VERSION"),
            aliases: &[],
            description: "Splits numbers into two sides with sums as close as possible (largest first, greedy).",
            input_schema: include_str!("../schema/input.schema.json"),
            output_schema: include_str!("../schema/output.schema.json"),
            media_types: &["application/json"],
        }
    }

    // What the schema cannot say; runs at submission, so a client hears of it as a 422.
    fn validate(input: &Input) -> Result<(), Vec<Violation>> {
        match input.numbers.iter().position(|number| *number < 0.0) {
            Some(at) => Err(vec![Violation::new(
                format!("/numbers/{at}"),
                "must not be negative",
            )]),
            None => Ok(()),
        }
    }

    fn run(input: Input, context: &RunContext) -> Result<Output, RunError> {
        let mut order: Vec<usize> = (0..input.numbers.len()).collect();
        order.sort_by(|&a, &b| input.numbers[b].total_cmp(&input.numbers[a]));
        let mut sides = vec![0; input.numbers.len()];
        let mut sums = [0.0, 0.0];
        for (done, &index) in order.iter().enumerate() {
            let side = usize::from(sums[1] < sums[0]);
            sides[index] = side as u8;
            sums[side] += input.numbers[index];
            if done % 1024 == 0 {
                if context.cancelled() {
                    return Err(RunError::Failed("cancelled".into()));
                }
                context.progress(done as f64 / order.len() as f64, "");
            }
        }
        Ok(Output {
            sides,
            difference: (sums[0] - sums[1]).abs(),
        })
    }
}

caseload_sdk::export_use_case!(Plugin);
