//! `POST /job/<id>/finish`: stop now and keep the best. A running job's plugin hears
//! `cancelled()` and has the job's grace period to return what it has; the job then ends
//! `COMPLETED` with that output and `stopped_early: true`. A plugin that does not return in
//! time ends as a cancelled run does; a pending job is cancelled; an ended one is a 409. A
//! race's entrants each return what they have, and the race keeps the best.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::api::jobs::long_poll::{Until, wait_for_job};
use crate::api::wire::CancelResponse;
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::jobs::{not_found, not_writable};
use crate::domain::races::{Stop, stop_entrants};
use crate::store::{FinishOutcome, JobStatus};

/// How long the answer waits for the job to end: its plugin's return, or the grace's end.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub fn router() -> Router<AppState> {
    Router::new().route("/job/{job_id}/finish", post(finish))
}

async fn finish(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
) -> Result<Response, ApiError> {
    let outcome = match race_status(&state, &user, &job_id).await? {
        // A race: each entrant returns what it has, and the race keeps the best.
        Some(JobStatus::Pending | JobStatus::Running) => {
            stop_entrants(&state, &user, &job_id, Stop::Finish).await?;
            FinishOutcome::Requested
        }
        Some(ended) => FinishOutcome::Ended(ended),
        None => match state.store.finish_job(&user.id, &job_id).await? {
            Some(outcome) => outcome,
            None => return Err(not_writable(&state, &user, &job_id, "finishing").await),
        },
    };
    let status = match outcome {
        FinishOutcome::Cancelled | FinishOutcome::Ended(JobStatus::Cancelled) => {
            JobStatus::Cancelled
        }
        FinishOutcome::Ended(status) => {
            return Err(ApiError::Conflict(format!(
                "job {job_id:?} is {} already; only a pending or running job can be finished",
                status.as_str()
            )));
        }
        FinishOutcome::Requested | FinishOutcome::CancelRequested => {
            if outcome == FinishOutcome::Requested {
                // Nothing runs under a race's own id: its entrants were told.
                state.local_jobs.finish(&job_id);
            } else {
                state.local_jobs.cancel(&job_id);
            }
            wait_for_job(&state, &user, &job_id, FINISH_WAIT, Until::Ended, None)
                .await?
                .ok_or_else(|| not_found(&job_id))?
                .status
        }
    };
    tracing::info!(job = %job_id, user = %user.username, status = status.as_str(), "finish");
    let (code, detail) = match status {
        JobStatus::Running | JobStatus::Pending => (
            StatusCode::ACCEPTED,
            "finish requested; the run is returning what it has",
        ),
        JobStatus::Completed => (
            StatusCode::OK,
            "the job returned what it had and is completed",
        ),
        JobStatus::Cancelled => (StatusCode::OK, "the job is cancelled"),
        JobStatus::Failed => (StatusCode::OK, "the job failed as it stopped"),
    };
    let body = CancelResponse {
        detail: detail.to_owned(),
        job: job_id,
        status: status.as_str(),
    };
    Ok((code, Json(body)).into_response())
}

/// The status of the caller's job if it is a race (`None` for any other job, or none). Any
/// other job costs one indexed look for entrants; only a race is read whole.
async fn race_status(
    state: &AppState,
    user: &AuthUser,
    job_id: &str,
) -> Result<Option<JobStatus>, ApiError> {
    if state
        .store
        .race_entrants(&user.id, job_id)
        .await?
        .is_empty()
    {
        return Ok(None);
    }
    Ok(state
        .store
        .job(&user.id, job_id)
        .await?
        .map(|job| job.status))
}
