//! The audit log: who did what to whom, kept for administrators to page through.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{Millis, StoreError, now_millis};

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    /// Its place in the log, assigned when it is recorded (0 before).
    pub seq: i64,
    pub at: Millis,
    /// A user name, or `host` for a command run on the host.
    pub actor: String,
    /// `user.created`, `api_key.revoked`, `plugin.published`...
    pub action: String,
    /// Whom or what it was done to: a user name, a key's prefix, `name version`...
    pub target: String,
    /// What else there is to say, as JSON.
    pub detail: String,
}

impl AuditEvent {
    /// The same event with one more field in its detail (an object; a detail that is not
    /// one is kept under `detail`).
    pub fn with_detail(&self, field: &str, value: serde_json::Value) -> AuditEvent {
        let detail = match serde_json::from_str(&self.detail) {
            Ok(serde_json::Value::Object(mut fields)) => {
                fields.insert(field.to_owned(), value);
                serde_json::Value::Object(fields)
            }
            Ok(other) => serde_json::json!({"detail": other, field: value}),
            Err(_) => serde_json::json!({field: value}),
        };
        AuditEvent {
            detail: detail.to_string(),
            ..self.clone()
        }
    }

    /// An event happening now.
    pub fn now(actor: &str, action: &str, target: &str, detail: serde_json::Value) -> AuditEvent {
        AuditEvent {
            seq: 0,
            at: now_millis(),
            actor: actor.to_owned(),
            action: action.to_owned(),
            target: target.to_owned(),
            detail: detail.to_string(),
        }
    }
}

#[async_trait]
pub trait Audit: Send + Sync + 'static {
    async fn record_audit(&self, event: &AuditEvent) -> Result<(), StoreError>;

    /// At most `limit` entries before `before` (a seq), newest first.
    async fn audit_events(
        &self,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError>;
}

#[async_trait]
impl<B> Audit for B
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> i64: Param<'a, B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
{
    async fn record_audit(&self, event: &AuditEvent) -> Result<(), StoreError> {
        sqlx::query(sql::INSERT_AUDIT_EVENT)
            .bind(event.at)
            .bind(event.actor.as_str())
            .bind(event.action.as_str())
            .bind(event.target.as_str())
            .bind(event.detail.as_str())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    async fn audit_events(
        &self,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        let rows = sqlx::query(sql::AUDIT_EVENTS)
            .bind(before)
            .bind(i64::from(limit))
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows)
    }
}

/// Records `event` in a transaction of the caller's: what a change writes with itself.
pub(super) async fn insert_audit<B>(
    transaction: &mut sqlx::Transaction<'_, B::Db>,
    event: &AuditEvent,
) -> Result<(), StoreError>
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: Param<'a, B::Db>,
    for<'a> i64: Param<'a, B::Db>,
{
    sqlx::query(sql::INSERT_AUDIT_EVENT)
        .bind(event.at)
        .bind(event.actor.as_str())
        .bind(event.action.as_str())
        .bind(event.target.as_str())
        .bind(event.detail.as_str())
        .execute(&mut **transaction)
        .await?;
    Ok(())
}

/// `AUDIT_EVENTS`' columns.
impl FromRow for AuditEvent {
    fn from_row(row: &impl Columns) -> Result<AuditEvent, StoreError> {
        Ok(AuditEvent {
            seq: row.integer("seq")?,
            at: row.integer("at")?,
            actor: row.text("actor")?,
            action: row.text("action")?,
            target: row.text("target")?,
            detail: row.text("detail")?,
        })
    }
}
