//! `GET /job/<id>/input`: what a job was launched with, so that a client (the console's
//! picture of an answer) can show the output beside its problem. An inline input comes back
//! as the JSON it was stored as; a dataset job's input is its dataset's bytes, in the media
//! type they were uploaded with, even after the data file itself was deleted. An inline input
//! that several jobs share (an experiment's runs) is kept once, and comes back as its JSON.
//! With `?decoded=true` a dataset comes back as the JSON input its use case made of it (the
//! job's component decodes it, as at the launch, with the parameters given beside it), so
//! that a client reads every job's input in one form whatever file format it came in.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use serde_json::{Map, Value};

use crate::api::{ApiError, AppState, Path};
use crate::auth::AuthUser;
use crate::domain::jobs::not_found;
use crate::domain::launch::resolve_synced;
use crate::plugins::is_json;
use crate::store::JobInput;

pub fn router() -> Router<AppState> {
    Router::new().route("/job/{job_id}/input", get(input))
}

#[derive(Debug, serde::Deserialize)]
struct InputQuery {
    /// A dataset as its use case's JSON input.
    #[serde(default)]
    decoded: bool,
}

async fn input(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
    query: Result<Query<InputQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let input = state
        .store
        .job_input(&user.id, &job_id)
        .await?
        .ok_or_else(|| not_found(&job_id))?;
    let Some(dataset) = input.dataset.clone() else {
        return Ok(([(header::CONTENT_TYPE, "application/json")], input.input).into_response());
    };
    let bytes = state
        .store
        .blob(&dataset.blob_id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("the dataset of job {job_id} is gone")))?;
    if query.decoded && !is_json(&dataset.media_type) {
        let decoded = decoded(&state, &input, &dataset.media_type, bytes).await?;
        return Ok(([(header::CONTENT_TYPE, "application/json")], decoded).into_response());
    }
    let media_type = HeaderValue::from_str(&dataset.media_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut response = ([(header::CONTENT_TYPE, media_type)], bytes).into_response();
    // An inline input kept once for the jobs that share it names no data file.
    if let Some(data_file_id) = &dataset.data_file_id {
        let data_file = HeaderValue::from_str(data_file_id)
            .map_err(|error| ApiError::Internal(error.to_string()))?;
        response.headers_mut().insert(
            header::HeaderName::from_static("caseload-data-file"),
            data_file,
        );
    }
    Ok(response)
}

/// The dataset as the job's component reads it: its `decode`, then the parameters given
/// beside it, off the async runtime under the submission-time limits.
async fn decoded(
    state: &AppState,
    input: &JobInput,
    media_type: &str,
    bytes: Vec<u8>,
) -> Result<String, ApiError> {
    let problem_id = match &input.binding {
        Some(binding) => format!("{}@{}", input.problem, binding.digest),
        None => input.problem.clone(),
    };
    let plugin = resolve_synced(state, &problem_id).await?;
    let parameters = match serde_json::from_str::<Value>(&input.input) {
        Ok(Value::Object(parameters)) => parameters,
        _ => Map::new(),
    };
    let limits = state.submission_limits(&plugin.info.name, None);
    let media_type = media_type.to_owned();
    let result = state
        .run_blocking(move || plugin.dataset_input(&media_type, bytes, &parameters, &limits))
        .await?;
    result.map_err(|error| {
        ApiError::Internal(format!("the job's dataset cannot be decoded now: {error}"))
    })
}
