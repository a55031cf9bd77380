//! `POST /job/<id>/rerun`: a new job with what an earlier one was launched with (its inline
//! input, or its dataset's bytes even after the data file was deleted), its options with the
//! seed it ran with, and its labels, on the component it was bound to unless the body names
//! another version. With the same version, seed and `max_iterations`, a deterministic use case
//! answers byte for byte what it answered the first time.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Map, Value, json};

use super::jobs::not_found;
use super::plugins::resolve_synced;
use super::problems::{accepted, insert_failed, invalid, prepare_with};
use super::projects::launch_project;
use super::{ApiError, AppState, Path};
use crate::auth::AuthUser;
use crate::options::JobOptions;
use crate::store::{Inserted, JobInput};
use crate::violation::Violation;

pub fn router() -> Router<AppState> {
    Router::new().route("/job/{job_id}/rerun", post(rerun))
}

/// The labels an experiment's or a race's jobs carry, which their reruns do not.
const RUN_LABELS: &[&str] = &[
    "experiment",
    "experiment_version",
    "experiment_input",
    "experiment_seed",
    "race",
];

/// The most a rerun's body may hold: a version and options.
const MAX_BODY: usize = 64 << 10;

async fn rerun(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request = parse_body(&headers, &body)?;
    let earlier = state
        .store
        .job_input(&user.id, &job_id)
        .await?
        .ok_or_else(|| not_found(&job_id))?;

    // The version named, else the component the job was bound to (by digest: the very
    // bytes), else (a job from before jobs were bound) the current one.
    let requested = match (&request.version, &earlier.binding) {
        (Some(version), _) => Some(version.clone()),
        (None, Some(binding)) => Some(binding.digest.clone()),
        (None, None) => None,
    };
    let problem_id = match &requested {
        Some(version) => format!("{}@{version}", earlier.problem),
        None => earlier.problem.clone(),
    };
    let plugin = resolve_synced(&state, &problem_id).await?;

    let fields = launch_fields(&state, &earlier, request.options).await?;
    let large = earlier.input.len() > 64 << 10 || earlier.dataset.is_some();
    let prepared = prepare_with(
        &state,
        &user,
        &plugin,
        fields,
        large,
        earlier.dataset.as_ref(),
    )
    .await?;
    let mut job = prepared.into_job(&user, &plugin, requested, None, state.quotas)?;
    job.rerun_of = Some(job_id.clone());
    // A project's job runs again in its project, for a member of it.
    job.project_id = launch_project(&state, &user, earlier.project_id.as_deref()).await?;
    let inserted = match state.store.insert_job(&job).await {
        Ok(inserted) => inserted,
        Err(error) => return Err(insert_failed(&state, &user, &job, error).await),
    };
    match inserted {
        Inserted::Created => {}
        Inserted::Refused(refusal) => return Err(refusal.into()),
        Inserted::Existing { .. } => {
            return Err(ApiError::Internal(
                "a rerun without a key reported an existing job".into(),
            ));
        }
    }
    state.local_jobs.job_added();
    state.metrics.job_accepted(&plugin.info.name);
    tracing::info!(
        job = %job.id, rerun_of = %job_id, problem = %job.problem,
        version = %plugin.info.version, user = %user.username, "rerun accepted"
    );
    Ok(accepted(&user, &plugin, job.id).into_response())
}

/// What a rerun's body may say.
#[derive(Debug, Default)]
struct RerunRequest {
    /// A version or a digest to run instead of the job's own.
    version: Option<String>,
    /// Options that replace the job's own, one by one.
    options: Option<Map<String, Value>>,
}

fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<RerunRequest, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(RerunRequest::default());
    }
    if body.len() > MAX_BODY {
        return Err(ApiError::PayloadTooLarge(MAX_BODY));
    }
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("application/json")
        });
    if !json {
        return Err(ApiError::UnsupportedMediaType(
            "a rerun's body, if any, is JSON: send Content-Type: application/json".into(),
        ));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| ApiError::BadRequest(format!("the body is not valid JSON: {error}")))?;
    let Value::Object(mut fields) = value else {
        return Err(invalid(
            "the body must be a JSON object",
            vec![Violation::new("", "must be an object")],
        ));
    };
    let mut errors = Vec::new();
    let version = match fields.remove("version") {
        None | Some(Value::Null) => None,
        Some(Value::String(version)) if !version.is_empty() => Some(version),
        Some(_) => {
            errors.push(Violation::new(
                "/version",
                "must be a version or sha256:<hex>",
            ));
            None
        }
    };
    let options = match fields.remove("options") {
        None | Some(Value::Null) => None,
        Some(Value::Object(options)) => Some(options),
        Some(_) => {
            errors.push(Violation::new("/options", "must be an object"));
            None
        }
    };
    for name in fields.keys() {
        errors.push(Violation::new(
            format!("/{name}"),
            "unknown field; a rerun's body takes version and options",
        ));
    }
    if !errors.is_empty() {
        return Err(invalid("the rerun's body is not valid", errors));
    }
    Ok(RerunRequest { version, options })
}

/// The launch body the earlier job stands for: its input (or dataset and parameters), its
/// options as it ran with them (seed included) with `overrides` set over them, its labels.
async fn launch_fields(
    state: &AppState,
    earlier: &JobInput,
    overrides: Option<Map<String, Value>>,
) -> Result<Map<String, Value>, ApiError> {
    let corrupt = |what: &str| ApiError::Internal(format!("the job's stored {what} do not parse"));
    let mut fields = input_fields(state, earlier).await?;
    let ran: JobOptions = serde_json::from_str(&earlier.options).map_err(|_| corrupt("options"))?;
    let mut options = Map::new();
    options.insert(
        "time_limit_s".into(),
        json!(ran.time_limit_ms as f64 / 1000.0),
    );
    options.insert("seed".into(), json!(ran.seed));
    if let Some(iterations) = ran.max_iterations {
        options.insert("max_iterations".into(), json!(iterations));
    }
    if let Some(memory) = ran.memory_limit_mib {
        options.insert("memory_limit_mib".into(), json!(memory));
    }
    if ran.priority > 0 {
        options.insert("priority".into(), json!(ran.priority));
    }
    for (name, value) in overrides.into_iter().flatten() {
        options.insert(name, value);
    }
    fields.insert("options".into(), Value::Object(options));
    if let Some(labels) = &earlier.labels {
        let mut labels: Map<String, Value> =
            serde_json::from_str(labels).map_err(|_| corrupt("labels"))?;
        // Where the job stood in an experiment or a race is not the rerun's: it is in
        // neither.
        labels.retain(|key, _| !RUN_LABELS.contains(&key.as_str()));
        fields.insert("labels".into(), Value::Object(labels));
    }
    Ok(fields)
}

/// The launch body fields of an earlier job's input: its inline input (kept in the job, or
/// once for the jobs that share it), or its dataset and the parameters given beside it.
pub(super) async fn input_fields(
    state: &AppState,
    earlier: &JobInput,
) -> Result<Map<String, Value>, ApiError> {
    let corrupt = |what: &str| ApiError::Internal(format!("the job's stored {what} do not parse"));
    Ok(match &earlier.dataset {
        None => match serde_json::from_str(&earlier.input) {
            Ok(Value::Object(fields)) => fields,
            _ => return Err(corrupt("input")),
        },
        Some(dataset) if dataset.data_file_id.is_none() => {
            let bytes = state
                .store
                .blob(&dataset.blob_id)
                .await?
                .ok_or_else(|| ApiError::Internal("the job's kept input is gone".into()))?;
            match serde_json::from_slice(&bytes) {
                Ok(Value::Object(fields)) => fields,
                _ => return Err(corrupt("input")),
            }
        }
        Some(dataset) => {
            let mut fields = match earlier.input.as_str() {
                "" => Map::new(),
                parameters => match serde_json::from_str(parameters) {
                    Ok(Value::Object(fields)) => fields,
                    _ => return Err(corrupt("parameters")),
                },
            };
            fields.insert(
                "data_file_identifier".into(),
                Value::String(dataset.data_file_id.clone().unwrap_or_default()),
            );
            fields
        }
    })
}
