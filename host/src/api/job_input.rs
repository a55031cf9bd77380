//! `GET /job/<id>/input`: what a job was launched with, so that a client (the console's
//! picture of an answer) can show the output beside its problem. An inline input comes back
//! as the JSON it was stored as; a dataset job's input is its dataset's bytes, in the media
//! type they were uploaded with, even after the data file itself was deleted. An inline input
//! that several jobs share (an experiment's runs) is kept once, and comes back as its JSON.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::jobs::not_found;
use super::{ApiError, AppState, Path};
use crate::auth::AuthUser;

pub fn router() -> Router<AppState> {
    Router::new().route("/job/{job_id}/input", get(input))
}

async fn input(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
) -> Result<Response, ApiError> {
    let input = state
        .store
        .job_input(&user.id, &job_id)
        .await?
        .ok_or_else(|| not_found(&job_id))?;
    let Some(dataset) = input.dataset else {
        return Ok(([(header::CONTENT_TYPE, "application/json")], input.input).into_response());
    };
    let bytes = state
        .store
        .blob(&dataset.blob_id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("the dataset of job {job_id} is gone")))?;
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
