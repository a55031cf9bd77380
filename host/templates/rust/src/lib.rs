//! {{name}}: a caseload use case. `caseload plugin build` makes the component;
//! `caseload plugin watch .` rebuilds, checks and publishes it on every change.

use caseload_sdk::{
    Describe, EvaluateError, Evaluation, RunContext, RunError, UseCase, Violation,
};
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

    // Scores a given solution without searching (POST /problem/{{name}}/evaluate): the
    // objective `run` would report for it, and each rule it breaks. Without this method the
    // SDK answers that the use case does not evaluate solutions.
    fn evaluate(input: &Input, solution: &str) -> Result<Evaluation, EvaluateError> {
        #[derive(Deserialize)]
        struct Given {
            sides: Vec<u8>,
        }
        let Given { sides } = caseload_sdk::solution(solution)?;
        if sides.len() != input.numbers.len() || sides.iter().any(|&side| side > 1) {
            return Err(EvaluateError::Invalid(vec![Violation::new(
                "/solution/sides",
                format!("give 0 or 1 for each of the {} numbers", input.numbers.len()),
            )]));
        }
        let mut sums = [0.0, 0.0];
        for (number, &side) in input.numbers.iter().zip(&sides) {
            sums[usize::from(side)] += number;
        }
        Ok(Evaluation {
            objective: (sums[0] - sums[1]).abs(),
            feasible: true,
            violations: Vec::new(),
            details: serde_json::json!({ "sums": sums }),
        })
    }
}

caseload_sdk::export_use_case!(Plugin);
