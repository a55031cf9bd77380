//! caseload-maxcut: the max-cut use case as a caseload plugin.
//!
//! Input is a weighted undirected graph (`schemas/maxcut/input.schema.json`), as an adjacency
//! matrix or an edge list, inline or in a dataset file; G-set text files are read by
//! [`rudy`]. Output is a partition of the nodes into two sides and the weight of the edges it
//! cuts (`schemas/maxcut/output.schema.json`).
//!
//! [`solver::solve`] first takes out nodes of degree at most two by exact reductions
//! ([`reduce`]). A kernel of up to [`exhaustive::EXHAUSTIVE_MAX_NODES`] nodes is enumerated
//! and its cut reported optimal; a larger dense one ([`solver::TABU_MIN_DENSITY`]) gets tabu
//! search by the engine shared with the QUBO use case (`caseload-quadratic`), others parallel
//! tempering ([`tempering`]) or, past [`solver::TEMPERING_MAX_NODES`] nodes, population
//! annealing ([`anneal`]). Each returns the best cut found within the job's time limit.
//!
//! Built for `wasm32-wasip2` by the host's build script; `cargo test -p caseload-maxcut` runs
//! the solver's tests natively.

pub mod anneal;
mod clock;
mod evaluate;
pub mod exhaustive;
pub mod graph;
mod metropolis;
pub mod reduce;
pub mod rudy;
pub mod solution;
pub mod solver;
#[cfg(test)]
mod solver_tests;
pub mod tempering;
pub mod weight;

use caseload_sdk::{
    Describe, EvaluateError, Evaluation, LogLevel, RunContext, RunError, SolverReport, UseCase,
    Violation,
};
use serde::{Deserialize, Serialize};

use crate::graph::Graph;
use caseload_quadratic::Limits;

use crate::solution::Solution;

/// At most this many violations are reported for one input; a client fixing a broken matrix
/// needs the first few, not a million.
const MAX_VIOLATIONS: usize = 100;

/// The input, as `schemas/maxcut/input.schema.json` describes it: the graph as exactly one of
/// a dense adjacency matrix or a list of edges.
#[derive(Debug, Deserialize, Serialize)]
pub struct MaxCutInput {
    pub num_nodes: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adj_matrix: Option<Vec<Vec<f64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<Vec<Edge>>,
    /// A partition to start from (a warm start: `options.warm_start` puts an earlier job's
    /// here); the answer is never a smaller cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_partition: Option<Vec<u8>>,
}

/// An undirected edge `(i, j, weight)` between 0-based nodes.
pub type Edge = (usize, usize, f64);

/// The media type of G-set (rudy) text files.
pub const RUDY_MEDIA_TYPE: &str = "text/plain";

#[derive(Debug, Serialize)]
pub struct MaxCutOutput {
    pub cut_value: f64,
    pub partition: Vec<u8>,
    pub optimal: bool,
    pub solver: SolverReport,
}

pub struct MaxCut;

/// The input's graph, from its matrix or its edges.
fn graph_of(input: &MaxCutInput) -> Result<Graph, Vec<Violation>> {
    match (&input.adj_matrix, &input.edges) {
        (Some(matrix), _) => Ok(Graph::from_dense(matrix)),
        (None, Some(edges)) => Ok(Graph::from_edges(input.num_nodes, edges)),
        (None, None) => Err(vec![Violation::new(
            "",
            "the graph needs adj_matrix or edges",
        )]),
    }
}

impl UseCase for MaxCut {
    type Input = MaxCutInput;
    type Output = MaxCutOutput;

    fn describe() -> Describe {
        Describe {
            name: "maxcut",
            version: env!("CARGO_PKG_VERSION"),
            aliases: &["max-cut", "urn:caseload:usecase:maxcut"],
            description: "Maximum cut of a weighted undirected graph: exact reductions, then \
                          exhaustive search for up to 24 nodes, tabu search on dense graphs, \
                          parallel tempering or population annealing on the others.",
            input_schema: include_str!("../../../schemas/maxcut/input.schema.json"),
            output_schema: include_str!("../../../schemas/maxcut/output.schema.json"),
            media_types: &["application/json", RUDY_MEDIA_TYPE],
        }
    }

    fn decode(media_type: &str, data: &[u8]) -> Result<MaxCutInput, Vec<Violation>> {
        if media_type == RUDY_MEDIA_TYPE {
            rudy::parse(data)
        } else {
            Err(vec![Violation::new(
                "",
                format!(
                    "max-cut reads application/json and {RUDY_MEDIA_TYPE} (G-set) files, not {media_type}"
                ),
            )])
        }
    }

