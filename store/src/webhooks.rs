//! Job callbacks' outbox: deliveries claimed by dispatchers and settled, and the secrets
//! that sign them.

use std::time::Duration;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{JobStatus, Millis, StoreError, now_millis};

/// A job's end to post to the callback its launch named: claimed by one dispatcher for a
/// while, then delivered, tried again later, or given up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookDelivery {
    /// The message's id (`webhook-id`), the same on every attempt.
    pub id: String,
    pub job_id: String,
    pub owner_id: String,
    pub url: String,
    pub status: JobStatus,
    /// This attempt's number, 1 for the first.
    pub attempts: u32,
    pub created_at: Millis,
}

/// What one [`Webhooks::claim_webhooks`] may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookClaim {
    /// The most deliveries claimed.
    pub deliveries: u32,
    /// The most deliveries in flight to one destination (the callback URL's scheme, host and
    /// port), counting those every dispatcher already holds.
    pub per_destination: u32,
    /// How long the claimed deliveries are the claimer's.
    pub hold: Duration,
}

/// How an attempt to deliver a webhook went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookOutcome {
    Delivered,
    RetryAt { at: Millis, error: String },
    GiveUp { error: String },
}

/// Webhooks: the deliveries of job callbacks and their signing secrets.
#[async_trait]
pub trait Webhooks: Send + Sync + 'static {
    /// Claims webhook deliveries that are due, fairly between owners and within the bound per
    /// destination, for the claim's `hold`: no other dispatcher takes them meanwhile, and a
    /// dispatcher that dies lets them come due again after it.
    async fn claim_webhooks(
        &self,
        claim: &WebhookClaim,
    ) -> Result<Vec<WebhookDelivery>, StoreError>;

    /// Records how a claimed delivery's attempt went.
    async fn settle_webhook(&self, id: &str, outcome: &WebhookOutcome) -> Result<(), StoreError>;

    /// A user's or a shared project's webhook signing secret, made on first use, or a new
    /// one with `rotate`; `None` for no such user or project.
    async fn webhook_secret(
        &self,
        holder: SecretHolder<'_>,
        fresh: &str,
        rotate: bool,
    ) -> Result<Option<String>, StoreError>;
}

/// Whose secret signs a job's callbacks: its owner's, or its shared project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretHolder<'a> {
    User(&'a str),
    Project(&'a str),
}

#[async_trait]
impl<B> Webhooks for B
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    for<'a> &'a [u8]: Param<'a, B::Db>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    Vec<u8>: Column<B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<f64>: Param<'a, B::Db>,
    for<'a> Option<bool>: Param<'a, B::Db>,
    for<'a> Option<String>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
    for<'a> Option<&'a String>: Param<'a, B::Db>,
{
    async fn claim_webhooks(
        &self,
        claim: &WebhookClaim,
    ) -> Result<Vec<WebhookDelivery>, StoreError> {
        let now = now_millis();
        let until =
            now.saturating_add(Millis::try_from(claim.hold.as_millis()).unwrap_or(Millis::MAX));
        let mut transaction = self.begin_write().await?;
        if let Some(lock) = B::LOCK_WEBHOOK_CLAIMS {
            sqlx::query(lock).execute(&mut *transaction).await?;
        }
        let rows = sqlx::query(sql::CLAIM_WEBHOOKS)
            .bind(until)
            .bind(now)
            .bind(i64::from(claim.deliveries))
            .bind(i64::from(claim.per_destination))
            .fetch_all(&mut *transaction)
            .await?;
        transaction.commit().await?;
        rows::all(&rows)
    }

    async fn settle_webhook(&self, id: &str, outcome: &WebhookOutcome) -> Result<(), StoreError> {
        let now = now_millis();
        let query = match outcome {
            WebhookOutcome::Delivered => sqlx::query(sql::WEBHOOK_DELIVERED).bind(id).bind(now),
            WebhookOutcome::RetryAt { at, error } => sqlx::query(sql::WEBHOOK_RETRY)
                .bind(id)
                .bind(*at)
                .bind(error.as_str()),
            WebhookOutcome::GiveUp { error } => sqlx::query(sql::WEBHOOK_GIVE_UP)
                .bind(id)
                .bind(now)
                .bind(error.as_str()),
        };
        query.execute(self.writer()).await?;
        Ok(())
    }

    async fn webhook_secret(
        &self,
        holder: SecretHolder<'_>,
        fresh: &str,
        rotate: bool,
    ) -> Result<Option<String>, StoreError> {
        let (set, read, id) = match holder {
            SecretHolder::User(id) => (sql::SET_WEBHOOK_SECRET, sql::WEBHOOK_SECRET, id),
            SecretHolder::Project(id) => (
                sql::SET_PROJECT_WEBHOOK_SECRET,
                sql::PROJECT_WEBHOOK_SECRET,
                id,
            ),
        };
        let mut transaction = self.begin_write().await?;
        sqlx::query(set)
            .bind(id)
            .bind(fresh)
            .bind(rotate)
            .execute(&mut *transaction)
            .await?;
        let secret: Option<Option<String>> = sqlx::query_scalar(read)
            .bind(id)
            .fetch_optional(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(secret.flatten())
    }
}

/// The columns `CLAIM_WEBHOOKS` returns.
impl FromRow for WebhookDelivery {
    fn from_row(row: &impl Columns) -> Result<WebhookDelivery, StoreError> {
        Ok(WebhookDelivery {
            id: row.text("id")?,
            job_id: row.text("job_id")?,
            owner_id: row.text("owner_id")?,
            url: row.text("url")?,
            status: JobStatus::parse(&row.text("status")?)?,
            attempts: u32::try_from(row.integer("attempts")?).unwrap_or(u32::MAX),
            created_at: row.integer("created_at")?,
        })
    }
}
