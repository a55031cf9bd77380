//! The `solver` block of an optimisation use case's output: how the answer was found.

use std::time::Duration;

use serde::Serialize;

use crate::RunContext;

/// What the built-in use cases report under `solver`, for a client comparing runs: the
/// algorithm, the seed that repeats the run, the work done, and when the answer was found.
///
/// A run on an iteration budget (`max_iterations`) is reproducible to the byte: the same
/// seed and budget give the same output. Its report leaves out the wall-clock times, the one
/// thing no rerun repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolverReport {
    pub algorithm: &'static str,
    pub seed: u64,
    pub iterations: u64,
    /// Seconds from the solver's start to the answer returned; not on an iteration budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_to_best_s: Option<f64>,
    /// Seconds from the run's start to this report; not on an iteration budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
}

impl SolverReport {
    /// A report made as the run ends: the seed and the elapsed time from the context.
    pub fn new(
        algorithm: &'static str,
        iterations: u64,
        time_to_best: Duration,
        context: &RunContext,
    ) -> SolverReport {
        let timed = context.max_iterations().is_none();
        SolverReport {
            algorithm,
            seed: context.seed(),
            iterations,
            time_to_best_s: timed.then_some(time_to_best.as_secs_f64()),
            elapsed_s: timed.then(|| context.elapsed().as_secs_f64()),
        }
    }
}
