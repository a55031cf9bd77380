//! What a caller is told of a job it may not see or change: 404 as for anyone's, or 403
//! where it views the job's project but may not change its jobs.

use super::ApiError;
use crate::auth::AuthUser;
use crate::state::Services;

/// Another user's job answers exactly like a job that does not exist.
pub fn not_found(job_id: &str) -> ApiError {
    ApiError::NotFound(format!("no job {job_id:?}"))
}

/// Why a job the caller may not change was left alone: 403 where it may read it (it views
/// the job's project), 404 where it may not, as for anyone's.
pub async fn not_writable(
    state: &Services,
    user: &AuthUser,
    job_id: &str,
    doing: &str,
) -> ApiError {
    match state.store.job(&user.id, job_id).await {
        Ok(Some(job)) => ApiError::Forbidden(format!(
            "{} is a viewer of project {:?}, and {doing} its jobs needs a member",
            user.username,
            job.project_id.unwrap_or_default()
        )),
        Ok(None) => not_found(job_id),
        Err(error) => error.into(),
    }
}
