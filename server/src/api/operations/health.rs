//! `GET /healthz` and `GET /readyz`. Health is liveness: the process answers. Readiness says
//! whether this replica can do its work: the database answers within [`DATABASE_BOUND`], it
//! has every migration this build needs, and the plugins the store lists were read at the
//! last try. A load balancer sends requests only to a ready replica; an orchestrator
//! restarts only one that is not alive.

use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::json;

use crate::api::{ApiError, AppState, Json};
use crate::store::{latest_migration, missing_migrations};

/// How long the database may take to answer a readiness check.
pub const DATABASE_BOUND: Duration = Duration::from_secs(2);

pub async fn healthz() -> impl IntoResponse {
    axum::Json(json!({ "status": "ok" }))
}

/// 200 `{status: "ready", schema}` when ready; otherwise 503 problem+json naming each check
/// that failed.
pub async fn readyz(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let mut failed = Vec::new();
    match tokio::time::timeout(DATABASE_BOUND, state.store.applied_migrations()).await {
        Err(_) => {
            state.database_outage.noticed(state.store.clone());
            failed.push(format!(
                "the database did not answer within {} s",
                DATABASE_BOUND.as_secs()
            ));
        }
        // The error names hosts and users: logged, not told to whoever asks.
        Ok(Err(error)) => {
            tracing::warn!(%error, "readiness: the database does not answer");
            state.database_outage.noticed(state.store.clone());
            failed.push("the database does not answer".to_owned());
        }
        Ok(Ok(applied)) => {
            state.database_outage.back();
            let missing = missing_migrations(&applied);
            if !missing.is_empty() {
                failed.push(format!(
                    "the database lacks {} of the {} migrations this build needs \
                     (run `caseload migrate`)",
                    missing.len(),
                    latest_migration()
                ));
            }
        }
    }
    if !state.plugins.catalog_read() {
        failed.push("the plugins the store lists could not be read at the last try".into());
    }
    if failed.is_empty() {
        Ok(Json(
            json!({ "status": "ready", "schema": latest_migration() }),
        ))
    } else {
        Err(ApiError::Unavailable(format!(
            "not ready: {}",
            failed.join("; ")
        )))
    }
}
