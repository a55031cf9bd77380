//! caseload-lp: linear and mixed-integer programs, solved by HiGHS inside the component.
//!
//! Input is a model as variables and sparse constraints (`schemas/lp/input.schema.json`),
//! inline or in a dataset file: MPS files (free or fixed) are read by [`mps`], CPLEX LP files
//! by [`lp_format`]. [`model::build`]
//! checks it and lays it out as HiGHS takes it; `highs` (compiled for `wasm32` only: the
//! build script compiles HiGHS with clang) solves it; the output is HiGHS's status, objective,
//! values, and for an LP the duals and reduced costs, for a MIP the gap and node count
//! (`schemas/lp/output.schema.json`).
//!
//! Built for `wasm32-wasip2` by the runtime's build script where clang for `wasm32-wasi` is
//! installed; `cargo test -p caseload-lp` runs the model and format tests natively.

mod evaluate;
#[cfg(target_family = "wasm")]
mod highs;
pub mod input;
pub mod lp_format;
pub mod model;
pub mod mps;

#[cfg(test)]
mod tests;

use caseload_sdk::{
    Describe, EvaluateError, Evaluation, RunContext, RunError, SolverReport, UseCase, Violation,
};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::input::{LpInput, Sense};
use crate::model::Model;

/// The use case.
pub struct Lp;

#[derive(Debug, Serialize)]
pub struct LpOutput {
    pub status: Status,
    /// Whether `values` satisfy every constraint and bound (within HiGHS's tolerances).
    pub feasible: bool,
    pub sense: Sense,
    /// The objective of `values`; absent when HiGHS has no solution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<f64>,
    pub values: Map<String, Value>,
    /// LPs solved to optimality: the dual value of each constraint, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duals: Option<Map<String, Value>>,
    /// LPs solved to optimality: each variable's reduced cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduced_costs: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mip: Option<MipReport>,
    pub solver: SolverReport,
}

/// HiGHS's model status, named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Optimal,
    Infeasible,
    Unbounded,
    UnboundedOrInfeasible,
    TimeLimit,
    IterationLimit,
    Interrupted,
    Unknown,
}

#[derive(Debug, Serialize)]
pub struct MipReport {
    /// The relative gap between the best solution and the best bound.
    pub gap: Option<f64>,
    pub dual_bound: Option<f64>,
    pub nodes: i64,
}

impl UseCase for Lp {
    type Input = LpInput;
    type Output = LpOutput;

    fn describe() -> Describe {
        Describe {
            name: "lp",
            version: env!("CARGO_PKG_VERSION"),
            aliases: &["mip", "milp", "highs", "urn:caseload:usecase:lp"],
            description: "Linear programs and mixed-integer linear programs, solved by HiGHS \
                          1.16 in the sandbox: inline JSON, MPS or CPLEX LP files; values, \
                          duals and reduced costs, or the MIP gap.",
            input_schema: include_str!("../../../schemas/lp/input.schema.json"),
            output_schema: include_str!("../../../schemas/lp/output.schema.json"),
            media_types: &[
                "application/json",
                mps::MEDIA_TYPE,
                lp_format::MEDIA_TYPE,
                "text/plain",
            ],
        }
    }

    fn decode(media_type: &str, data: &[u8]) -> Result<LpInput, Vec<Violation>> {
        match media_type {
            mps::MEDIA_TYPE => mps::parse(data),
            lp_format::MEDIA_TYPE => lp_format::parse(data),
            "text/plain" if looks_like_mps(data) => mps::parse(data),
            "text/plain" => lp_format::parse(data),
            other => Err(vec![Violation::new(
                "",
                format!(
                    "lp reads application/json, {} (MPS, free or fixed), {} (CPLEX LP) and \
                     text/plain (either, told apart by content) files, not {other}",
                    mps::MEDIA_TYPE,
                    lp_format::MEDIA_TYPE
                ),
            )]),
        }
    }

    fn validate(input: &LpInput) -> Result<(), Vec<Violation>> {
        model::build(input).map(|_| ())
    }

    /// `run` builds the model `validate` would, and answers its violations the same way.
    const RUN_CHECKS_INPUT: bool = true;

    /// The objective of given values, and each bound, integrality and constraint they break.
    fn evaluate(input: &LpInput, solution: &str) -> Result<Evaluation, EvaluateError> {
        evaluate::evaluate(input, solution)
    }

