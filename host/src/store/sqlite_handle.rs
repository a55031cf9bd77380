//! The embedded store's batches, run straight on the SQLite handle of its one writer
//! connection. Through sqlx, every statement is a hand-off to the connection's thread and
//! back (two thread wake-ups); a batch of a few hundred writes made a thousand of them. Here
//! the batch's statements run on the caller's thread while it holds the connection's lock,
//! and a batch costs three hand-offs whatever its size: its `BEGIN`, the lock, its `COMMIT`.

use std::rc::Rc;

use futures_util::FutureExt;
use rusqlite::types::{Value as SqliteValue, ValueRef};

use super::backend::{Backend, apply};
use super::batch::{Outcome, Write};
use super::launch_quotas::LaunchQuotas;
use super::rows::Columns;
use super::sqlite::SqliteStore;
use super::statement::{Statement, Value, WriteConnection};
use super::{ClaimFilter, StoreError};

/// How many distinct statements a batch keeps prepared: every statement its writes use.
const PREPARED_STATEMENTS: usize = 64;

/// Applies `writes` on `handle`, in the transaction open on it, which the caller ends: with
/// `COMMIT` if this returns the outcomes, with `ROLLBACK` if it fails.
///
/// # Safety
///
/// `handle` must be an open SQLite connection that nothing else uses until this returns (the
/// caller holds its sqlx lock).
#[allow(unsafe_code)]
pub(super) unsafe fn apply_batch(
    handle: *mut rusqlite::ffi::sqlite3,
    writes: &[Write],
) -> Result<Vec<Outcome>, StoreError> {
    // SAFETY: the caller lends the handle for this call alone; the connection made of it does
    // not own it (dropping it finalizes its statements and leaves the handle open).
    let connection = unsafe { rusqlite::Connection::from_handle(handle) }?;
    connection.set_prepared_statement_cache_capacity(PREPARED_STATEMENTS);
    apply_all(&connection, writes)
}

fn apply_all(
    connection: &rusqlite::Connection,
    writes: &[Write],
) -> Result<Vec<Outcome>, StoreError> {
    let mut handle = Handle(connection);
    let mut quotas = LaunchQuotas::default();
    let mut outcomes = Vec::with_capacity(writes.len());
    for write in writes {
        // Every statement of `Handle` runs before it returns, so the write never waits.
        let outcome = apply(&mut handle, write, &mut quotas)
            .now_or_never()
            .ok_or_else(|| StoreError::Corrupt("a write on SQLite's handle waited".into()))??;
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// A connection made of the writer's handle, inside the batch's transaction.
struct Handle<'c>(&'c rusqlite::Connection);

impl Handle<'_> {
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

impl WriteConnection for Handle<'_> {
    type Row = Row;

    fn claim_statement(filter: &ClaimFilter) -> &'static str {
        SqliteStore::claim_statement(filter)
    }

    const LOCK_USER: Option<&'static str> = SqliteStore::LOCK_USER;
    const LOCK_PROJECT: Option<&'static str> = SqliteStore::LOCK_PROJECT;

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

/// A row read off the handle.
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
        Handle(&connection)
            .fetch_all(statement)
            .now_or_never()
            .expect("a statement on the handle never waits")
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
