//! The embedded store: one SQLite file in WAL mode, one writer connection (SQLite allows one
//! writer at a time; a pool of them would only queue on the file lock) and a few readers.
//! One process owns the file: there is no other process to wake or to share leases with.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, SqliteConnection};

use super::batch::{BatchWriter, Batcher, Outcome, Write};
use super::{
    ClaimedJob, ExecutionEnd, Inserted, JobOutput, JobRecord, JobStatus, JobStore, JobSummary,
    Lease, Millis, NewJob, PluginRef, Progress, QueuedWrite, StoreError, User, claim_from_row,
    execution_from_row, now_millis, sql, summary_from_row, user_conflict,
};
use crate::jobs::WorkSignal;

/// The schema, one script per version, applied in order at start.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/sqlite/0001_initial.sql")),
    (
        2,
        include_str!("../../migrations/sqlite/0002_leases_idempotency.sql"),
    ),
];

/// Claims the oldest pending job; `BEGIN IMMEDIATE` around the batch makes it exclusive.
const CLAIM: &str = "UPDATE jobs
     SET status = 'RUNNING', attempts = attempts + 1, lease_token = lease_token + 1,
         lease_expires_at = $1
     WHERE id IN (SELECT id FROM jobs WHERE status = 'PENDING' ORDER BY created_at, id LIMIT $2)
     RETURNING id, problem, input, options, attempts, lease_token, created_at";

const ABANDON_EXECUTIONS: &str = "UPDATE executions
     SET status = 'ABANDONED', ended_at = $1, error_code = 'worker_lost', error_message = $2
     WHERE status = 'RUNNING' AND job_id IN (SELECT value FROM json_each($3))";

#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    readers: SqlitePool,
    batcher: Batcher,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a job is acknowledged only once it survives a power loss, not just a crash.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .connect_with(options.clone())
            .await?;
        migrate(&writer).await?;
        let readers = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await?;
        let batcher = Batcher::start(Arc::new(SqliteWriter {
            pool: writer.clone(),
        }));
        Ok(SqliteStore {
            writer,
            readers,
            batcher,
        })
    }

    async fn reap(&self, max_attempts: u32, every_running: bool) -> Result<u64, StoreError> {
        let now = now_millis();
        let mut transaction = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        let reaped: Vec<String> = sqlx::query_scalar(sql::REAP_JOBS)
            .bind(i64::from(max_attempts))
            .bind(now)
            .bind(every_running)
            .fetch_all(&mut *transaction)
            .await?;
        if reaped.is_empty() {
            return Ok(0);
        }
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
        Ok(reaped.len() as u64)
    }
}

async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY,
             applied_at INTEGER NOT NULL
         )",
    )
    .execute(pool)
    .await?;
    for &(version, script) in MIGRATIONS {
        let mut transaction = pool.begin_with("BEGIN IMMEDIATE").await?;
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = $1")
                .bind(version)
                .fetch_optional(&mut *transaction)
                .await?;
        if applied.is_some() {
            continue;
        }
        sqlx::raw_sql(script)
            .execute(&mut *transaction)
            .await
            .map_err(|source| StoreError::Migration { version, source })?;
        sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)")
            .bind(version)
            .bind(now_millis())
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        tracing::info!(version, "applied database migration");
    }
    Ok(())
}

/// Writes batches on the one writer connection, each in one `BEGIN IMMEDIATE` transaction.
struct SqliteWriter {
    pool: SqlitePool,
}

#[async_trait]
impl BatchWriter for SqliteWriter {
    async fn write_batch(&self, writes: &[Write]) -> Result<Vec<Outcome>, StoreError> {
        let mut transaction = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut outcomes = Vec::with_capacity(writes.len());
        for write in writes {
            outcomes.push(apply(&mut transaction, write).await?);
        }
        transaction.commit().await?;
        Ok(outcomes)
    }
}

