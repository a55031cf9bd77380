//! The embedded store: one SQLite file in WAL mode, a few readers and two writer connections
//! (SQLite allows one writer at a time; a pool of them would only queue on the file lock):
//! the group commit's, owned by a thread of its own (`sqlite_writer.rs`), and sqlx's for the
//! other writes. One process owns the file: there is no other process to wake or to share
//! leases with.

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Sqlite;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};

use super::backend::Backend;
use super::batch::Batcher;
use super::outcome::ReapedEnds;
use super::rows::Columns;
use super::schema::{self, Migrations};
use super::sqlite_writer::SqliteWriter;
use super::statement::{SqlxConnection, Statement, WriteConnection};
use super::{ClaimFilter, JobChange, JobEvents, StoreError, now_millis, sql};

/// How long a writer waits for another to commit: the group commit's, the sqlx writer's,
/// another process's.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, one script per version, applied in order at start; numbered as PostgreSQL's.
pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/sqlite/0001_initial.sql")),
    (
        2,
        include_str!("../migrations/sqlite/0002_leases_idempotency.sql"),
    ),
    (3, include_str!("../migrations/sqlite/0003_datasets.sql")),
    (4, include_str!("../migrations/sqlite/0004_cancel.sql")),
    (5, include_str!("../migrations/sqlite/0005_user_access.sql")),
    (6, include_str!("../migrations/sqlite/0006_fair_share.sql")),
    (7, include_str!("../migrations/sqlite/0007_quotas.sql")),
    (8, include_str!("../migrations/sqlite/0008_user_quotas.sql")),
    (
        9,
        include_str!("../migrations/sqlite/0009_output_quota.sql"),
    ),
    (10, include_str!("../migrations/sqlite/0010_priority.sql")),
    (11, include_str!("../migrations/sqlite/0011_labels.sql")),
    (12, include_str!("../migrations/sqlite/0012_webhooks.sql")),
    (13, include_str!("../migrations/sqlite/0013_replicas.sql")),
    (
        14,
        include_str!("../migrations/sqlite/0014_pending_count.sql"),
    ),
    (15, include_str!("../migrations/sqlite/0015_kept_bytes.sql")),
    (
        16,
        include_str!("../migrations/sqlite/0016_webhook_claims.sql"),
    ),
    (17, include_str!("../migrations/sqlite/0017_admins.sql")),
    (
        18,
        include_str!("../migrations/sqlite/0018_plugin_registry.sql"),
    ),
    (19, include_str!("../migrations/sqlite/0019_objectives.sql")),
    (20, include_str!("../migrations/sqlite/0020_finish.sql")),
    (21, include_str!("../migrations/sqlite/0021_warm_start.sql")),
    (
        22,
        include_str!("../migrations/sqlite/0022_time_to_best.sql"),
    ),
    (
        23,
        include_str!("../migrations/sqlite/0023_experiments.sql"),
    ),
    (24, include_str!("../migrations/sqlite/0024_races.sql")),
    (25, include_str!("../migrations/sqlite/0025_incumbents.sql")),
    (26, include_str!("../migrations/sqlite/0026_api_keys.sql")),
    (27, include_str!("../migrations/sqlite/0027_roles.sql")),
    (28, include_str!("../migrations/sqlite/0028_audit.sql")),
    (29, include_str!("../migrations/sqlite/0029_projects.sql")),
    (
        30,
        include_str!("../migrations/sqlite/0030_api_key_projects.sql"),
    ),
    (
        31,
        include_str!("../migrations/sqlite/0031_replica_pools.sql"),
    ),
    (
        32,
        include_str!("../migrations/sqlite/0032_project_quotas.sql"),
    ),
    (
        33,
        include_str!("../migrations/sqlite/0033_project_webhook_secrets.sql"),
    ),
    (
        34,
        include_str!("../migrations/sqlite/0034_project_experiments.sql"),
    ),
    (
        35,
        include_str!("../migrations/sqlite/0035_user_counts.sql"),
    ),
    (
        36,
        include_str!("../migrations/sqlite/0036_quota_allowances.sql"),
    ),
    (
        37,
        include_str!("../migrations/sqlite/0037_job_indexes.sql"),
    ),
    (
        38,
        include_str!("../migrations/sqlite/0038_output_counts_per_statement.sql"),
    ),
    (
        39,
        include_str!("../migrations/sqlite/0039_claims_counted_once.sql"),
    ),
    (
        40,
        include_str!("../migrations/sqlite/0040_launches_counted_per_statement.sql"),
    ),
    (
        41,
        include_str!("../migrations/sqlite/0041_replica_stops.sql"),
    ),
    (
        42,
        include_str!("../migrations/sqlite/0042_shared_inputs.sql"),
    ),
    (
        43,
        include_str!("../migrations/sqlite/0043_waiting_jobs.sql"),
    ),
];

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
    writer: SqlitePool,
    readers: SqlitePool,
    batcher: Batcher,
    /// Where committed changes are told: one process, so directly.
    events: Arc<OnceLock<Arc<dyn JobEvents>>>,
}

