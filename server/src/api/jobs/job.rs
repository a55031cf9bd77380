//! Jobs: `GET /job/<id>` (the spec's status shape), `DELETE /job/<id>` (cancel),
//! `GET /job/<id>/output`, `GET /jobs` and `GET /jobs/counts`.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::api::jobs::held::{Connection, Hold};
use crate::api::jobs::job_filter::JobListRequest;
use crate::api::jobs::long_poll::{Until, WaitQuery, wait_for_job};
use crate::api::wire::{CancelResponse, JobList, JobListEntry, JobStatusResponse};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::jobs::{not_found, not_writable};
use crate::domain::projects::{default_project, named_project, project_role};
use crate::domain::races::{Stop, stop_entrants};
use crate::store::{CancelOutcome, JobOutput, JobStatus, now_millis};

/// How long `DELETE /job/<id>` waits for a running job to stop before it answers 202.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/job/{job_id}", get(status).delete(cancel))
        .route("/job/{job_id}/output", get(output))
        .route("/jobs", get(list))
        .route("/jobs/counts", get(counts))
}

/// How many of the caller's jobs are in each status, or with `?project=` (or a key bound to
/// one) a project's, for anyone in it; every status is present.
async fn counts(
    State(state): State<AppState>,
    user: AuthUser,
    RawQuery(query): RawQuery,
) -> Result<Json<std::collections::BTreeMap<&'static str, u64>>, ApiError> {
    let mut counts: std::collections::BTreeMap<&'static str, u64> = [
        JobStatus::Pending,
        JobStatus::Running,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ]
    .into_iter()
    .map(|status| (status.as_str(), 0))
    .collect();
    let project = named_project(query.as_deref()).or(default_project(&user).map(str::to_owned));
    let counted = match project.filter(|project| *project != user.id) {
        Some(project) => {
            // A project's jobs for anyone in it; 404 for anyone else.
            project_role(&state, &user, &project).await?;
            state.store.project_job_counts(&project).await?
        }
        None => state.store.job_counts(&user.id).await?,
    };
    for (status, count) in counted {
        *counts.entry(status.as_str()).or_default() += count;
    }
    Ok(Json(counts))
}

/// The job's status; with `?wait=S`, once it differs from `?status=` (by default: once it
/// ended) or `S` seconds passed.
async fn status(
    State(state): State<AppState>,
    user: AuthUser,
    connection: Connection,
    Path(job_id): Path<String>,
    query: Result<Query<WaitQuery>, QueryRejection>,
) -> Result<Json<JobStatusResponse>, ApiError> {
    let job = match wait_query(query)?.parse()? {
        None => state.store.job(&user.id, &job_id).await?,
        Some((wait, until)) => {
            let mut hold = Hold::begin(&state, &user, connection)?;
            wait_for_job(&state, &user, &job_id, wait, until, Some(&mut hold)).await?
        }
    };
    let job = job.ok_or_else(|| not_found(&job_id))?;
    Ok(Json(JobStatusResponse::new(job, now_millis())))
}

fn wait_query(query: Result<Query<WaitQuery>, QueryRejection>) -> Result<WaitQuery, ApiError> {
    query
        .map(|Query(query)| query)
        .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))
}

/// Cancels the job. A pending job never runs (200). A running one is interrupted, here or on
/// whichever replica runs it; the answer waits a moment for it to stop (200 with its final
/// status), else says the cancellation is under way (202). A job that ended is 409, except one
/// already cancelled, so that a retried request gets the same answer.
async fn cancel(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
) -> Result<Response, ApiError> {
    let Some(outcome) = state.store.cancel_job(&user.id, &job_id).await? else {
        return Err(not_writable(&state, &user, &job_id, "cancelling").await);
    };
    let status = match outcome {
        CancelOutcome::Cancelled | CancelOutcome::Ended(JobStatus::Cancelled) => {
            JobStatus::Cancelled
        }
        CancelOutcome::Ended(status) => {
            return Err(ApiError::Conflict(format!(
                "job {job_id:?} is {} already; only a pending or running job can be cancelled",
                status.as_str()
            )));
        }
        CancelOutcome::Requested => {
            state.local_jobs.cancel(&job_id);
            // Short and bounded: not one of the caller's held requests.
            wait_for_job(&state, &user, &job_id, CANCEL_WAIT, Until::Ended, None)
                .await?
                .ok_or_else(|| not_found(&job_id))?
                .status
        }
    };
    // A race's entrants go with it.
    stop_entrants(&state, &user, &job_id, Stop::Cancel).await?;
    tracing::info!(job = %job_id, user = %user.username, status = status.as_str(), "cancel");
    let (code, detail) = match status {
        JobStatus::Running | JobStatus::Pending => (
            StatusCode::ACCEPTED,
            "cancellation requested; the run is being stopped",
        ),
        JobStatus::Cancelled => (StatusCode::OK, "the job is cancelled"),
        _ => (
            StatusCode::OK,
            "the job ended before the cancellation reached it",
        ),
    };
    let body = CancelResponse {
        detail: detail.to_owned(),
        job: job_id,
        status: status.as_str(),
    };
    Ok((code, Json(body)).into_response())
}

/// The output of a completed job; with `?wait=S`, once the job ended or `S` seconds passed.
async fn output(
    State(state): State<AppState>,
    user: AuthUser,
    connection: Connection,
    Path(job_id): Path<String>,
    query: Result<Query<WaitQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let query = wait_query(query)?;
    if query.status.is_some() {
        return Err(ApiError::BadRequest(
            "status is for GET /job/<id>; the output's wait ends when the job ends".into(),
        ));
    }
    if let Some((wait, until)) = query.parse()? {
        let mut hold = Hold::begin(&state, &user, connection)?;
        wait_for_job(&state, &user, &job_id, wait, until, Some(&mut hold))
            .await?
            .ok_or_else(|| not_found(&job_id))?;
    }
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

/// A page of the caller's jobs that pass the query's filter, newest first.
async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    RawQuery(query): RawQuery,
) -> Result<Json<JobList>, ApiError> {
    let mut request = JobListRequest::parse(&state, query.as_deref())?;
    if request.filter.project.is_none() {
        request.filter.project = default_project(&user).map(str::to_owned);
    }
    if let Some(project) = &request.filter.project {
        // A project's jobs for anyone in it; 404 for anyone else.
        project_role(&state, &user, project).await?;
    }
    let jobs = state
        .store
        .jobs(
            &user.id,
            &request.filter,
            request.before.as_deref(),
            request.limit,
        )
        .await?;
    // Pages follow the newest-first order only; sorted by objective, one page is all.
    let next = (jobs.len() == request.limit as usize
        && request.filter.by_objective_descending.is_none())
    .then(|| jobs.last().map(|job| job.id.clone()))
    .flatten();
    Ok(Json(JobList {
        jobs: jobs.into_iter().map(JobListEntry::new).collect(),
        next,
    }))
}
