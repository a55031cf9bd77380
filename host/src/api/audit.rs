//! The audit log: `GET /admin/audit` pages through it, newest first, and [`record`] is how
//! the API adds to it: users made, changed and deleted, keys made and revoked, plugin
//! versions published, promoted and retired, and bursts of failed logins.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use serde::Deserialize;
use serde_json::Value;

use super::wire::{AuditEventView, AuditPage};
use super::{ApiError, AppState, Json};
use crate::auth::AuthUser;
use crate::store::AuditEvent;

/// The most entries one page holds.
const MAX_PAGE: u32 = 500;

pub fn router() -> Router<AppState> {
    Router::new().route("/admin/audit", get(page))
}

/// Adds an entry done by `actor` now.
pub async fn record(
    state: &AppState,
    actor: &str,
    action: &str,
    target: &str,
    detail: Value,
) -> Result<(), ApiError> {
    let event = AuditEvent::now(actor, action, target, detail);
    state.store.record_audit(&event).await?;
    Ok(())
}

/// [`record`] without waiting for it (a failure is logged): for what must answer at once.
pub fn record_later(state: &AppState, actor: &str, action: &str, target: &str, detail: Value) {
    let event = AuditEvent::now(actor, action, target, detail);
    let store = state.store.clone();
    tokio::spawn(async move {
        if let Err(error) = store.record_audit(&event).await {
            tracing::warn!(%error, action = %event.action, "cannot record an audit event");
        }
    });
}

#[derive(Debug, Deserialize)]
struct PageQuery {
    /// A sequence number: 0 to 2^63 - 1.
    before: Option<u64>,
    limit: Option<u32>,
}

async fn page(
    State(state): State<AppState>,
    _admin: AuthUser,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = match query.limit {
        None => 100,
        Some(limit) if (1..=MAX_PAGE).contains(&limit) => limit,
        Some(_) => {
            return Err(ApiError::BadRequest(format!(
                "limit must be a whole number from 1 to {MAX_PAGE}"
            )));
        }
    };
    let before = query
        .before
        .map(|before| {
            i64::try_from(before).map_err(|_| {
                ApiError::BadRequest(format!(
                    "before must be a sequence number up to {}",
                    i64::MAX
                ))
            })
        })
        .transpose()?;
    let events = state.store.audit_events(before, limit).await?;
    let next_before = (events.len() == limit as usize)
        .then(|| events.last().map(|event| event.seq))
        .flatten();
    Ok(Json(AuditPage {
        events: events.iter().map(AuditEventView::new).collect(),
        next_before,
    }))
}
