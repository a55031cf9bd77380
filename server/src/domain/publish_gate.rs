//! `POST /plugins?gate=<template>`: a new version is stored, then promoted only if an
//! experiment against the current version, on the template's inputs and seeds, finds it
//! losing on none (ties allowed) and failing on none, and, where the current version has
//! `evaluate`, each of its answers scores to the objective it reports. Otherwise it stays
//! stored, not current, and the answer names the experiment that refused it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ApiError;
use super::audit::registry_actor;
use super::error::invalid;
use super::evaluate::evaluate;
use super::experiment_summary::VERSION_LABEL;
use super::experiments::{ExperimentRequest, Summarized, launch, parse_fields, summary};
use super::rerun::input_fields;
use crate::auth::AuthUser;
use crate::plugins::Plugin;
use crate::state::Services;
use crate::store::{JobOutput, JobStatus};
use crate::violation::Violation;

/// How long a publish waits for its gate's experiment. A gate that has not finished by then
/// leaves the version stored, not current: its experiment can be read, and the version
/// promoted by hand (`PUT /problem/<id>/current`).
pub const GATE_WAIT: Duration = Duration::from_secs(600);

/// How often the gate looks at its experiment.
const POLL: Duration = Duration::from_millis(50);

/// Reads the `gate` parameter: the JSON of an experiment without its problem and versions
/// (`{"inputs": [...], "seeds": [...], "options": {...}}`).
pub fn parse_gate(gate: &str) -> Result<ExperimentRequest, ApiError> {
    let value: Value = serde_json::from_str(gate).map_err(|error| {
        invalid(
            "gate must be an experiment template in JSON",
            vec![Violation::new(
                "/gate",
                format!("{{\"inputs\": [...], \"seeds\": [...]}} expected: {error}"),
            )],
        )
    })?;
    let Value::Object(fields) = value else {
        return Err(invalid(
            "gate must be a JSON object",
            vec![Violation::new("/gate", "must be an object")],
        ));
    };
    if let Some(key) = ["problem", "versions"]
        .iter()
        .find(|key| fields.contains_key(**key))
    {
        return Err(invalid(
            "a gate compares the published version with the current one",
            vec![Violation::new(
                format!("/gate/{key}"),
                "a gate names no use case or versions: they are the plugin's",
            )],
        ));
    }
    parse_fields(fields, false)
}

/// What a gate decided: promoted or not, against which version, on what record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateVerdict {
    /// Its experiment; none if the experiment could not be launched (`reason` says why).
    pub experiment: Option<String>,
    /// Promoted: it lost on no input and failed on none.
    pub passed: bool,
    /// The version it was compared against.
    pub against: String,
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
    pub failures: usize,
    /// Why it was not promoted, if it was not.
    pub reason: Option<String>,
}

/// Runs the gate: an experiment of `current` against `candidate`, waited for; promotes the
/// candidate if it passed.
pub async fn run_gate(
    state: &Services,
    user: &AuthUser,
    template: &ExperimentRequest,
    current: &Arc<Plugin>,
    candidate: &Arc<Plugin>,
) -> Result<GateVerdict, ApiError> {
    let request = ExperimentRequest {
        problem: current.info.name.clone(),
        versions: vec![current.digest.clone()],
        ..template.clone()
    };
    let record = match launch(state, user, &request, Some(candidate.clone()), None).await {
        Ok(record) => record,
        // The version is stored; what kept its experiment from running is the answer.
        Err(
            error @ (ApiError::Validation { .. }
            | ApiError::NotFound(_)
            | ApiError::PendingJobsQuota(_)),
        ) => return Ok(refused_before_running(current, &error)),
        Err(error) => return Err(error),
    };
    let started = Instant::now();
    let Summarized {
        definition,
        summary: experiment,
        ..
    } = loop {
        let summarized = summary(state, user, &record.id).await?;
        if summarized.summary.progress.done || started.elapsed() >= GATE_WAIT {
            break summarized;
        }
        tokio::time::sleep(POLL).await;
    };
    let challenger = experiment.versions.last().ok_or_else(|| {
        ApiError::Internal(format!("gate experiment {} has no versions", record.id))
    })?;
    let inputs = experiment.inputs.len();
    let reason = if !experiment.progress.done {
        Some(format!(
            "its experiment did not finish within {} s",
            GATE_WAIT.as_secs()
        ))
    } else if challenger.losses > 0 {
        Some(format!(
            "it lost on {} of {inputs} inputs",
            challenger.losses
        ))
    } else if challenger.failures > 0 {
        Some(format!("{} of its runs failed", challenger.failures))
    } else if challenger.compared_inputs < inputs {
        Some(format!(
            "only {} of {inputs} inputs could be compared (runs of the current version failed \
             or were cancelled)",
            challenger.compared_inputs
        ))
    } else {
        let label = definition
            .versions
            .last()
            .map_or(String::new(), |version| version.version.clone());
        misreported(state, user, &record.id, &label, current).await?
    };
    // Promoted only over the version it was compared with: another promoted meanwhile was
    // not tested against.
    let reason = match reason {
        None => {
            state.plugins.sync().await?;
            match state.registry.resolve(&candidate.info.name) {
                Some(now) if now.digest != current.digest => Some(format!(
                    "the current version changed to {} while the gate ran",
                    now.info.version
                )),
                _ => None,
            }
        }
        reason => reason,
    };
    let passed = reason.is_none();
    if passed {
        let target = format!("{} {}", candidate.info.name, candidate.info.version);
        let detail = serde_json::json!({"gate": record.id});
        let actor = registry_actor(state, user, "plugin.promoted", &target, detail);
        state
            .store
            .set_current_version(&candidate.info.name, &candidate.info.version, &actor)
            .await?;
        state.plugins.sync().await?;
    }
    tracing::info!(
        name = %candidate.info.name, version = %candidate.info.version,
        experiment = %record.id, passed, reason = reason.as_deref(), "publish gate"
    );
    Ok(GateVerdict {
        experiment: Some(record.id),
        passed,
        against: current.info.version.clone(),
        wins: challenger.wins,
        ties: challenger.ties,
        losses: challenger.losses,
        failures: challenger.failures,
        reason,
    })
}