/// Tells `events`, if set, what a committed transaction changed.
pub(super) fn tell(events: &OnceLock<Arc<dyn JobEvents>>, changes: &[JobChange]) {
    if let Some(events) = events.get()
        && !changes.is_empty()
    {
        events.jobs_changed(changes);
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Migrations::Apply).await
    }

    /// Opens the database, and applies the migrations it lacks or refuses it for lacking
    /// them, as `migrations` says.
    pub async fn open_with(path: &Path, migrations: Migrations) -> Result<SqliteStore, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a job is acknowledged only once it survives a power loss, not just a crash.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let writer = SqlitePoolOptions::new()
            // The connection is local or long-lived; a ping before every use costs a round
            // trip per transaction on the group-commit path.
            .test_before_acquire(false)
            .max_connections(1)
            .min_connections(1)
            .connect_with(options.clone())
            .await?;
        match migrations {
            Migrations::Apply => migrate(&writer).await?,
            Migrations::Require => require_migrations(&writer).await?,
        }
        let readers = SqlitePoolOptions::new()
            // The connection is local or long-lived; a ping before every use costs a round
            // trip per transaction on the group-commit path.
            .test_before_acquire(false)
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await?;
        let events = Arc::new(OnceLock::new());
        // One lane: SQLite has one writer at a time.
        let batcher = Batcher::on_thread(
            "caseload-sqlite-writer",
            Arc::new(SqliteWriter::open(path, BUSY_TIMEOUT, events.clone())?),
        )?;
        Ok(SqliteStore {
            writer,
            readers,
            batcher,
            events,
        })
    }
}

/// Refuses a database that lacks a migration of this build, applying none.
async fn require_migrations(pool: &SqlitePool) -> Result<(), StoreError> {
    let present: Option<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'caseload_migrations'",
    )
    .fetch_optional(pool)
    .await?;
    let applied: Vec<i64> = if present.is_some() {
        sqlx::query_scalar("SELECT version FROM caseload_migrations")
            .fetch_all(pool)
            .await?
    } else {
        Vec::new()
    };
    schema::require(&applied)
}

async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS caseload_migrations (
             version INTEGER PRIMARY KEY,
             applied_at INTEGER NOT NULL
         )",
    )
    .execute(pool)
    .await?;
    // The versions a database recorded under the table's former name, in the same numbering.
    let old: Option<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
    )
    .fetch_optional(pool)
    .await?;
    if old.is_some() {
        sqlx::query(
            "INSERT OR IGNORE INTO caseload_migrations (version, applied_at)
             SELECT version, applied_at FROM schema_migrations",
        )
        .execute(pool)
        .await?;
    }
    let mut applied_now = Vec::new();
    for &(version, script) in MIGRATIONS {
        let mut transaction = pool.begin_with("BEGIN IMMEDIATE").await?;
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT version FROM caseload_migrations WHERE version = $1")
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
        sqlx::query("INSERT INTO caseload_migrations (version, applied_at) VALUES ($1, $2)")
            .bind(version)
            .bind(now_millis())
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        tracing::debug!(version, "applied database migration");
        applied_now.push(version);
    }
    schema::log_applied(&applied_now);
    Ok(())
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

    fn batcher(&self) -> &Batcher {
        &self.batcher
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
