//! The embedded store: one SQLite file in WAL mode, a few readers and two writer connections
//! (SQLite allows one writer at a time; a pool of them would only queue on the file lock):
//! the group commit's, owned by a thread of its own (`sqlite_writer.rs`), and sqlx's for the
//! other writes. One process owns the file: there is no other process to wake or to share
//! leases with. This file opens it and brings its schema up to date; the backend's own ways
//! are in `sqlite_backend.rs`.

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::batch::Batcher;
use super::schema::{self, Migrations};
use super::sqlite_backend::{BUSY_TIMEOUT, SqliteStore};
use super::sqlite_writer::SqliteWriter;
use super::types::{StoreError, now_millis};

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
    for &(version, script) in schema::SQLITE_MIGRATIONS {
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
