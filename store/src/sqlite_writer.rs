//! The embedded store's group commit: a thread that owns its own connection to the file and
//! writes every batch on it, `BEGIN IMMEDIATE` to `COMMIT`, in one hand-off from the runtime
//! and one back. Through sqlx, every statement was a hand-off to the connection's thread and
//! back (two thread wake-ups each); here a batch's statements run where the connection lives,
//! each prepared once for the connection's life.
//!
//! The store's sqlx writer connection (upkeep, accounts, uploads) is a second writer on the
//! file. SQLite lets one write at a time; both take the write lock when their transaction
//! begins ([`Backend::begin_write`]) and wait for each other up to the busy timeout.

use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::FutureExt;
use rusqlite::types::{Value as SqliteValue, ValueRef};
use rusqlite::{OpenFlags, TransactionBehavior};

use super::apply::apply;
use super::backend::Backend;
use super::backend::ClaimFilter;
use super::batch::{self, BatchWriter, Outcome, Write};
use super::launch_quotas::LaunchQuotas;
use super::rows::Columns;
use super::sqlite_backend::{SqliteStore, tell};
use super::statement::{Statement, Value, WriteConnection};
use super::types::{JobEvents, StoreError};

/// How many distinct statements the writer keeps prepared: every statement its writes use.
const PREPARED_STATEMENTS: usize = 64;

/// Writes batches on a connection of its own, each in one `BEGIN IMMEDIATE` transaction;
/// [`Batcher::on_thread`](super::batch::Batcher::on_thread) calls it on the thread it keeps
/// for it, so that waiting for the write lock and for the disk blocks no runtime thread.
pub(super) struct SqliteWriter {
    /// Used by the writer's thread alone; the lock only makes the writer `Sync`.
    connection: Mutex<rusqlite::Connection>,
    events: Arc<OnceLock<Arc<dyn JobEvents>>>,
}

impl SqliteWriter {
    /// Opens the writer's connection to the database at `path`, which exists and is in WAL
    /// mode, with the settings of the store's other connections.
    pub(super) fn open(
        path: &Path,
        busy_timeout: Duration,
        events: Arc<OnceLock<Arc<dyn JobEvents>>>,
    ) -> Result<SqliteWriter, StoreError> {
        let connection = rusqlite::Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(busy_timeout)?;
        // FULL: a job is acknowledged only once it survives a power loss, not just a crash.
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        connection.set_prepared_statement_cache_capacity(PREPARED_STATEMENTS);
        Ok(SqliteWriter {
            connection: Mutex::new(connection),
            events,
        })
    }

    /// `writes` applied in one transaction, committed if every write applied and rolled back
    /// otherwise.
    fn write(&self, writes: &[Write]) -> Result<Vec<Outcome>, StoreError> {
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Dropped without a commit (an error, a panic), the transaction rolls back.
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let outcomes = apply_all(&transaction, writes)?;
        transaction.commit()?;
        Ok(outcomes)
    }
}

#[async_trait]
impl BatchWriter for SqliteWriter {
    /// Blocks its thread for the batch: it runs on the writer's thread alone.
    async fn write_batch(&self, writes: &[Write]) -> Result<Vec<Outcome>, StoreError> {
        let outcomes = self.write(writes)?;
        tell(&self.events, &batch::changes(writes, &outcomes));
        Ok(outcomes)
    }
}

fn apply_all(
    connection: &rusqlite::Connection,
    writes: &[Write],
) -> Result<Vec<Outcome>, StoreError> {
    let mut handle = BatchConnection(connection);
    let mut quotas = LaunchQuotas::default();
    let mut outcomes = Vec::with_capacity(writes.len());
    for write in writes {
        // Every statement of `BatchConnection` runs before it returns, so the write never waits.
        let outcome = apply(&mut handle, write, &mut quotas)
            .now_or_never()
            .ok_or_else(|| StoreError::Corrupt("a write on SQLite's connection waited".into()))??;
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// The writer's connection, inside the batch's transaction.
struct BatchConnection<'c>(&'c rusqlite::Connection);

impl BatchConnection<'_> {
    /// The statement prepared, each `$n` bound to the statement's n-th value. SQLite numbers
    /// a statement's parameters in the order they first appear, which need not be `$n`'s.
    fn prepared(
        &self,
        statement: &Statement<'_>,
    ) -> Result<rusqlite::CachedStatement<'_>, StoreError> {
        let mut prepared = self.0.prepare_cached(statement.sql)?;
        for index in 1..=prepared.parameter_count() {
            let number = prepared
                .parameter_name(index)
                .and_then(|name| name.strip_prefix('$'))
                .and_then(|number| number.parse::<usize>().ok())
                .ok_or_else(|| {
                    StoreError::Corrupt(format!("a statement's parameter {index} is not $n"))
                })?;
            let value = number
                .checked_sub(1)
                .and_then(|index| statement.values.get(index))
                .ok_or_else(|| {
                    StoreError::Corrupt(format!("a statement's ${number} has no value"))
                })?;
            match *value {
                Value::Text(text) => prepared.raw_bind_parameter(index, text)?,
                Value::Integer(integer) => prepared.raw_bind_parameter(index, integer)?,
                Value::Real(real) => prepared.raw_bind_parameter(index, real)?,
                Value::Flag(flag) => prepared.raw_bind_parameter(index, flag)?,
            }
        }
        Ok(prepared)
    }
}