    fn run(input: LpInput, context: &RunContext) -> Result<LpOutput, RunError> {
        let model = model::build(&input).map_err(RunError::InvalidInput)?;
        drop(input);
        solve(&model, context)
    }
}

/// Whether a text file is MPS rather than LP: its first line that is not blank or a comment
/// opens an MPS section.
fn looks_like_mps(data: &[u8]) -> bool {
    String::from_utf8_lossy(&data[..data.len().min(4096)])
        .lines()
        .map(str::trim_end)
        .find(|line| !line.trim().is_empty() && !line.starts_with('*') && !line.starts_with('\\'))
        .and_then(|line| line.split_whitespace().next())
        .is_some_and(|word| {
            ["NAME", "ROWS", "OBJSENSE"].contains(&word.to_ascii_uppercase().as_str())
        })
}

#[cfg(target_family = "wasm")]
fn solve(model: &Model, context: &RunContext) -> Result<LpOutput, RunError> {
    use caseload_sdk::LogLevel;

    // HiGHS stops a little before the deadline, to leave time for the answer.
    let margin = (context.time_limit() / 50).min(std::time::Duration::from_millis(100));
    let stop_at = context.deadline() - margin;
    context.log(
        LogLevel::Info,
        &format!(
            "{} variables ({} integer), {} constraints, {} nonzeros, time limit {:?}",
            model.cost.len(),
            model.integer.iter().filter(|&&integer| integer).count(),
            model.row_lower.len(),
            model.nonzeros(),
            context.time_limit()
        ),
    );
    let solved = highs::solve(model, context, stop_at).map_err(RunError::Failed)?;
    let status = match solved.model_status {
        // An empty model is solved by its bounds.
        6 | 7 => Status::Optimal,
        8 => Status::Infeasible,
        9 => Status::UnboundedOrInfeasible,
        10 => Status::Unbounded,
        13 => Status::TimeLimit,
        14 => Status::IterationLimit,
        17 | 19 if context.cancelled() => Status::Interrupted,
        // The callback stopped it at the deadline.
        17 | 19 => Status::TimeLimit,
        15 | 16 => Status::Unknown,
        other => {
            return Err(RunError::Failed(format!(
                "HiGHS ended with model status {other} (an error in HiGHS)"
            )));
        }
    };
    context.log(
        LogLevel::Info,
        &format!(
            "{status:?}: objective {}, {} simplex iterations, {} MIP nodes",
            solved.objective, solved.simplex_iterations, solved.mip_nodes
        ),
    );
    let named = |names: &[String], values: &[f64]| -> Map<String, Value> {
        names
            .iter()
            .zip(values)
            // + 0.0 turns HiGHS's -0 into 0.
            .map(|(name, &value)| (name.clone(), Value::from(value + 0.0)))
            .collect()
    };
    let has_solution = solved.primal_feasible || status == Status::Optimal;
    let lp_optimal = !model.is_mip() && status == Status::Optimal && solved.dual_feasible;
    let finite = |value: f64| value.is_finite().then_some(value);
    Ok(LpOutput {
        status,
        feasible: solved.primal_feasible,
        sense: model.sense,
        objective: has_solution.then_some(solved.objective),
        values: if has_solution {
            named(&model.column_names, &solved.values)
        } else {
            Map::new()
        },
        duals: lp_optimal.then(|| named(&model.row_names, &solved.row_duals)),
        reduced_costs: lp_optimal.then(|| named(&model.column_names, &solved.reduced_costs)),
        mip: model.is_mip().then(|| MipReport {
            gap: finite(solved.mip_gap),
            dual_bound: finite(solved.mip_dual_bound),
            nodes: solved.mip_nodes,
        }),
        solver: SolverReport::new(
            if model.is_mip() {
                "HiGHS branch-and-cut"
            } else {
                "HiGHS dual simplex"
            },
            u64::try_from(solved.simplex_iterations.max(0)).unwrap_or_default(),
            solved.time_to_best.unwrap_or_else(|| context.elapsed()),
            context,
        ),
    })
}

/// Natively nothing links HiGHS: the component is what solves.
#[cfg(not(target_family = "wasm"))]
fn solve(_model: &Model, _context: &RunContext) -> Result<LpOutput, RunError> {
    Err(RunError::Failed(
        "HiGHS is compiled into the lp component only (wasm32)".into(),
    ))
}

caseload_sdk::export_use_case!(Lp);
