//! The embedded store's side of [`Backend`]: what SQLite does its own way (the claim, the
//! reaper, recovery at start, telling this process what changed), below its group commit's
//! writer (`sqlite_writer`) and the opening of the file (`sqlite`).

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Sqlite;
use sqlx::sqlite::{SqlitePool, SqliteQueryResult};

use super::backend::Backend;
use super::backend::ClaimFilter;
use super::batch::{Batched, Batcher};
use super::outcome::ReapedEnds;
use super::rows::Columns;
use super::sql;
use super::statement::{SqlxConnection, Statement, WriteConnection};
use super::types::{JobChange, JobEvents, StoreError, now_millis};

/// How long a writer waits for another to commit: the group commit's, the sqlx writer's,
/// another process's.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Claims the oldest pending jobs, of the use cases `condition` lets through;
/// `BEGIN IMMEDIATE` around the batch makes it exclusive. It returns the columns of a
/// [`super::ClaimedJob`].
fn claim(condition: &str) -> String {
    format!(
        "UPDATE jobs
         SET status = 'RUNNING', attempts = attempts + 1, lease_token = lease_token + 1,
             lease_expires_at = $1, started = FALSE
         WHERE id IN (SELECT id FROM jobs WHERE status = 'PENDING' AND race IS NULL {condition}
                      ORDER BY fair_key, id LIMIT $2)
         RETURNING id, owner_id, COALESCE(project_id, owner_id) AS project_id, problem, input, options, attempts, lease_token, created_at, data_file_id, data_blob_id, data_media_type, plugin_version, plugin_digest, version_requested, race_of"
    )
}

static CLAIM: LazyLock<String> = LazyLock::new(|| claim(""));
static CLAIM_ONLY: LazyLock<String> =
    LazyLock::new(|| claim("AND problem IN (SELECT value FROM json_each($3))"));
static CLAIM_EXCEPT: LazyLock<String> =
    LazyLock::new(|| claim("AND problem NOT IN (SELECT value FROM json_each($3))"));

const ABANDON_EXECUTIONS: &str = "UPDATE executions
     SET status = 'ABANDONED', ended_at = $1, error_code = 'worker_lost', error_message = $2
     WHERE status = 'RUNNING' AND job_id IN (SELECT value FROM json_each($3))";

#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(super) writer: SqlitePool,
    pub(super) readers: SqlitePool,
    pub(super) batcher: Batcher,
    /// Where committed changes are told: one process, so directly.
    pub(super) events: Arc<OnceLock<Arc<dyn JobEvents>>>,
}

/// Tells `events`, if set, what a committed transaction changed.
pub(super) fn tell(events: &OnceLock<Arc<dyn JobEvents>>, changes: &[JobChange]) {
    if let Some(events) = events.get()
        && !changes.is_empty()
    {
        events.jobs_changed(changes);
    }
}

impl Batched for SqliteStore {
    fn batcher(&self) -> &Batcher {
        &self.batcher
    }
}

#[async_trait]
impl Backend for SqliteStore {
    type Db = Sqlite;

    fn claim_statement(filter: &ClaimFilter) -> &'static str {
        match filter {
            ClaimFilter::All => CLAIM.as_str(),
            ClaimFilter::Only(_) => CLAIM_ONLY.as_str(),
            ClaimFilter::Except(_) => CLAIM_EXCEPT.as_str(),
        }
    }

    // One statement on the one writer connection: claims are serial already.
    const LOCK_WEBHOOK_CLAIMS: Option<&'static str> = None;
    const ANNOUNCE_PLUGINS: Option<&'static str> = None;
    const ANNOUNCE_REPLICAS: Option<&'static str> = None;

    const LOCK_USER: Option<&'static str> = None;
    const RECLAIM_ALLOWANCES: Option<&'static str> = None;
    const LOCK_PROJECT: Option<&'static str> = None;
    // SQLite's statements write one table each.
    const FINISH_IN_ONE: bool = false;

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    fn writer(&self) -> &SqlitePool {
        &self.writer
    }

    fn readers(&self) -> &SqlitePool {
        &self.readers
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'_, Sqlite>, StoreError> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }

    async fn reap(&self, max_attempts: u32, every_running: bool) -> Result<u64, StoreError> {
        let now = now_millis();
        let mut transaction = self.begin_write().await?;
        let ends = ReapedEnds::at(now);
        let reap = Statement::new(sql::REAP_JOBS)
            .bind(i64::from(max_attempts))
            .bind(now)
            .bind(every_running);
        let changes = SqlxConnection::<Self>(&mut transaction)
            .fetch_all(ends.bind(reap))
            .await?
            .iter()
            .map(|row| {
                Ok(JobChange {
                    owner_id: row.text("owner_id")?,
                    job_id: row.text("id")?,
                    project_id: row.text("project_id")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        if changes.is_empty() {
            return Ok(0);
        }
        let reaped: Vec<&str> = changes
            .iter()
            .map(|change| change.job_id.as_str())
            .collect();
        for job_id in &reaped {
            sqlx::query(sql::ABANDON_UNSTARTED)
                .bind(uuid::Uuid::now_v7().to_string())
                .bind(now)
                .bind(sql::LOST_BEFORE_START)
                .bind(job_id)
                .execute(&mut *transaction)
                .await?;
        }
        let message = if every_running {
            "the server stopped while this execution ran"
        } else {
            sql::WORKER_LOST
        };
        sqlx::query(ABANDON_EXECUTIONS)
            .bind(now)
            .bind(message)
            .bind(serde_json::to_string(&reaped).map_err(|error| {
                StoreError::Corrupt(format!("cannot list reaped jobs: {error}"))
            })?)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        tell(&self.events, &changes);
        Ok(reaped.len() as u64)
    }

    /// One process: the API tells its own workers directly.
    async fn announce_cancel(
        _transaction: &mut sqlx::Transaction<'_, Sqlite>,
        _job_id: &str,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    fn label_condition(key: usize, value: usize) -> String {
        format!("json_extract(labels, '$.\"' || ${key} || '\"') = ${value}")
    }

    /// One process: told once committed, in [`Backend::changes_committed`].
    async fn announce_changes(
        _transaction: &mut sqlx::Transaction<'_, Sqlite>,
        _changes: &[JobChange],
    ) -> Result<(), StoreError> {
        Ok(())
    }

    fn changes_committed(&self, changes: &[JobChange]) {
        tell(&self.events, changes);
    }

    /// One process owns the file: every `RUNNING` job, every unfinished upload and every
    /// claimed webhook delivery was left by this server's last run.
    async fn recover(&self, max_attempts: u32) -> Result<u64, StoreError> {
        let uploads = sqlx::query("DELETE FROM blobs WHERE sha256 IS NULL")
            .execute(&self.writer)
            .await?;
        if uploads.rows_affected() > 0 {
            tracing::info!(
                uploads = uploads.rows_affected(),
                "deleted uploads cut off by the last stop"
            );
        }
        // Deliveries the last run had claimed (or scheduled) are due now: none is in flight.
        sqlx::query(
            "UPDATE webhook_deliveries SET next_attempt_at = 0, claimed_until = NULL
             WHERE delivered_at IS NULL AND given_up_at IS NULL",
        )
        .execute(&self.writer)
        .await?;
        self.reap(max_attempts, true).await
    }

    async fn watch(&self, events: Arc<dyn JobEvents>) {
        let _ = self.events.set(events);
    }
}
