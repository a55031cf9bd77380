//! What a worker does when a race's entrant ended: if its answer is proven optimal, the
//! other entrants are stopped (nothing can beat it); then the race is settled, which ends it
//! once every entrant ended.

use std::sync::Arc;

use serde_json::Value;

use super::local_jobs::LocalJobs;
use crate::store::{CancelOutcome, JobStatus, JobStore};

/// Whether an output says it is proven optimal (`"optimal": true`).
pub(super) fn proven_optimal(output: Option<&str>) -> bool {
    output
        .and_then(|output| serde_json::from_str::<Value>(output).ok())
        .and_then(|output| output.get("optimal").and_then(Value::as_bool))
        .unwrap_or(false)
}

/// After an entrant of `race_id` ended (committed).
pub(super) async fn entrant_ended(
    store: Arc<dyn JobStore>,
    local: Arc<LocalJobs>,
    owner_id: String,
    race_id: String,
    optimal: bool,
) {
    if optimal {
        match store.race_entrants(&owner_id, &race_id).await {
            Ok(entrants) => {
                for entrant in entrants.iter().filter(|entrant| {
                    matches!(entrant.status, JobStatus::Pending | JobStatus::Running)
                }) {
                    match store.cancel_job(&owner_id, &entrant.job_id).await {
                        Ok(Some(CancelOutcome::Requested)) => {
                            local.cancel(&entrant.job_id);
                        }
                        Ok(_) => {}
                        Err(error) => {
                            tracing::warn!(race = %race_id, job = %entrant.job_id, %error, "cannot stop an entrant");
                        }
                    }
                }
                tracing::info!(race = %race_id, "an entrant proved optimality; the others were stopped");
            }
            Err(error) => {
                tracing::warn!(race = %race_id, %error, "cannot read the race's entrants")
            }
        }
    }
    if let Err(error) = store.settle_race(&race_id).await {
        tracing::warn!(race = %race_id, %error, "cannot settle the race; the settle loop will");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_output_that_says_so_is_optimal() {
        assert!(proven_optimal(Some(r#"{"cut_value": 3, "optimal": true}"#)));
        assert!(!proven_optimal(Some(
            r#"{"cut_value": 3, "optimal": false}"#
        )));
        assert!(!proven_optimal(Some(r#"{"cut_value": 3}"#)));
        assert!(!proven_optimal(Some("not json")));
        assert!(!proven_optimal(None));
    }
}