async fn apply(connection: &mut SqliteConnection, write: &Write) -> Result<Outcome, StoreError> {
    Ok(match write {
        Write::InsertJob(job) => Outcome::Inserted(insert_job(connection, job).await?),
        Write::Claim {
            lease_expires_at,
            limit,
        } => {
            let mut claimed = sqlx::query(CLAIM)
                .bind(lease_expires_at)
                .bind(i64::from(*limit))
                .fetch_all(&mut *connection)
                .await?
                .iter()
                .map(claim_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            // RETURNING has no order: oldest first, as the queue promises.
            claimed.sort_by(|a, b| {
                (a.created_at, &a.lease.job_id).cmp(&(b.created_at, &b.lease.job_id))
            });
            Outcome::Claimed(claimed)
        }
        Write::Release { lease } => {
            let released = sqlx::query(sql::RELEASE_UNSTARTED)
                .bind(&lease.job_id)
                .bind(lease.token)
                .execute(&mut *connection)
                .await?;
            Outcome::Held(released.rows_affected() == 1)
        }
        Write::Start {
            lease,
            execution_id,
            attempt,
            plugin,
            started_at,
        } => {
            let inserted = sqlx::query(sql::START_EXECUTION)
                .bind(execution_id)
                .bind(i64::from(*attempt))
                .bind(&plugin.name)
                .bind(&plugin.version)
                .bind(&plugin.digest)
                .bind(started_at)
                .bind(&lease.job_id)
                .bind(lease.token)
                .execute(&mut *connection)
                .await?;
            Outcome::Held(inserted.rows_affected() == 1)
        }
        Write::Progress {
            lease,
            execution_id,
            progress,
        } => {
            let updated = sqlx::query(sql::RECORD_PROGRESS)
                .bind(progress.fraction)
                .bind(&progress.message)
                .bind(execution_id)
                .bind(&lease.job_id)
                .bind(lease.token)
                .execute(&mut *connection)
                .await?;
            Outcome::Held(updated.rows_affected() == 1)
        }
        Write::Heartbeat {
            leases,
            lease_expires_at,
        } => {
            let mut lost = Vec::new();
            for lease in leases {
                let updated = sqlx::query(sql::HEARTBEAT)
                    .bind(lease_expires_at)
                    .bind(&lease.job_id)
                    .bind(lease.token)
                    .execute(&mut *connection)
                    .await?;
                if updated.rows_affected() == 0 {
                    lost.push(lease.clone());
                }
            }
            Outcome::Lost(lost)
        }
        Write::Finish { lease, end } => Outcome::Held(finish(connection, lease, end).await?),
    })
}

async fn insert_job(
    connection: &mut SqliteConnection,
    job: &NewJob,
) -> Result<Inserted, StoreError> {
    let inserted = sqlx::query(sql::INSERT_JOB)
        .bind(&job.id)
        .bind(&job.owner_id)
        .bind(&job.problem)
        .bind(&job.input)
        .bind(&job.options)
        .bind(job.created_at)
        .bind(job.idempotency.as_ref().map(|idempotency| &idempotency.key))
        .bind(
            job.idempotency
                .as_ref()
                .map(|idempotency| &idempotency.request_hash),
        )
        .execute(&mut *connection)
        .await?;
    if inserted.rows_affected() == 1 {
        return Ok(Inserted::Created);
    }
    let existing = match &job.idempotency {
        Some(idempotency) => {
            sqlx::query(sql::JOB_BY_IDEMPOTENCY_KEY)
                .bind(&job.owner_id)
                .bind(&idempotency.key)
                .fetch_optional(&mut *connection)
                .await?
        }
        None => None,
    };
    match existing {
        Some(row) => Ok(Inserted::Existing {
            job_id: row.try_get("id")?,
            request_hash: row.try_get("request_hash")?,
        }),
        None => Err(StoreError::Conflict(format!("job {}", job.id))),
    }
}

async fn finish(
    connection: &mut SqliteConnection,
    lease: &Lease,
    end: &ExecutionEnd,
) -> Result<bool, StoreError> {
    let job = sqlx::query(sql::FINISH_JOB)
        .bind(end.job_status.as_str())
        .bind(end.job_ended_at())
        .bind(&lease.job_id)
        .bind(lease.token)
        .execute(&mut *connection)
        .await?;
    if job.rows_affected() != 1 {
        // The lease was lost: someone else owns the job now. Change nothing.
        return Ok(false);
    }
    sqlx::query(sql::FINISH_EXECUTION)
        .bind(end.status.as_str())
        .bind(end.ended_at)
        .bind(end.error.as_ref().map(|error| error.code.as_str()))
        .bind(end.error.as_ref().map(|error| error.message.as_str()))
        .bind(&end.log_tail)
        .bind(end.log_truncated)
        .bind(&end.execution_id)
        .bind(&lease.job_id)
        .execute(&mut *connection)
        .await?;
    if let Some(output) = &end.output {
        sqlx::query(sql::INSERT_OUTPUT)
            .bind(&lease.job_id)
            .bind(output)
            .execute(&mut *connection)
            .await?;
    }
    Ok(true)
}

#[async_trait]
impl JobStore for SqliteStore {
    async fn create_user(&self, username: &str, password_hash: &str) -> Result<User, StoreError> {
        let user = User::new(username, password_hash);
        sqlx::query(sql::INSERT_USER)
            .bind(&user.id)
            .bind(&user.username)
            .bind(&user.password_hash)
            .bind(now_millis())
            .execute(&self.writer)
            .await
            .map_err(|error| user_conflict(error, username))?;
        Ok(user)
    }

    async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
        let row = sqlx::query(sql::USER_BY_NAME)
            .bind(username)
            .fetch_optional(&self.readers)
            .await?;
        row.map(|row| {
            Ok(User {
                id: row.try_get("id")?,
                username: row.try_get("username")?,
                password_hash: row.try_get("password_hash")?,
            })
        })
        .transpose()
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(sql::USER_COUNT)
            .fetch_one(&self.writer)
            .await?;
        Ok(count as u64)
    }

    async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError> {
        self.batcher.insert_job(job).await
    }

    async fn job_by_idempotency_key(
        &self,
        owner_id: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let row = sqlx::query(sql::JOB_BY_IDEMPOTENCY_KEY)
            .bind(owner_id)
            .bind(key)
            .fetch_optional(&self.readers)
            .await?;
        row.map(|row| Ok((row.try_get("id")?, row.try_get("request_hash")?)))
            .transpose()
    }

    async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
        // One read transaction, so the job and its executions are one consistent snapshot.
        let mut transaction = self.readers.begin().await?;
        let Some(row) = sqlx::query(sql::JOB)
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(&mut *transaction)
            .await?
        else {
            return Ok(None);
        };
        let executions = sqlx::query(sql::EXECUTIONS)
            .bind(job_id)
            .fetch_all(&mut *transaction)
            .await?
            .iter()
            .map(execution_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        transaction.commit().await?;
        Ok(Some(JobRecord::new(summary_from_row(&row)?, executions)))
    }

    async fn pending_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(sql::PENDING_COUNT)
            .fetch_one(&self.readers)
            .await?;
        Ok(count as u64)
    }

    async fn jobs(
        &self,
        owner_id: &str,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<JobSummary>, StoreError> {
        sqlx::query(sql::JOBS_PAGE)
            .bind(owner_id)
            .bind(before)
            .bind(i64::from(limit))
            .fetch_all(&self.readers)
            .await?
            .iter()
            .map(summary_from_row)
            .collect()
    }

    async fn job_output(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobOutput>, StoreError> {
        let row = sqlx::query(sql::JOB_OUTPUT)
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(&self.readers)
            .await?;
        row.map(|row| {
            Ok(JobOutput::from_parts(
                JobStatus::parse(&row.try_get::<String, _>("status")?)?,
                row.try_get("output")?,
            ))
        })
        .transpose()
    }

    async fn claim_jobs(&self, lease: Duration, limit: u32) -> Result<Vec<ClaimedJob>, StoreError> {
        self.batcher
            .claim(now_millis() + lease.as_millis() as Millis, limit)
            .await
    }

    fn release_unstarted(&self, lease: &Lease) -> QueuedWrite {
        self.batcher.queue(Write::Release {
            lease: lease.clone(),
        })
    }

    async fn heartbeat(&self, leases: &[Lease], lease: Duration) -> Result<Vec<Lease>, StoreError> {
        self.batcher
            .heartbeat(leases, now_millis() + lease.as_millis() as Millis)
            .await
    }

    fn start_execution(
        &self,
        lease: &Lease,
        execution_id: &str,
        attempt: u32,
        plugin: &PluginRef,
        started_at: Millis,
    ) -> QueuedWrite {
        self.batcher.queue(Write::Start {
            lease: lease.clone(),
            execution_id: execution_id.to_owned(),
            attempt,
            plugin: plugin.clone(),
            started_at,
        })
    }

    async fn record_progress(
        &self,
        lease: &Lease,
        execution_id: &str,
        progress: &Progress,
    ) -> Result<bool, StoreError> {
        self.batcher
            .queue(Write::Progress {
                lease: lease.clone(),
                execution_id: execution_id.to_owned(),
                progress: progress.clone(),
            })
            .lease_held()
            .await
    }

    fn finish_execution(&self, lease: &Lease, end: &ExecutionEnd) -> QueuedWrite {
        self.batcher.queue(Write::Finish {
            lease: lease.clone(),
            end: end.clone(),
        })
    }

    async fn reap_expired(&self, max_attempts: u32) -> Result<u64, StoreError> {
        self.reap(max_attempts, false).await
    }

    async fn recover_interrupted(&self, max_attempts: u32) -> Result<u64, StoreError> {
        self.reap(max_attempts, true).await
    }

    async fn purge_finished(&self, ended_before: Millis, batch: u32) -> Result<u64, StoreError> {
        let deleted = sqlx::query(sql::PURGE_FINISHED)
            .bind(ended_before)
            .bind(i64::from(batch))
            .execute(&self.writer)
            .await?;
        Ok(deleted.rows_affected())
    }

    async fn watch_new_jobs(&self, _signal: Arc<WorkSignal>) {}
}
