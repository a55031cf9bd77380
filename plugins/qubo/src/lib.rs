//! caseload-qubo: the QUBO / Ising use case as a caseload plugin.
//!
//! Input is a binary quadratic model (`schemas/qubo/input.schema.json`) as terms, a dense
//! matrix or dimod's serialized BQM, inline or in a dataset file; qbsolv `.qubo` text files
//! are read by [`qbsolv`]. Output is the best sample found and its energy, recomputed from it
//! (`schemas/qubo/output.schema.json`).
//!
//! Every form becomes a [`model::Bqm`], which [`solve`] hands to the search engine
//! (`caseload-quadratic`) as a function of 0/1 variables to minimise: a SPIN model through
//! `s = 2x - 1`, a maximisation as the negated energy. Models of up to
//! [`caseload_quadratic::EXHAUSTIVE_MAX_VARIABLES`] variables are enumerated and their answer
//! flagged optimal; larger ones get tabu search.
//!
//! Built for `wasm32-wasip2` by the host's build script; `cargo test -p caseload-qubo` runs
//! the tests natively.

mod evaluate;
mod forms;
pub mod input;
pub mod model;
pub mod qbsolv;
pub mod solve;

use caseload_sdk::{
    Describe, EvaluateError, Evaluation, LogLevel, RunContext, RunError, SolverReport, UseCase,
    Violation,
};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::input::QuboInput;
use crate::model::{Sense, Vartype};
use crate::qbsolv::QUBO_MEDIA_TYPE;

#[derive(Debug, Serialize)]
pub struct QuboOutput {
    pub energy: f64,
    pub sample: Vec<i8>,
    pub vartype: Vartype,
    pub sense: Sense,
    pub optimal: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variable_labels: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_by_label: Option<Map<String, Value>>,
    pub solver: SolverReport,
}

pub struct Qubo;

impl UseCase for Qubo {
    type Input = QuboInput;
    type Output = QuboOutput;

    fn describe() -> Describe {
        Describe {
            name: "qubo",
            version: env!("CARGO_PKG_VERSION"),
            aliases: &["ising", "bqm", "urn:caseload:usecase:qubo"],
            description: "Binary quadratic models (QUBO in 0/1 variables, Ising in -1/+1 \
                          spins), minimised or maximised: exhaustive search for up to 20 \
                          variables, tabu search above.",
            input_schema: include_str!("../../../schemas/qubo/input.schema.json"),
            output_schema: include_str!("../../../schemas/qubo/output.schema.json"),
            media_types: &["application/json", QUBO_MEDIA_TYPE, "text/plain"],
        }
    }

    fn decode(media_type: &str, data: &[u8]) -> Result<QuboInput, Vec<Violation>> {
        if media_type == QUBO_MEDIA_TYPE || media_type == "text/plain" {
            qbsolv::parse(data).map(QuboInput::Terms)
        } else {
            Err(vec![Violation::new(
                "",
                format!(
                    "qubo reads application/json and {QUBO_MEDIA_TYPE} (qbsolv) files, not \
                     {media_type}"
                ),
            )])
        }
    }

    fn validate(input: &QuboInput) -> Result<(), Vec<Violation>> {
        input::model(input).map(|_| ())
    }

    /// `run` builds the model `validate` would, and answers its violations the same way.
    const RUN_CHECKS_INPUT: bool = true;

    /// The energy of the solution's `sample` (or `sample_by_label`); every sample in the
    /// model's domain is feasible.
    fn evaluate(input: &QuboInput, solution: &str) -> Result<Evaluation, EvaluateError> {
        evaluate::evaluate(input, solution)
    }

    fn run(input: QuboInput, context: &RunContext) -> Result<QuboOutput, RunError> {
        let (model, labels) = input::model(&input).map_err(RunError::InvalidInput)?;
        let start = input.initial_sample().map(<[i8]>::to_vec);
        drop(input);
        context.log(
            LogLevel::Info,
            &format!(
                "{} variables, {} quadratic terms, {:?}, {:?}, time limit {:?}, seed {}",
                model.num_variables,
                model.quadratic.len(),
                model.vartype,
                model.sense,
                context.time_limit(),
                context.seed()
            ),
        );
        let solved = solve::solve(&model, start.as_deref(), context);
        // The reported energy is recomputed from the sample, in the model's own terms.
        let energy = model.energy(&solved.sample);
        context.log(
            LogLevel::Info,
            &format!(
                "{}: energy {energy} after {} iterations",
                solved.algorithm, solved.iterations
            ),
        );
        let sample_by_label = labels.as_ref().map(|labels| {
            labels
                .iter()
                .zip(&solved.sample)
                .map(|(label, &value)| {
                    let key = match label {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    (key, Value::from(value))
                })
                .collect()
        });
        Ok(QuboOutput {
            energy,
            vartype: model.vartype,
            sense: model.sense,
            optimal: solved.optimal,
            sample: solved.sample,
            variable_labels: labels,
            sample_by_label,
            solver: SolverReport::new(
                solved.algorithm,
                solved.iterations,
                solved.time_to_best,
                context,
            ),
        })
    }
}

caseload_sdk::export_use_case!(Qubo);
