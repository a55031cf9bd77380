//! Jobs: `GET /job/<id>` (the spec's status shape), `GET /job/<id>/output`, and `GET /jobs`.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::wire::{JobList, JobListEntry, JobListQuery, JobStatusResponse};
use super::{ApiError, AppState, Json};
use crate::auth::AuthUser;
use crate::store::{JobOutput, now_millis};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/job/{job_id}", get(status))
        .route("/job/{job_id}/output", get(output))
        .route("/jobs", get(list))
}

/// Another user's job answers exactly like a job that does not exist.
fn not_found(job_id: &str) -> ApiError {
    ApiError::NotFound(format!("no job {job_id:?}"))
}

async fn status(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
) -> Result<Json<JobStatusResponse>, ApiError> {
    let job = state
        .store
        .job(&user.id, &job_id)
        .await?
        .ok_or_else(|| not_found(&job_id))?;
    Ok(Json(JobStatusResponse::new(job, now_millis())))
}

async fn output(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
) -> Result<Response, ApiError> {
    match state.store.job_output(&user.id, &job_id).await? {
        None => Err(not_found(&job_id)),
        // Stored as the plugin returned it, after the output schema accepted it.
        Some(JobOutput::Completed(output)) => {
            Ok(([(header::CONTENT_TYPE, "application/json")], output).into_response())
        }
        Some(JobOutput::NotCompleted(status)) => Err(ApiError::Conflict(format!(
            "job {job_id:?} is {}; its output exists once it is COMPLETED",
            status.as_str()
        ))),
    }
}

/// The most jobs one page lists.
const MAX_PAGE: u32 = 500;

async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    query: Result<Query<JobListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<JobList>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = query.limit.unwrap_or(50).clamp(1, MAX_PAGE);
    let jobs = state
        .store
        .jobs(&user.id, query.before.as_deref(), limit)
        .await?;
    let next = (jobs.len() == limit as usize)
        .then(|| jobs.last().map(|job| job.id.clone()))
        .flatten();
    Ok(Json(JobList {
        jobs: jobs.into_iter().map(JobListEntry::new).collect(),
        next,
    }))
}