    fn validate(input: &MaxCutInput) -> Result<(), Vec<Violation>> {
        let violations = input_violations(input);
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    /// The cut of the solution's `partition`; every partition is feasible.
    fn evaluate(input: &MaxCutInput, solution: &str) -> Result<Evaluation, EvaluateError> {
        evaluate::evaluate(input, solution)
    }

    fn run(input: MaxCutInput, context: &RunContext) -> Result<MaxCutOutput, RunError> {
        let graph = graph_of(&input).map_err(RunError::InvalidInput)?;
        let limits = Limits {
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
        let start: Option<Vec<bool>> = input
            .initial_partition
            .as_ref()
            .map(|partition| partition.iter().map(|&side| side == 1).collect());
        if let Some(start) = &start {
            context.log(
                LogLevel::Info,
                &format!("warm start from a cut of {}", graph.cut_value(start)),
            );
        }
        let (solution, kernel) =
            solver::solve(&graph, start.as_deref(), &limits, &mut |snapshot| {
                let cut_value = snapshot.best;
                context.progress(snapshot.fraction, &format!("best cut so far: {cut_value}"));
                context.incumbent(cut_value, || Incumbent {
                    cut_value,
                    partition: (snapshot.solution)().into_iter().map(u8::from).collect(),
                });
                context.cancelled()
            });
        context.log(
            LogLevel::Info,
            &format!(
                "reductions left a kernel of {} nodes and {} edges",
                kernel.nodes, kernel.edges
            ),
        );
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

/// An incumbent as max-cut reports it: the output's cut and partition, which its view draws.
#[derive(Serialize)]
struct Incumbent {
    cut_value: f64,
    partition: Vec<u8>,
}

fn output_from(graph: &Graph, solution: Solution, context: &RunContext) -> MaxCutOutput {
    // The reported value is recomputed from the partition, never carried over from the
    // incremental bookkeeping, so that it is exactly the cut of the partition returned.
    let cut_value = graph.cut_value(&solution.sides);
    MaxCutOutput {
        cut_value,
        partition: solution.sides.iter().map(|&side| u8::from(side)).collect(),
        optimal: solution.optimal,
        solver: SolverReport::new(
            solution.algorithm,
            solution.iterations,
            solution.time_to_best,
            context,
        ),
    }
}

/// The checks the schema cannot express, for whichever form the graph came in.
fn input_violations(input: &MaxCutInput) -> Vec<Violation> {
    if let Some(too_large) = size_violation(input) {
        return vec![too_large];
    }
    let mut violations = match (&input.adj_matrix, &input.edges) {
        (Some(matrix), None) => matrix_violations(input.num_nodes, matrix),
        (None, Some(edges)) => edge_violations(input.num_nodes, edges),
        _ => vec![Violation::new(
            "",
            "give the graph as exactly one of adj_matrix or edges",
        )],
    };
    if violations.is_empty()
        && let Some(overflow) = weight_total_violation(input)
    {
        violations.push(overflow);
    }
    if let Some(partition) = &input.initial_partition
        && partition.len() != input.num_nodes
    {
        violations.push(Violation::new(
            "/initial_partition",
            format!(
                "has {} sides for {} nodes: give one 0 or 1 per node",
                partition.len(),
                input.num_nodes
            ),
        ));
    }
    if violations.len() > MAX_VIOLATIONS {
        let more = violations.len() - MAX_VIOLATIONS;
        violations.truncate(MAX_VIOLATIONS);
        violations.push(Violation::new(
            "",
            format!("{more} more violations not listed"),
        ));
    }
    violations
}

/// What solving takes beyond the parsed input, per node and per edge, measured on the
/// sandboxed build with room to spare: a 2,000,000-node graph without edges peaked at 88
/// bytes a node, 1,000,000 edges among 1,000 nodes at 62 bytes an edge, and a 1,000,000-node
/// path (reductions at work) at 261 bytes a node and edge together.
const BYTES_PER_NODE: usize = 160;
const BYTES_PER_EDGE: usize = 100;

/// A graph too large to solve within the job's memory (or to number with 32 bits) is refused
/// at submission, at `/num_nodes`, instead of failing at run time.
fn size_violation(input: &MaxCutInput) -> Option<Violation> {
    let nodes = input.num_nodes;
    if u32::try_from(nodes).is_err() {
        return Some(Violation::new(
            "/num_nodes",
            format!(
                "{nodes} nodes are more than the {} this use case takes",
                u32::MAX
            ),
        ));
    }
    let edges = input.edges.as_ref().map_or(0, Vec::len);
    // In u64: a wasm32 `usize` would saturate at 4 GiB and understate the need.
    let needed = (nodes as u64)
        .saturating_mul(BYTES_PER_NODE as u64)
        .saturating_add((edges as u64).saturating_mul(BYTES_PER_EDGE as u64));
    if caseload_sdk::memory::fits(usize::try_from(needed).unwrap_or(usize::MAX)) {
        return None;
    }
    Some(Violation::new(
        "/num_nodes",
        format!(
            "{nodes} nodes and {edges} edges need about {} MiB to solve, more than this job's \
             memory limit holds (GET /problem/maxcut shows the use case's; a job's \
             memory_limit_mib can only lower it)",
            needed.div_ceil(1 << 20)
        ),
    ))
}

/// The weights' absolute values must add up to a finite number, or a cut's value could
/// overflow to infinity; such a graph is refused at submission rather than failing at the end.
fn weight_total_violation(input: &MaxCutInput) -> Option<Violation> {
    let (pointer, total) = match (&input.adj_matrix, &input.edges) {
        (Some(matrix), _) => (
            "/adj_matrix",
            matrix
                .iter()
                .flatten()
                .map(|weight| weight.abs())
                .sum::<f64>(),
        ),
        (None, Some(edges)) => (
            "/edges",
            edges
                .iter()
                .map(|&(_, _, weight)| weight.abs())
                .sum::<f64>(),
        ),
        (None, None) => return None,
    };
    (!total.is_finite()).then(|| {
        Violation::new(
            pointer,
            "the weights' absolute values add up beyond the largest number (about 1.8e308), \
             so cut values would overflow; scale the weights down",
        )
    })
}

/// Every edge joins two nodes below `num_nodes` with a finite weight. Self-loops are allowed
/// and ignored, as the matrix's diagonal is: they never cross a cut.
fn edge_violations(num_nodes: usize, edges: &[Edge]) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (index, &(i, j, weight)) in edges.iter().enumerate() {
        for (position, node) in [(0, i), (1, j)] {
            if node >= num_nodes {
                violations.push(Violation::new(
                    format!("/edges/{index}/{position}"),
                    format!(
                        "node {node} does not exist: nodes are numbered 0 to {}",
                        num_nodes - 1
                    ),
                ));
            }
        }
        if !weight.is_finite() {
            violations.push(Violation::new(
                format!("/edges/{index}/2"),
                "must be a finite number",
            ));
        }
        if violations.len() > MAX_VIOLATIONS {
            break;
        }
    }
    violations
}

/// The matrix is `num_nodes` by `num_nodes`, finite and symmetric.
fn matrix_violations(n: usize, matrix: &[Vec<f64>]) -> Vec<Violation> {
    let mut violations = Vec::new();
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
    violations
}

caseload_sdk::export_use_case!(MaxCut);

#[cfg(test)]
mod tests {
    use super::*;

    fn check(num_nodes: usize, adj_matrix: Vec<Vec<f64>>, expected_pointers: &[&str]) {
        let input = MaxCutInput {
            num_nodes,
            adj_matrix: Some(adj_matrix),
            edges: None,
            initial_partition: None,
        };
        let pointers: Vec<String> = input_violations(&input)
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
    fn validation_checks_edges_and_the_form() {
        let edges = |edges: Vec<Edge>| MaxCutInput {
            num_nodes: 3,
            adj_matrix: None,
            edges: Some(edges),
            initial_partition: None,
        };
        let pointers = |input: &MaxCutInput| -> Vec<String> {
            input_violations(input)
                .into_iter()
                .map(|violation| violation.pointer)
                .collect()
        };
        assert!(pointers(&edges(vec![(0, 1, 1.0), (2, 2, 5.0)])).is_empty());
        assert_eq!(
            pointers(&edges(vec![(0, 3, 1.0), (4, 1, f64::INFINITY)])),
            ["/edges/0/1", "/edges/1/0", "/edges/1/2"]
        );
        let both = MaxCutInput {
            num_nodes: 1,
            adj_matrix: Some(vec![vec![0.0]]),
            edges: Some(Vec::new()),
            initial_partition: None,
        };
        assert_eq!(pointers(&both), [""]);
    }

    #[test]
    fn a_gset_file_and_its_matrix_give_the_same_cut() {
        // A 6-cycle with the chord 1-3, in G-set form: the chord closes a triangle, so one of
        // the 7 edges stays uncut and the maximum cut is 6. Small enough to be solved exactly.
        let text = "6 7\n1 2 1\n2 3 1\n3 4 1\n4 5 1\n5 6 1\n6 1 1\n1 3 1\n";
        let from_text = MaxCut::decode(RUDY_MEDIA_TYPE, text.as_bytes()).expect("decodes");
        let mut matrix = vec![vec![0.0; 6]; 6];
        for &(i, j, weight) in from_text.edges.as_deref().unwrap_or_default() {
            matrix[i][j] = weight;
            matrix[j][i] = weight;
        }
        let from_matrix = MaxCutInput {
            num_nodes: 6,
            adj_matrix: Some(matrix),
            edges: None,
            initial_partition: None,
        };
        let context = RunContext::new(std::time::Duration::from_secs(5), 1, None);
        let a = MaxCut::run(from_text, &context).expect("solves");
        let b = MaxCut::run(from_matrix, &context).expect("solves");
        assert_eq!(a.cut_value, 6.0);
        assert_eq!(b.cut_value, 6.0);
        assert!(MaxCut::decode("text/csv", b"").is_err());
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
            adj_matrix: Some(five_cycle),
            edges: None,
            initial_partition: None,
        };
        let context = RunContext::new(std::time::Duration::from_secs(5), 7, None);
        let output = MaxCut::run(input, &context).expect("solves");
        assert_eq!(output.cut_value, 4.0);
        assert!(output.optimal);
        assert_eq!(output.partition.len(), 5);
        assert_eq!(output.solver.seed, 7);
    }
}
