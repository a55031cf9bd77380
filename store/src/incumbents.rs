//! Incumbents: solutions a running plugin reported as it found them, the newest few of each
//! execution. They are written with the execution's progress (a [`LiveUpdate`]) under its
//! lease, and read by the job's owner.
//!
//! [`LiveUpdate`]: super::LiveUpdate

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::statement::{Statement, WriteConnection};
use super::types::{Millis, StoreError};

/// How many incumbents of one execution are kept: the newest.
pub const KEPT_PER_EXECUTION: i64 = 20;

/// How many bytes of solutions of one execution are kept, the newest first; the newest one
/// is kept whatever its size (the host bounds each).
pub const KEPT_BYTES_PER_EXECUTION: i64 = 4 << 20;

/// An incumbent as the worker reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewIncumbent {
    /// 1 for the execution's first report, counting the ones the host did not keep.
    pub seq: u32,
    pub found_at: Millis,
    pub objective: f64,
    /// JSON.
    pub solution: String,
}

/// An incumbent as it is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct IncumbentRecord {
    pub execution_id: String,
    pub seq: u32,
    pub found_at: Millis,
    pub objective: f64,
    pub solution: String,
}

#[async_trait]
pub trait Incumbents: Send + Sync + 'static {
    /// The kept incumbents of the owner's job (a race's: its entrants'), oldest first;
    /// `None` if the owner has no such job.
    async fn incumbents(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<Vec<IncumbentRecord>>, StoreError>;

    /// The kept incumbents of one execution of the owner's job after `after_seq`, oldest
    /// first.
    async fn incumbents_after(
        &self,
        owner_id: &str,
        job_id: &str,
        execution_id: &str,
        after_seq: u32,
    ) -> Result<Vec<IncumbentRecord>, StoreError>;
}

#[async_trait]
impl<B> Incumbents for B
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> i64: Param<'a, B::Db>,
{
    async fn incumbents(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<Vec<IncumbentRecord>>, StoreError> {
        let owned = sqlx::query(sql::JOB_STATUS.as_str())
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(self.readers())
            .await?;
        if owned.is_none() {
            return Ok(None);
        }
        let rows = sqlx::query(sql::JOB_INCUMBENTS)
            .bind(job_id)
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows).map(Some)
    }

    async fn incumbents_after(
        &self,
        owner_id: &str,
        job_id: &str,
        execution_id: &str,
        after_seq: u32,
    ) -> Result<Vec<IncumbentRecord>, StoreError> {
        let rows = sqlx::query(sql::EXECUTION_INCUMBENTS.as_str())
            .bind(job_id)
            .bind(owner_id)
            .bind(execution_id)
            .bind(i64::from(after_seq))
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows)
    }
}

/// Stores a running execution's new incumbents and drops what is past the bounds, in the
/// transaction that holds its lease.
pub(super) async fn keep<C: WriteConnection>(
    connection: &mut C,
    job_id: &str,
    execution_id: &str,
    incumbents: &[NewIncumbent],
) -> Result<(), StoreError> {
    if incumbents.is_empty() {
        return Ok(());
    }
    for incumbent in incumbents {
        let bytes = i64::try_from(incumbent.solution.len()).unwrap_or(i64::MAX);
        let insert = Statement::new(sql::INSERT_INCUMBENT)
            .bind(execution_id)
            .bind(i64::from(incumbent.seq))
            .bind(job_id)
            .bind(incumbent.found_at)
            .bind(Some(incumbent.objective))
            .bind(incumbent.solution.as_str())
            .bind(bytes);
        connection.execute(insert).await?;
    }
    let prune = Statement::new(sql::PRUNE_INCUMBENTS)
        .bind(execution_id)
        .bind(KEPT_PER_EXECUTION)
        .bind(KEPT_BYTES_PER_EXECUTION);
    connection.execute(prune).await?;
    Ok(())
}

/// `JOB_INCUMBENTS`'s and `EXECUTION_INCUMBENTS`'s columns.
impl FromRow for IncumbentRecord {
    fn from_row(row: &impl Columns) -> Result<IncumbentRecord, StoreError> {
        let seq = row.integer("seq")?;
        Ok(IncumbentRecord {
            execution_id: row.text("execution_id")?,
            seq: u32::try_from(seq)
                .map_err(|_| StoreError::Corrupt(format!("incumbent number {seq}")))?,
            found_at: row.integer("found_at")?,
            objective: row
                .real_or_null("objective")?
                .ok_or_else(|| StoreError::Corrupt("an incumbent without objective".into()))?,
            solution: row.text("solution")?,
        })
    }
}
