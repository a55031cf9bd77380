//! `?wait=S` on a job's status and output: the answer is held until the job changes as asked
//! or `S` seconds pass. A waiter subscribes to the job's changes before it reads the job, so a
//! change between the read and the wait is not missed, and reads it again only when woken.

use std::time::Duration;

use serde::Deserialize;
use tokio::time::Instant;

use crate::api::jobs::held::{Hold, Interrupt};
use crate::api::{ApiError, AppState};
use crate::auth::AuthUser;
use crate::store::{JobRecord, JobStatus};

/// The longest a request may be held.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// The query of `GET /job/<id>` and `GET /job/<id>/output`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    /// Seconds to hold the answer for, 0 to 60.
    pub wait: Option<f64>,
    /// The status the client last saw: the answer comes once the job's differs.
    pub status: Option<String>,
}

/// What a held request waits for.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// The job's status differs from this one.
    Not(JobStatus),
    /// The job ended.
    Ended,
}

impl WaitQuery {
    /// How long to wait, and for what; `None` to answer at once.
    pub fn parse(&self) -> Result<Option<(Duration, Until)>, ApiError> {
        let until = match self.status.as_deref() {
            None => Until::Ended,
            Some(status) => Until::Not(JobStatus::parse(status).map_err(|_| {
                ApiError::BadRequest(format!(
                    "status {status:?} is not a job status; use PENDING, RUNNING, COMPLETED, \
                     FAILED or CANCELLED"
                ))
            })?),
        };
        match self.wait {
            None => Ok(None),
            Some(seconds) if (0.0..=MAX_WAIT.as_secs_f64()).contains(&seconds) => {
                Ok(Some((Duration::from_secs_f64(seconds), until)))
            }
            Some(_) => Err(ApiError::BadRequest(format!(
                "wait must be a number of seconds from 0 to {}",
                MAX_WAIT.as_secs()
            ))),
        }
    }
}

impl Until {
    fn reached(self, status: JobStatus) -> bool {
        match self {
            Until::Not(seen) => status != seen,
            Until::Ended => !matches!(status, JobStatus::Pending | JobStatus::Running),
        }
    }
}

/// Reads the job, again on each of its changes, until it is as asked or `wait` passes; the
/// job as last read. `None` if there is no such job of this user. A client's held request
/// passes its [`Hold`]: it also answers at once when its connection must close, and 401 when
/// its user loses access.
pub async fn wait_for_job(
    state: &AppState,
    user: &AuthUser,
    job_id: &str,
    wait: Duration,
    until: Until,
    mut hold: Option<&mut Hold>,
) -> Result<Option<JobRecord>, ApiError> {
    let deadline = Instant::now() + wait;
    let mut changes = state.changes.watch_job(job_id);
    loop {
        let read =
            state
                .changes
                .reads()
                .job(state.store.as_ref(), &user.id, job_id, changes.sequence());
        let Some(job) = read.await? else {
            return Ok(None);
        };
        if until.reached(job.record.status) || Instant::now() >= deadline || changes.stopping() {
            return Ok(Some(job.record.clone()));
        }
        let interrupted = async {
            match hold.as_deref_mut() {
                Some(hold) => hold.interrupted().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = changes.changed() => {}
            () = tokio::time::sleep_until(deadline) => {}
            interrupt = interrupted => match interrupt {
                Interrupt::Closing => return Ok(Some(job.record.clone())),
                Interrupt::AccessLost(error) => return Err(error),
            },
        }
    }
}
