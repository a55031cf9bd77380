//! The writes of a group-commit batch, written once for both backends and for two ways of
//! running a statement: through sqlx ([`SqlxConnection`], PostgreSQL's and the quota check
//! of an upload) and through rusqlite on the connection the embedded store's group commit
//! owns (`sqlite_writer`, whose batches then cost one hand-off each, not two thread
//! wake-ups per statement). A [`Statement`] is a query and the values it binds, in `$1`…
//! order.

use sqlx::{ColumnIndex, Database, Executor};

use super::backend::ClaimFilter;
use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::Columns;
use super::types::StoreError;

/// A value a statement binds. Each kind carries its own null, so that PostgreSQL knows a
/// null's type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Value<'a> {
    Text(Option<&'a str>),
    Integer(Option<i64>),
    Real(Option<f64>),
    Flag(Option<bool>),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(text: &'a str) -> Value<'a> {
        Value::Text(Some(text))
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(text: &'a String) -> Value<'a> {
        Value::Text(Some(text))
    }
}

impl<'a> From<Option<&'a str>> for Value<'a> {
    fn from(text: Option<&'a str>) -> Value<'a> {
        Value::Text(text)
    }
}

impl<'a> From<Option<&'a String>> for Value<'a> {
    fn from(text: Option<&'a String>) -> Value<'a> {
        Value::Text(text.map(String::as_str))
    }
}

impl From<i64> for Value<'_> {
    fn from(integer: i64) -> Self {
        Value::Integer(Some(integer))
    }
}

impl From<Option<i64>> for Value<'_> {
    fn from(integer: Option<i64>) -> Self {
        Value::Integer(integer)
    }
}

impl From<Option<f64>> for Value<'_> {
    fn from(real: Option<f64>) -> Self {
        Value::Real(real)
    }
}

impl From<bool> for Value<'_> {
    fn from(flag: bool) -> Self {
        Value::Flag(Some(flag))
    }
}

/// A query and the values of its parameters `$1`, `$2`… in that order.
#[derive(Debug, Clone)]
pub(super) struct Statement<'a> {
    pub(super) sql: &'static str,
    pub(super) values: Vec<Value<'a>>,
}

impl<'a> Statement<'a> {
    pub(super) fn new(sql: &'static str) -> Statement<'a> {
        Statement {
            sql,
            values: Vec::new(),
        }
    }

    /// Binds the next parameter.
    pub(super) fn bind(mut self, value: impl Into<Value<'a>>) -> Statement<'a> {
        self.values.push(value.into());
        self
    }
}

/// A connection inside a write transaction, as the batch's writes use it.
pub(super) trait WriteConnection {
    /// A row its queries return.
    type Row: Columns;

    /// The statement that claims jobs `filter` lets through: see
    /// [`Backend::claim_statement`].
    fn claim_statement(filter: &ClaimFilter) -> &'static str;

    /// See [`Backend::LOCK_USER`].
    const LOCK_USER: Option<&'static str>;

    /// See [`Backend::RECLAIM_ALLOWANCES`].
    const RECLAIM_ALLOWANCES: Option<&'static str>;

    /// See [`Backend::LOCK_PROJECT`].
    const LOCK_PROJECT: Option<&'static str>;

    /// See [`Backend::FINISH_IN_ONE`].
    const FINISH_IN_ONE: bool;

    /// Runs a statement that returns no rows (on SQLite's handle, one that does is an
    /// error); how many rows it changed.
    async fn execute(&mut self, statement: Statement<'_>) -> Result<u64, StoreError>;

    /// Runs a query; every row it returns.
    async fn fetch_all(&mut self, statement: Statement<'_>) -> Result<Vec<Self::Row>, StoreError>;

    /// Runs a query; its first row, if any.
    async fn fetch_optional(
        &mut self,
        statement: Statement<'_>,
    ) -> Result<Option<Self::Row>, StoreError> {
        Ok(self.fetch_all(statement).await?.into_iter().next())
    }
}

/// A sqlx connection of backend `B`, inside a transaction.
pub(super) struct SqlxConnection<'c, B: Backend>(pub(super) &'c mut Connection<B>);

impl<'c, B> SqlxConnection<'c, B>
where
    B: Backend,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<f64>: Param<'a, B::Db>,
    for<'a> Option<bool>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
{
    fn query<'q>(
        statement: &Statement<'q>,
    ) -> sqlx::query::Query<'q, B::Db, <B::Db as Database>::Arguments> {
        let mut query = sqlx::query(statement.sql);
        for value in &statement.values {
            query = match *value {
                Value::Text(text) => query.bind(text),
                Value::Integer(integer) => query.bind(integer),
                Value::Real(real) => query.bind(real),
                Value::Flag(flag) => query.bind(flag),
            };
        }
        query
    }
}

impl<'c, B> WriteConnection for SqlxConnection<'c, B>
where
    B: Backend,
    for<'e> &'e mut Connection<B>: Executor<'e, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<f64>: Param<'a, B::Db>,
    for<'a> Option<bool>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
{
    type Row = DbRow<B>;

    fn claim_statement(filter: &ClaimFilter) -> &'static str {
        B::claim_statement(filter)
    }

    const LOCK_USER: Option<&'static str> = B::LOCK_USER;
    const RECLAIM_ALLOWANCES: Option<&'static str> = B::RECLAIM_ALLOWANCES;
    const LOCK_PROJECT: Option<&'static str> = B::LOCK_PROJECT;
    const FINISH_IN_ONE: bool = B::FINISH_IN_ONE;

    async fn execute(&mut self, statement: Statement<'_>) -> Result<u64, StoreError> {
        let result = Self::query(&statement).execute(&mut *self.0).await?;
        Ok(B::rows_affected(&result))
    }

    async fn fetch_all(&mut self, statement: Statement<'_>) -> Result<Vec<Self::Row>, StoreError> {
        Ok(Self::query(&statement).fetch_all(&mut *self.0).await?)
    }
}
