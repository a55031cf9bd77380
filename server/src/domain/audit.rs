//! How a change adds to the audit log: users made, changed and deleted, keys made and
//! revoked, plugin versions published, promoted and retired, and bursts of failed logins;
//! the entry names its actor and, for a request made with an API key, the key.

use serde_json::Value;

use super::ApiError;
use crate::auth::AuthUser;
use crate::state::Services;
use crate::store::{Actor, AuditEvent};

/// Adds an entry done by `actor` now.
pub async fn record(
    state: &Services,
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
    state: &Services,
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
    state: &Services,
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
pub fn record_later(state: &Services, actor: &str, action: &str, target: &str, detail: Value) {
    let event = AuditEvent::now(actor, action, target, detail);
    let store = state.store.clone();
    tokio::spawn(async move {
        if let Err(error) = store.record_audit(&event).await {
            tracing::warn!(%error, action = %event.action, "cannot record an audit event");
        }
    });
}