/// Whether the current version's `evaluate` scores each completed run of the candidate
/// (labelled `candidate`) to the objective the run reports, within 1e-7 relative: why not,
/// for the first that does not (or that it cannot score). None if every one does, or the
/// current version does not evaluate.
async fn misreported(
    state: &Services,
    user: &AuthUser,
    experiment: &str,
    candidate: &str,
    current: &Arc<Plugin>,
) -> Result<Option<String>, ApiError> {
    if !current.component.has_evaluate() {
        return Ok(None);
    }
    for run in state.store.experiment_runs(&user.id, experiment).await? {
        let labels: Value = run
            .labels
            .as_deref()
            .and_then(|labels| serde_json::from_str(labels).ok())
            .unwrap_or(Value::Null);
        let (JobStatus::Completed, Some(reported)) = (run.status, run.objective) else {
            continue;
        };
        if labels[VERSION_LABEL].as_str() != Some(candidate) {
            continue;
        }
        let gone = || ApiError::Internal(format!("gate run {} is gone", run.job_id));
        let input = state
            .store
            .job_input(&user.id, &run.job_id)
            .await?
            .ok_or_else(gone)?;
        let Some(JobOutput::Completed(output)) =
            state.store.job_output(&user.id, &run.job_id).await?
        else {
            return Err(gone());
        };
        let mut fields = input_fields(state, &input).await?;
        let mut body = serde_json::Map::new();
        if let Some(file) = fields.remove("data_file_identifier") {
            body.insert("data_file_identifier".into(), file);
        }
        body.insert("input".into(), Value::Object(fields));
        body.insert(
            "solution".into(),
            serde_json::from_str(&output).unwrap_or(Value::Null),
        );
        let scored = match evaluate(state, user, current, body).await {
            Ok(scored) => scored.evaluation.objective,
            Err(ApiError::NotImplemented(_)) => return Ok(None),
            // The store went away: the gate cannot decide, the publish fails.
            Err(error @ ApiError::DatabaseAway) => return Err(error),
            // Whatever else kept the current version from scoring the answer refuses it:
            // an answer the current version cannot read is not shown to be what it claims.
            Err(error) => {
                tracing::warn!(job = %run.job_id, %error, "the gate could not score an answer");
                let why = match error {
                    ApiError::Validation { detail, errors } => {
                        let listed: Vec<String> = errors
                            .iter()
                            .map(|v| format!("{}: {}", v.pointer, v.message))
                            .collect();
                        format!("{detail}: {}", listed.join("; "))
                    }
                    other => other.to_string(),
                };
                return Ok(Some(format!(
                    "the current version's evaluate cannot score its answer of job {}: {why}",
                    run.job_id
                )));
            }
        };
        // HiGHS's feasibility tolerance, relative: objectives summed in another order (a
        // solver's own against a recomputation) differ by far less.
        let tolerance = 1e-7 * scored.abs().max(reported.value.abs()).max(1.0);
        if (reported.value - scored).abs() > tolerance {
            return Ok(Some(format!(
                "it misreports its objective: job {} reports {}, and the current version's \
                 evaluate scores that answer {scored}",
                run.job_id, reported.value
            )));
        }
    }
    Ok(None)
}

/// The answer of a gate whose experiment could not be launched (its template's inputs are
/// refused, say): not passed, and why.
fn refused_before_running(current: &Plugin, error: &ApiError) -> GateVerdict {
    let why = match error {
        ApiError::Validation { detail, errors } => {
            let listed: Vec<String> = errors
                .iter()
                .map(|violation| format!("{}: {}", violation.pointer, violation.message))
                .collect();
            format!("{detail}: {}", listed.join("; "))
        }
        other => other.to_string(),
    };
    GateVerdict {
        experiment: None,
        passed: false,
        against: current.info.version.clone(),
        wins: 0,
        ties: 0,
        losses: 0,
        failures: 0,
        reason: Some(format!("its experiment could not run: {why}")),
    }
}
