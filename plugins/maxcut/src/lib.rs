//! caseload-maxcut: the max-cut use case as a caseload plugin.
//!
//! Input is a weighted undirected graph (`schemas/maxcut/input.schema.json`); output is a
//! partition of the nodes into two sides and the weight of the edges it cuts
//! (`schemas/maxcut/output.schema.json`). Graphs of up to [`solver::EXHAUSTIVE_MAX_NODES`]
//! nodes are solved exactly by enumeration; larger ones by a tabu local search that returns the
//! best cut found within the job's time limit.
//!
//! Built for `wasm32-wasip2` by the host's build script; `cargo test -p caseload-maxcut` runs
//! the solver's tests natively.

pub mod graph;
pub mod solver;

use caseload_sdk::{Describe, LogLevel, RunContext, RunError, UseCase, Violation};
use serde::{Deserialize, Serialize};

use crate::graph::Graph;
use crate::solver::{Solution, SolveLimits};

/// At most this many violations are reported for one input; a client fixing a broken matrix
/// needs the first few, not a million.
const MAX_VIOLATIONS: usize = 100;

/// The inline input, as `schemas/maxcut/input.schema.json` describes it.
#[derive(Debug, Deserialize)]
pub struct MaxCutInput {
    pub num_nodes: usize,
    pub adj_matrix: Vec<Vec<f64>>,
}

#[derive(Debug, Serialize)]
pub struct MaxCutOutput {
    pub cut_value: f64,
    pub partition: Vec<u8>,
    pub optimal: bool,
    pub solver: SolverReport,
}

#[derive(Debug, Serialize)]
pub struct SolverReport {
    pub algorithm: &'static str,
    pub seed: u64,
    pub iterations: u64,
    pub time_to_best_s: f64,
    pub elapsed_s: f64,
}

pub struct MaxCut;

impl UseCase for MaxCut {
    type Input = MaxCutInput;
    type Output = MaxCutOutput;

    fn describe() -> Describe {
        Describe {
            name: "maxcut",
            version: env!("CARGO_PKG_VERSION"),
            aliases: &["max-cut", "urn:caseload:usecase:maxcut"],
            description: "Maximum cut of a weighted undirected graph: exact for up to 24 nodes, \
                          tabu local search above.",
            input_schema: include_str!("../../../schemas/maxcut/input.schema.json"),
            output_schema: include_str!("../../../schemas/maxcut/output.schema.json"),
            media_types: &["application/json"],
        }
    }

