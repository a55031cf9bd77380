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
use crate::store::{Actor, AuditEvent};

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

/// Adds an entry done by `user` now: its name as the actor and, for a request made with an
/// API key, the key (`"api_key": "cl_<id>"`) in the detail, so the log says which script
/// did it.
pub async fn record_by(
    state: &AppState,
    user: &AuthUser,
    action: &str,
    target: &str,
    detail: Value,
) -> Result<(), ApiError> {
    record(
        state,
        &user.username,
        action,
        target,
        with_key(user, detail),
    )
    .await
}

/// The entry `user` doing `action` now makes, for a change that writes it in its own
/// transaction ([`Actor::audit`](crate::store::Actor)).
pub fn event_by(user: &AuthUser, action: &str, target: &str, detail: Value) -> AuditEvent {
    AuditEvent::now(&user.username, action, target, with_key(user, detail))
}

/// The actor of a plugin registry change `user` makes on this replica, with its audit entry.
pub fn registry_actor(
    state: &AppState,
    user: &AuthUser,
    action: &str,
    target: &str,
    detail: Value,
) -> Actor {
    Actor {
        user: Some(user.username.clone()),
        replica: state.plugins.replica().to_owned(),
        audit: Some(event_by(user, action, target, detail)),
    }
}

/// The detail with the key the request came with, if it came with one.
fn with_key(user: &AuthUser, detail: Value) -> Value {
    let Some(key) = &user.key else {
        return detail;
    };
    let key = Value::String(format!("cl_{}", key.id));
    match detail {
        Value::Object(mut fields) => {
            fields.insert("api_key".into(), key);
            Value::Object(fields)
        }
        other => serde_json::json!({"detail": other, "api_key": key}),
    }
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
