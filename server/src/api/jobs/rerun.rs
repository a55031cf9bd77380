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
use serde_json::{Map, Value};

use crate::api::jobs::launch_request::accepted;
use crate::api::{ApiError, AppState, Path};
use crate::auth::AuthUser;
use crate::domain::error::invalid;
use crate::domain::jobs::not_found;
use crate::domain::launch::{insert_failed, prepare_with, resolve_synced};
use crate::domain::projects::launch_project;
use crate::domain::rerun::launch_fields;
use crate::store::Inserted;
use crate::violation::Violation;

pub fn router() -> Router<AppState> {
    Router::new().route("/job/{job_id}/rerun", post(rerun))
}

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