impl WriteConnection for BatchConnection<'_> {
    type Row = Row;

    fn claim_statement(filter: &ClaimFilter) -> &'static str {
        SqliteStore::claim_statement(filter)
    }

    const LOCK_USER: Option<&'static str> = SqliteStore::LOCK_USER;
    const RECLAIM_ALLOWANCES: Option<&'static str> = SqliteStore::RECLAIM_ALLOWANCES;
    const LOCK_PROJECT: Option<&'static str> = SqliteStore::LOCK_PROJECT;
    const FINISH_IN_ONE: bool = SqliteStore::FINISH_IN_ONE;

    async fn execute(&mut self, statement: Statement<'_>) -> Result<u64, StoreError> {
        Ok(self.prepared(&statement)?.raw_execute()? as u64)
    }

    async fn fetch_all(&mut self, statement: Statement<'_>) -> Result<Vec<Row>, StoreError> {
        let mut prepared = self.prepared(&statement)?;
        let names: Rc<[String]> = prepared
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut rows = prepared.raw_query();
        let mut all = Vec::new();
        while let Some(row) = rows.next()? {
            let values = (0..names.len())
                .map(|index| row.get::<_, SqliteValue>(index))
                .collect::<Result<Vec<_>, _>>()?;
            all.push(Row {
                names: names.clone(),
                values,
            });
        }
        Ok(all)
    }
}

/// A row the writer read.
pub(super) struct Row {
    names: Rc<[String]>,
    values: Vec<SqliteValue>,
}

impl Row {
    fn value(&self, column: &str) -> Result<ValueRef<'_>, StoreError> {
        self.names
            .iter()
            .position(|name| name == column)
            .map(|index| ValueRef::from(&self.values[index]))
            .ok_or_else(|| StoreError::Corrupt(format!("no column {column:?}")))
    }

    fn typed<T: rusqlite::types::FromSql>(&self, column: &str) -> Result<T, StoreError> {
        T::column_result(self.value(column)?)
            .map_err(|error| StoreError::Corrupt(format!("column {column:?}: {error}")))
    }
}

impl Columns for Row {
    fn text(&self, column: &str) -> Result<String, StoreError> {
        self.typed(column)
    }

    fn text_or_null(&self, column: &str) -> Result<Option<String>, StoreError> {
        self.typed(column)
    }

    fn integer(&self, column: &str) -> Result<i64, StoreError> {
        self.typed(column)
    }

    fn integer_or_null(&self, column: &str) -> Result<Option<i64>, StoreError> {
        self.typed(column)
    }

    fn real_or_null(&self, column: &str) -> Result<Option<f64>, StoreError> {
        self.typed(column)
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        self.typed(column)
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    fn rows(statement: Statement<'_>) -> Result<Vec<Row>, StoreError> {
        let connection = rusqlite::Connection::open_in_memory().expect("an in-memory database");
        BatchConnection(&connection)
            .fetch_all(statement)
            .now_or_never()
            .expect("a statement on the connection never waits")
    }

    #[test]
    fn each_dollar_n_binds_the_nth_value_wherever_it_appears() {
        let query = Statement::new("SELECT $3 AS c, $1 AS a, $1 + $2 AS s, $4 AS n")
            .bind(1_i64)
            .bind(2_i64)
            .bind("x")
            .bind(Value::Text(None));
        let rows = rows(query).expect("the query runs");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].text("c").expect("c"), "x");
        assert_eq!(rows[0].integer("a").expect("a"), 1);
        assert_eq!(rows[0].integer("s").expect("s"), 3);
        assert_eq!(rows[0].text_or_null("n").expect("n"), None);
        assert!(rows[0].text("missing").is_err());
    }

    #[test]
    fn a_parameter_without_a_value_is_an_error() {
        assert!(rows(Statement::new("SELECT $2 AS b").bind(1_i64)).is_err());
        assert!(rows(Statement::new("SELECT $0 AS z").bind(1_i64)).is_err());
        assert!(rows(Statement::new("SELECT ? AS q").bind(1_i64)).is_err());
    }
}
