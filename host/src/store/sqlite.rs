//! The embedded store: one SQLite file in WAL mode, one writer connection (SQLite allows one
//! writer at a time; a pool of them would only queue on the file lock) and a few readers.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};

use super::{
    ClaimedJob, ErrorCode, ExecutionEnd, ExecutionError, ExecutionRecord, ExecutionStatus,
    JobOutput, JobRecord, JobStatus, JobStore, JobSummary, Lease, Millis, NewJob, PluginRef,
    Progress, StoreError, User, now_millis,
};

/// The schema, one script per version, applied in order at start.
const MIGRATIONS: &[(i64, &str)] = &[(1, include_str!("../../migrations/sqlite/0001_initial.sql"))];

#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    readers: SqlitePool,
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
        Ok(SqliteStore { writer, readers })
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
            sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = ?")
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
        sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)")
            .bind(version)
            .bind(now_millis())
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        tracing::info!(version, "applied database migration");
    }
    Ok(())
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|database| database.is_unique_violation())
}

fn execution_from_row(row: &SqliteRow) -> Result<ExecutionRecord, StoreError> {
    let progress = match row.try_get::<Option<f64>, _>("progress_fraction")? {
        Some(fraction) => Some(Progress {
            fraction,
            message: row
                .try_get::<Option<String>, _>("progress_message")?
                .unwrap_or_default(),
        }),
        None => None,
    };
    let error = match row.try_get::<Option<String>, _>("error_code")? {
        Some(code) => Some(ExecutionError {
            code: ErrorCode::parse(&code)?,
            message: row
                .try_get::<Option<String>, _>("error_message")?
                .unwrap_or_default(),
        }),
        None => None,
    };
    Ok(ExecutionRecord {
        id: row.try_get("id")?,
        attempt: row.try_get::<u32, _>("attempt")?,
        status: ExecutionStatus::parse(row.try_get("status")?)?,
        plugin: PluginRef {
            name: row.try_get("plugin_name")?,
            version: row.try_get("plugin_version")?,
            digest: row.try_get("plugin_digest")?,
        },
        started_at: row.try_get("started_at")?,
        ended_at: row.try_get("ended_at")?,
        progress,
        error,
        log_tail: row.try_get("log_tail")?,
        log_truncated: row.try_get::<bool, _>("log_truncated")?,
    })
}

#[async_trait]
impl JobStore for SqliteStore {
    async fn create_user(&self, username: &str, password_hash: &str) -> Result<User, StoreError> {
        let user = User {
            id: uuid::Uuid::now_v7().to_string(),
            username: username.to_owned(),
            password_hash: password_hash.to_owned(),
        };
        sqlx::query(
            "INSERT INTO users (id, username, password_hash, created_at) VALUES (?, ?, ?, ?)",
        )
        .bind(&user.id)
        .bind(&user.username)
        .bind(&user.password_hash)
        .bind(now_millis())
        .execute(&self.writer)
        .await
        .map_err(|error| {
            if is_unique_violation(&error) {
                StoreError::Conflict(format!("user {username:?}"))
            } else {
                StoreError::Database(error)
            }
        })?;
        Ok(user)
    }

