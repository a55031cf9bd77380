//! `evaluate`: a plugin scores a given solution without searching (`caseload:plugin@0.2.2`).
//!
//! The export is looked for apart from the rest of the world, by its own bindings, so that a
//! component built before 0.2.2 still links and serves; it only cannot evaluate
//! ([`EvaluateError::Unsupported`]). A component built with an SDK that leaves `evaluate` to
//! its default answers the same. The call runs in the server's process under the limits of
//! `validate`: it scores one solution, it does not search.

use std::sync::Arc;

use super::{CallError, CompiledPlugin, Limits};
use crate::violation::Violation;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../sdk/wit",
        world: "plugin-evaluator",
    });
}

pub(super) use self::bindings::PluginEvaluatorPre as EvaluatorPre;
use self::bindings::exports::caseload::plugin::evaluator as wit;

/// A solution's score, as the plugin computed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The value the output schema's objective pointer points at, for this solution.
    pub objective: f64,
    /// Whether the solution keeps every rule of the input.
    pub feasible: bool,
    /// Each rule it breaks, at a pointer into `{"input": ..., "solution": ...}`.
    pub violations: Vec<Violation>,
    /// JSON: what else the use case reports of the solution, `{}` if nothing.
    pub details: String,
}

/// Why a solution was not scored.
#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    /// The component has no `evaluate` (built before 0.2.2), or answers that it does not
    /// score solutions.
    #[error("this plugin does not evaluate solutions")]
    Unsupported,
    /// The call failed: [`CallError::InvalidInput`] when the input or the solution cannot be
    /// scored as given, with pointers into `{"input": ..., "solution": ...}`.
    #[error(transparent)]
    Call(#[from] CallError),
}

impl CompiledPlugin {
    /// Whether the component exports `evaluate` (it may still answer that it is unsupported).
    pub fn has_evaluate(&self) -> bool {
        self.evaluator.is_some()
    }

    /// Calls `evaluate`: the objective and the broken rules of `solution` for `input`.
    pub fn evaluate(
        &self,
        input: &str,
        solution: &str,
        limits: &Limits,
    ) -> Result<Evaluation, EvaluateError> {
        let Some(evaluator) = &self.evaluator else {
            return Err(EvaluateError::Unsupported);
        };
        let mut call = self.call(limits, Arc::default(), None);
        let result = evaluator
            .instantiate(&mut call.store)
            .and_then(|plugin| {
                plugin
                    .caseload_plugin_evaluator()
                    .call_evaluate(&mut call.store, input, solution)
            })
            .map_err(|error| call.classify(error))?;
        match result {
            Ok(evaluation) => Ok(Evaluation {
                objective: evaluation.objective,
                feasible: evaluation.feasible,
                violations: convert(evaluation.violations),
                details: evaluation.details,
            }),
            Err(wit::EvaluateError::Unsupported) => Err(EvaluateError::Unsupported),
            Err(wit::EvaluateError::Invalid(violations)) => {
                Err(CallError::InvalidInput(convert(violations)).into())
            }
        }
    }
}

fn convert(violations: Vec<wit::Violation>) -> Vec<Violation> {
    violations
        .into_iter()
        .map(|violation| Violation::new(violation.pointer, violation.message))
        .collect()
}
