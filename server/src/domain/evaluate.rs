//! An evaluate-only run: a use case scores a given solution for an input without searching
//! (`POST /problem/<id>/evaluate`), so a planner can score a hand-made plan, or a client
//! re-check an answer. The input is inline (`input`) or a data file of the caller's
//! (`data_file_identifier`), checked as a launch's is (the schema, then `validate`); the
//! solution is the use case's output, or the part of it that decides the objective. Nothing
//! is stored: the call runs under the submission-time limits and permits, as `validate` does.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::ApiError;
use super::error::invalid;
use super::launch::{call_error, dataset_file, dataset_text};
use crate::auth::AuthUser;
use crate::objective::Sense;
use crate::plugins::Plugin;
use crate::runtime::{CallError, EvaluateError, Evaluation};
use crate::state::Services;
use crate::violation::Violation;

/// A solution's score, with the sense its objective is optimized in, where the use case
/// declares one.
#[derive(Debug, Clone)]
pub struct Scored {
    pub evaluation: Evaluation,
    /// The evaluation's details, read: a JSON object.
    pub details: Value,
    pub sense: Option<Sense>,
}

/// Scores the body's `solution` for its input (`input`, or `data_file_identifier` and the
/// use case's dataset parameters beside it in `input`).
pub async fn evaluate(
    state: &Services,
    user: &AuthUser,
    plugin: &Arc<Plugin>,
    mut body: Map<String, Value>,
) -> Result<Scored, ApiError> {
    if !plugin.component.has_evaluate() {
        return Err(not_implemented(plugin));
    }
    let unknown: Vec<Violation> = body
        .keys()
        .filter(|key| !matches!(key.as_str(), "input" | "solution" | "data_file_identifier"))
        .map(|key| {
            Violation::new(
                format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                "not a field of an evaluation: give input (or data_file_identifier) and solution",
            )
        })
        .collect();
    if !unknown.is_empty() {
        return Err(invalid(
            "the body has fields an evaluation does not take",
            unknown,
        ));
    }
    let Some(solution) = body.remove("solution") else {
        return Err(invalid(
            "the body has no solution to evaluate",
            vec![Violation::new(
                "",
                "give solution: the use case's output, or the part of it that decides the objective",
            )],
        ));
    };
    let input = match (body.remove("input"), body.remove("data_file_identifier")) {
        (Some(Value::Object(input)), None) => Value::Object(input),
        (Some(_), None) => {
            return Err(invalid(
                "input must be an object",
                vec![Violation::new(
                    "/input",
                    "must be an object: the use case's input",
                )],
            ));
        }
        (parameters, Some(identifier)) => {
            let parameters = match parameters {
                None => Map::new(),
                Some(Value::Object(parameters)) => parameters,
                Some(_) => {
                    return Err(invalid(
                        "input must be an object",
                        vec![Violation::new(
                            "/input",
                            "beside data_file_identifier, input holds the use case's dataset \
                             parameters only",
                        )],
                    ));
                }
            };
            dataset_input(state, user, plugin, &identifier, parameters).await?
        }
        (None, None) => {
            return Err(invalid(
                "the body has no input",
                vec![Violation::new(
                    "",
                    "give input (the use case's input) or data_file_identifier (a data file's id)",
                )],
            ));
        }
    };

    let checked = plugin.clone();
    let (input, violations) = state
        .run_blocking(move || {
            let violations = checked.input_violations(&input);
            (input.to_string(), violations)
        })
        .await?;
    let under_input = |violations: Vec<Violation>| -> Vec<Violation> {
        violations
            .into_iter()
            .map(|violation| {
                Violation::new(format!("/input{}", violation.pointer), violation.message)
            })
            .collect()
    };
    if !violations.is_empty() {
        return Err(invalid(
            "the input does not match the use case's schema",
            under_input(violations),
        ));
    }
    // Then the use case's own checks, as a launch's: `evaluate` may count on them.
    let checking = plugin.clone();
    let limits = state.submission_limits(&plugin.info.name, None);
    let (input, checked) = state
        .run_blocking(move || {
            let checked = checking.component.validate(&input, &limits);
            (input, checked)
        })
        .await?;
    match checked {
        Ok(()) => {}
        Err(CallError::InvalidInput(violations)) => {
            return Err(invalid(
                "the input is not valid for this use case",
                under_input(violations),
            ));
        }
        Err(error) => {
            return Err(call_error(
                "the input is not valid for this use case",
                "validating the input",
                error,
            ));
        }
    }

    let solution_text = solution.to_string();
    let scoring = plugin.clone();
    let limits = state.submission_limits(&plugin.info.name, None);
    let result = state
        .run_blocking(move || scoring.component.evaluate(&input, &solution_text, &limits))
        .await?;
    match result {
        Ok(evaluation) if !evaluation.objective.is_finite() => Err(ApiError::Internal(format!(
            "{} evaluated a solution to the objective {}, which is not a number",
            plugin.info.name, evaluation.objective
        ))),
        Ok(evaluation) => {
            let details = match serde_json::from_str(&evaluation.details) {
                Ok(details @ Value::Object(_)) => details,
                _ => {
                    return Err(ApiError::Internal(format!(
                        "{}'s evaluate answered details that are not a JSON object",
                        plugin.info.name
                    )));
                }
            };
            // Where the sense is in the output, the use case's details say it (the solution,
            // which the caller wrote, only if they do not).
            let sense = plugin.objective.as_ref().and_then(|objective| {
                objective
                    .sense_of(&details)
                    .or_else(|| objective.sense_of(&solution))
            });
            Ok(Scored {
                evaluation,
                details,
                sense,
            })
        }
        Err(EvaluateError::Unsupported) => Err(not_implemented(plugin)),
        Err(EvaluateError::Call(CallError::InvalidInput(violations))) => Err(invalid(
            "the solution cannot be evaluated for this input",
            violations,
        )),
        Err(EvaluateError::Call(error)) => Err(call_error(
            "the solution cannot be evaluated for this input",
            "evaluating the solution",
            error,
        )),
    }
}

fn not_implemented(plugin: &Plugin) -> ApiError {
    ApiError::NotImplemented(format!(
        "{} {} does not evaluate solutions: its component was built before \
         caseload:plugin@0.2.2, or leaves evaluate to its SDK's default",
        plugin.info.name, plugin.info.version
    ))
}

/// A data file as the use case's input, with the dataset parameters given beside it.
async fn dataset_input(
    state: &Services,
    user: &AuthUser,
    plugin: &Arc<Plugin>,
    identifier: &Value,
    parameters: Map<String, Value>,
) -> Result<Value, ApiError> {
    let unknown: Vec<Violation> = parameters
        .keys()
        .filter(|key| !plugin.dataset_parameters.contains(key))
        .map(|key| {
            Violation::new(
                format!("/input/{}", key.replace('~', "~0").replace('/', "~1")),
                "not one of the use case's dataset parameters, which alone may stand beside \
                 data_file_identifier",
            )
        })
        .collect();
    if !unknown.is_empty() {
        return Err(invalid(
            "beside data_file_identifier, input holds the use case's dataset parameters only",
            unknown,
        ));
    }
    let file = dataset_file(state, user, identifier).await?;
    let text = dataset_text(state, plugin, &file, &parameters).await?;
    serde_json::from_str(&text).map_err(|error| {
        invalid(
            "the dataset is not valid JSON",
            vec![Violation::new("/data_file_identifier", error.to_string())],
        )
    })
}
