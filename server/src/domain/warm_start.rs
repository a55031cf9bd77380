//! `options.warm_start`: an earlier job's output, where the use case's input schema says it
//! goes (`x-caseload-warm-start`), set in a launch's input before the input is checked.

use serde_json::Value;

use super::ApiError;
use super::error::invalid;
use super::jobs::not_found;
use super::projects::within_key_project;
use crate::auth::AuthUser;
use crate::plugins::Plugin;
use crate::plugins::warm_start::WARM_START_KEYWORD;
use crate::state::Services;
use crate::store::{JobOutput, ProjectOwned};
use crate::violation::Violation;

/// Outputs longer than this are parsed on a blocking thread.
const BLOCKING_PARSE_ABOVE: usize = 64 << 10;

/// The input field a warm start from `job_id` fills, and its value. The job must be the
/// caller's (404 otherwise, as for any id of someone else's), of the same use case, and
/// completed; the use case must declare where a warm start goes (422 otherwise).
pub async fn warm_start_field(
    state: &Services,
    user: &AuthUser,
    plugin: &Plugin,
    job_id: &str,
) -> Result<(String, Value), ApiError> {
    let refused = |message: String| {
        invalid(
            "the warm start cannot be used",
            vec![Violation::new("/options/warm_start", message)],
        )
    };
    let Some(spec) = &plugin.warm_start else {
        return Err(refused(format!(
            "{} takes no warm start: its input schema does not declare {WARM_START_KEYWORD}",
            plugin.info.name
        )));
    };
    within_key_project(state, user, ProjectOwned::Job, job_id).await?;
    let earlier = state
        .store
        .job_input(&user.id, job_id)
        .await?
        .ok_or_else(|| not_found(job_id))?;
    if earlier.problem != plugin.info.name {
        return Err(refused(format!(
            "job {job_id} ran {}, not {}",
            earlier.problem, plugin.info.name
        )));
    }
    let output = match state.store.job_output(&user.id, job_id).await? {
        Some(JobOutput::Completed(output)) => output,
        Some(JobOutput::NotCompleted(status)) => {
            return Err(refused(format!(
                "job {job_id} is {}: only a completed job's output can be a start",
                status.as_str()
            )));
        }
        None => return Err(not_found(job_id)),
    };
    let parsed = if output.len() > BLOCKING_PARSE_ABOVE {
        state
            .run_blocking(move || serde_json::from_str::<Value>(&output))
            .await?
    } else {
        serde_json::from_str::<Value>(&output)
    };
    let output = parsed
        .map_err(|error| ApiError::Internal(format!("job {job_id}'s stored output: {error}")))?;
    let value = spec
        .take(&output)
        .map_err(|message| refused(format!("job {job_id}: {message}")))?;
    Ok((spec.field.clone(), value))
}