    async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
        let row = sqlx::query("SELECT id, username, password_hash FROM users WHERE username = ?")
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
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(&self.writer)
            .await?;
        Ok(count as u64)
    }

    async fn insert_job(&self, job: &NewJob) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO jobs (id, owner_id, problem, input, options, status, created_at)
             VALUES (?, ?, ?, ?, ?, 'PENDING', ?)",
        )
        .bind(&job.id)
        .bind(&job.owner_id)
        .bind(&job.problem)
        .bind(&job.input)
        .bind(&job.options)
        .bind(job.created_at)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
        // One read transaction, so the job and its executions are one consistent snapshot.
        let mut transaction = self.readers.begin().await?;
        let Some(row) = sqlx::query(
            "SELECT id, problem, status, created_at, ended_at FROM jobs
             WHERE id = ? AND owner_id = ?",
        )
        .bind(job_id)
        .bind(owner_id)
        .fetch_optional(&mut *transaction)
        .await?
        else {
            return Ok(None);
        };
        let executions = sqlx::query("SELECT * FROM executions WHERE job_id = ? ORDER BY attempt")
            .bind(job_id)
            .fetch_all(&mut *transaction)
            .await?
            .iter()
            .map(execution_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        transaction.commit().await?;
        Ok(Some(JobRecord {
            id: row.try_get("id")?,
            problem: row.try_get("problem")?,
            status: JobStatus::parse(row.try_get("status")?)?,
            created_at: row.try_get("created_at")?,
            ended_at: row.try_get("ended_at")?,
            executions,
        }))
    }

    async fn pending_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status = 'PENDING'")
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
        // Ids are UUIDv7, so their order is their creation order.
        let rows = sqlx::query(
            "SELECT id, problem, status, created_at, ended_at FROM jobs
             WHERE owner_id = ?1 AND (?2 IS NULL OR id < ?2)
             ORDER BY id DESC LIMIT ?3",
        )
        .bind(owner_id)
        .bind(before)
        .bind(limit)
        .fetch_all(&self.readers)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(JobSummary {
                    id: row.try_get("id")?,
                    problem: row.try_get("problem")?,
                    status: JobStatus::parse(row.try_get("status")?)?,
                    created_at: row.try_get("created_at")?,
                    ended_at: row.try_get("ended_at")?,
                })
            })
            .collect()
    }

    async fn job_output(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobOutput>, StoreError> {
        let row = sqlx::query(
            "SELECT jobs.status, job_outputs.output FROM jobs
             LEFT JOIN job_outputs ON job_outputs.job_id = jobs.id
             WHERE jobs.id = ? AND jobs.owner_id = ?",
        )
        .bind(job_id)
        .bind(owner_id)
        .fetch_optional(&self.readers)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let status = JobStatus::parse(row.try_get("status")?)?;
        Ok(Some(match row.try_get::<Option<String>, _>("output")? {
            Some(output) if status == JobStatus::Completed => JobOutput::Completed(output),
            _ => JobOutput::NotCompleted(status),
        }))
    }

    async fn claim_next_job(&self, lease: Duration) -> Result<Option<ClaimedJob>, StoreError> {
        let now = now_millis();
        let expires_at = now + lease.as_millis() as Millis;
        let mut transaction = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        let row = sqlx::query(
            "UPDATE jobs
             SET status = 'RUNNING', attempts = attempts + 1, lease_token = lease_token + 1,
                 lease_expires_at = ?
             WHERE id = (SELECT id FROM jobs WHERE status = 'PENDING'
                         ORDER BY created_at, id LIMIT 1)
             RETURNING id, problem, input, options, attempts, lease_token",
        )
        .bind(expires_at)
        .fetch_optional(&mut *transaction)
        .await?;
        transaction.commit().await?;
        row.map(|row| {
            Ok(ClaimedJob {
                lease: Lease {
                    job_id: row.try_get("id")?,
                    token: row.try_get("lease_token")?,
                },
                problem: row.try_get("problem")?,
                input: row.try_get("input")?,
                options: row.try_get("options")?,
                attempt: row.try_get::<u32, _>("attempts")?,
            })
        })
        .transpose()
    }

    async fn start_execution(
        &self,
        lease: &Lease,
        execution_id: &str,
        attempt: u32,
        plugin: &PluginRef,
        started_at: Millis,
    ) -> Result<bool, StoreError> {
        let inserted = sqlx::query(
            "INSERT INTO executions (id, job_id, attempt, status, plugin_name, plugin_version,
                                     plugin_digest, started_at)
             SELECT ?, id, ?, 'RUNNING', ?, ?, ?, ? FROM jobs
             WHERE id = ? AND lease_token = ? AND status = 'RUNNING'",
        )
        .bind(execution_id)
        .bind(attempt)
        .bind(&plugin.name)
        .bind(&plugin.version)
        .bind(&plugin.digest)
        .bind(started_at)
        .bind(&lease.job_id)
        .bind(lease.token)
        .execute(&self.writer)
        .await?;
        Ok(inserted.rows_affected() == 1)
    }

    async fn record_progress(
        &self,
        lease: &Lease,
        execution_id: &str,
        progress: &Progress,
    ) -> Result<bool, StoreError> {
        let updated = sqlx::query(
            "UPDATE executions SET progress_fraction = ?, progress_message = ?
             WHERE id = ? AND status = 'RUNNING'
               AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = ? AND jobs.lease_token = ?)",
        )
        .bind(progress.fraction)
        .bind(&progress.message)
        .bind(execution_id)
        .bind(&lease.job_id)
        .bind(lease.token)
        .execute(&self.writer)
        .await?;
        Ok(updated.rows_affected() == 1)
    }

    async fn finish_execution(
        &self,
        lease: &Lease,
        end: &ExecutionEnd,
    ) -> Result<bool, StoreError> {
        let mut transaction = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        let job_ended_at = match end.job_status {
            JobStatus::Pending | JobStatus::Running => None,
            JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled => Some(end.ended_at),
        };
        let job = sqlx::query(
            "UPDATE jobs SET status = ?, ended_at = ?, lease_expires_at = NULL
             WHERE id = ? AND lease_token = ? AND status = 'RUNNING'",
        )
        .bind(end.job_status.as_str())
        .bind(job_ended_at)
        .bind(&lease.job_id)
        .bind(lease.token)
        .execute(&mut *transaction)
        .await?;
        if job.rows_affected() != 1 {
            // The lease was lost: someone else owns the job now. Change nothing.
            transaction.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "UPDATE executions
             SET status = ?1, ended_at = ?2, error_code = ?3, error_message = ?4, log_tail = ?5,
                 log_truncated = ?6,
                 progress_fraction = CASE WHEN ?1 = 'COMPLETED' THEN 1.0
                                          ELSE progress_fraction END
             WHERE id = ?7 AND job_id = ?8",
        )
        .bind(end.status.as_str())
        .bind(end.ended_at)
        .bind(end.error.as_ref().map(|error| error.code.as_str()))
        .bind(end.error.as_ref().map(|error| error.message.as_str()))
        .bind(&end.log_tail)
        .bind(end.log_truncated)
        .bind(&end.execution_id)
        .bind(&lease.job_id)
        .execute(&mut *transaction)
        .await?;
        if let Some(output) = &end.output {
            sqlx::query("INSERT INTO job_outputs (job_id, output) VALUES (?, ?)")
                .bind(&lease.job_id)
                .bind(output)
                .execute(&mut *transaction)
                .await?;
        }
        transaction.commit().await?;
        Ok(true)
    }

    async fn recover_interrupted(&self, max_attempts: u32) -> Result<u64, StoreError> {
        let now = now_millis();
        let mut transaction = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query(
            "UPDATE executions
             SET status = 'ABANDONED', ended_at = ?, error_code = 'worker_lost',
                 error_message = 'the server stopped while this execution ran'
             WHERE status = 'RUNNING'",
        )
        .bind(now)
        .execute(&mut *transaction)
        .await?;
        sqlx::query(
            "UPDATE jobs SET status = 'FAILED', ended_at = ?, lease_expires_at = NULL
             WHERE status = 'RUNNING' AND attempts >= ?",
        )
        .bind(now)
        .bind(max_attempts)
        .execute(&mut *transaction)
        .await?;
        let requeued = sqlx::query(
            "UPDATE jobs SET status = 'PENDING', lease_expires_at = NULL WHERE status = 'RUNNING'",
        )
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(requeued.rows_affected())
    }
}