    fn validate(input: &MaxCutInput) -> Result<(), Vec<Violation>> {
        let violations = matrix_violations(input);
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    fn run(input: MaxCutInput, context: &RunContext) -> Result<MaxCutOutput, RunError> {
        let graph = Graph::from_dense(&input.adj_matrix);
        let limits = SolveLimits {
            deadline: context.deadline(),
            max_iterations: context.max_iterations(),
            seed: context.seed(),
        };
        context.log(
            LogLevel::Info,
            &format!(
                "{} nodes, {} edges, time limit {:?}, seed {}",
                graph.num_nodes(),
                graph.num_edges(),
                context.time_limit(),
                context.seed()
            ),
        );
        let solution = solver::solve(&graph, &limits, &mut |best_cut, fraction| {
            context.progress(fraction, &format!("best cut so far: {best_cut}"));
            context.cancelled()
        });
        let output = output_from(&graph, solution, context);
        context.log(
            LogLevel::Info,
            &format!(
                "{}: cut {} after {} iterations",
                output.solver.algorithm, output.cut_value, output.solver.iterations
            ),
        );
        Ok(output)
    }
}

fn output_from(graph: &Graph, solution: Solution, context: &RunContext) -> MaxCutOutput {
    // The reported value is recomputed from the partition, never carried over from the
    // incremental bookkeeping, so that it is exactly the cut of the partition returned.
    let cut_value = graph.cut_value(&solution.sides);
    MaxCutOutput {
        cut_value,
        partition: solution.sides.iter().map(|&side| u8::from(side)).collect(),
        optimal: solution.optimal,
        solver: SolverReport {
            algorithm: solution.algorithm,
            seed: context.seed(),
            iterations: solution.iterations,
            time_to_best_s: solution.time_to_best.as_secs_f64(),
            elapsed_s: context.elapsed().as_secs_f64(),
        },
    }
}

/// The checks the schema cannot express: the matrix is `num_nodes` by `num_nodes`, finite and
/// symmetric.
fn matrix_violations(input: &MaxCutInput) -> Vec<Violation> {
    let mut violations = Vec::new();
    let n = input.num_nodes;
    let matrix = &input.adj_matrix;
    if matrix.len() != n {
        violations.push(Violation::new(
            "/adj_matrix",
            format!("has {} rows, expected num_nodes = {n}", matrix.len()),
        ));
    }
    for (i, row) in matrix.iter().enumerate() {
        if row.len() != n {
            violations.push(Violation::new(
                format!("/adj_matrix/{i}"),
                format!("has {} entries, expected num_nodes = {n}", row.len()),
            ));
        }
        for (j, weight) in row.iter().enumerate() {
            if !weight.is_finite() {
                violations.push(Violation::new(
                    format!("/adj_matrix/{i}/{j}"),
                    "must be a finite number",
                ));
            }
        }
    }
    // Symmetry is checked only where both entries exist; the shape errors above say the rest.
    for (i, row) in matrix.iter().enumerate() {
        for (j, weight) in row.iter().enumerate().skip(i + 1) {
            let Some(mirror) = matrix.get(j).and_then(|other| other.get(i)) else {
                continue;
            };
            if weight != mirror && weight.is_finite() && mirror.is_finite() {
                violations.push(Violation::new(
                    format!("/adj_matrix/{i}/{j}"),
                    format!("is {weight} but /adj_matrix/{j}/{i} is {mirror}; the matrix must be symmetric"),
                ));
            }
        }
    }
    if violations.len() > MAX_VIOLATIONS {
        let more = violations.len() - MAX_VIOLATIONS;
        violations.truncate(MAX_VIOLATIONS);
        violations.push(Violation::new(
            "/adj_matrix",
            format!("{more} more violations not listed"),
        ));
    }
    violations
}

caseload_sdk::export_use_case!(MaxCut);

#[cfg(test)]
mod tests {
    use super::*;

    fn check(num_nodes: usize, adj_matrix: Vec<Vec<f64>>, expected_pointers: &[&str]) {
        let input = MaxCutInput {
            num_nodes,
            adj_matrix,
        };
        let pointers: Vec<String> = matrix_violations(&input)
            .into_iter()
            .map(|violation| violation.pointer)
            .collect();
        assert_eq!(pointers, expected_pointers);
    }

    #[test]
    fn validation_finds_every_violation() {
        check(2, vec![vec![0.0, 1.0], vec![1.0, 0.0]], &[]);
        check(
            3,
            vec![vec![0.0, 1.0], vec![1.0, 0.0]],
            &["/adj_matrix", "/adj_matrix/0", "/adj_matrix/1"],
        );
        check(
            2,
            vec![vec![0.0, 1.0, 2.0], vec![1.0, 0.0]],
            &["/adj_matrix/0"],
        );
        check(
            2,
            vec![vec![0.0, 1.0], vec![2.0, 0.0]],
            &["/adj_matrix/0/1"],
        );
        check(
            2,
            vec![vec![0.0, f64::NAN], vec![1.0, 0.0]],
            &["/adj_matrix/0/1"],
        );
    }

    #[test]
    fn run_reports_recomputed_cut_and_partition() {
        let five_cycle: Vec<Vec<f64>> = (0..5)
            .map(|i| {
                (0..5)
                    .map(|j| {
                        if (i + 1) % 5 == j || (j + 1) % 5 == i {
                            1.0
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        let input = MaxCutInput {
            num_nodes: 5,
            adj_matrix: five_cycle,
        };
        let context = RunContext::new(std::time::Duration::from_secs(5), 7, None);
        let output = MaxCut::run(input, &context).expect("solves");
        assert_eq!(output.cut_value, 4.0);
        assert!(output.optimal);
        assert_eq!(output.partition.len(), 5);
        assert_eq!(output.solver.seed, 7);
    }
}
