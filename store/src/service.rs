//! What the service view reads of the store: the replicas' reports, the queue per use case,
//! and the jobs accepted and ended per minute, service-wide.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Database, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{Millis, StoreError, now_millis};

/// One replica as it last reported itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaReport {
    /// Made up at start; a restarted process is a new replica.
    pub id: String,
    /// The host name and process id, for people.
    pub name: String,
    pub workers: u32,
    /// Workers running an execution.
    pub busy: u32,
    /// Jobs this process accepted, and executions its workers ended, since it started.
    pub accepted: u64,
    pub ended: u64,
    pub started_at: Millis,
    pub seen_at: Millis,
    /// The worker pool its workers are in (`--pool`).
    pub pool: String,
    /// When it stopped, if it stopped cleanly: its last report says so.
    pub stopped_at: Option<Millis>,
}

impl ReplicaReport {
    /// Whether it runs at `now`: not stopped, and heard from lately.
    pub fn live_at(&self, now: Millis) -> bool {
        self.stopped_at.is_none() && now - self.seen_at < REPLICA_LIVE_MILLIS
    }
}

/// Jobs of one use case waiting or claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDepth {
    pub problem: String,
    pub pending: u64,
    /// Claimed by a worker, started or about to be.
    pub running: u64,
}

/// Jobs accepted and ended in one minute, service-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinuteCounts {
    /// The minute's start, in milliseconds since the epoch.
    pub minute: Millis,
    pub accepted: u64,
    pub ended: u64,
}

/// The whole service at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStats {
    pub replicas: Vec<ReplicaReport>,
    pub queue: Vec<QueueDepth>,
    /// Every minute from the one asked for to the current one, oldest first.
    pub minutes: Vec<MinuteCounts>,
}

/// A replica that did not say it stopped counts as live while its last report is this
/// recent: replicas report every few seconds, so three missed reports in a row mean it
/// stopped.
pub(super) const REPLICA_LIVE_MILLIS: Millis = 15_000;

/// The service view: replicas' reports, the queue, and jobs per minute, service-wide.
#[async_trait]
pub trait Service: Send + Sync + 'static {
    /// Writes this replica's report of itself, and forgets replicas silent since
    /// `forget_before`. A replica's last report says when it stopped; once one has, its row
    /// stays as that report left it, whatever is reported for it later.
    async fn report_replica(
        &self,
        report: &ReplicaReport,
        forget_before: Millis,
    ) -> Result<(), StoreError>;

    /// Jobs waiting and claimed, per use case, in the whole store.
    async fn queue_depth(&self) -> Result<Vec<QueueDepth>, StoreError>;

    /// The replicas' last reports, the queue per use case, and the jobs accepted and ended
    /// per minute from `since` on.
    async fn service_stats(&self, since: Millis) -> Result<ServiceStats, StoreError>;

    /// The migrations the database has applied, by version (what readiness checks, and
    /// what a replica started with `--no-migrate` requires).
    async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError>;

    /// This process's connection pools: their connections open and idle now.
    fn connection_pools(&self) -> Vec<ConnectionPool>;
}

/// One of this process's connection pools to the database, as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionPool {
    /// `writer` (group commit, upkeep) or `readers`.
    pub name: &'static str,
    /// Connections open.
    pub size: u32,
    /// Connections open and not in use.
    pub idle: u32,
}

#[async_trait]
impl<B> Service for B
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
    async fn report_replica(
        &self,
        report: &ReplicaReport,
        forget_before: Millis,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::REPORT_REPLICA)
            .bind(&report.id)
            .bind(&report.name)
            .bind(i64::from(report.workers))
            .bind(i64::from(report.busy))
            .bind(report.accepted as i64)
            .bind(report.ended as i64)
            .bind(report.started_at)
            .bind(report.seen_at)
            .bind(&report.pool)
            .bind(report.stopped_at)
            .execute(self.writer())
            .await?;
        sqlx::query(sql::FORGET_REPLICAS)
            .bind(forget_before)
            .execute(self.writer())
            .await?;
        if let Some(announce) = B::ANNOUNCE_REPLICAS {
            sqlx::query(announce).execute(self.writer()).await?;
        }
        Ok(())
    }

    async fn queue_depth(&self) -> Result<Vec<QueueDepth>, StoreError> {
        rows::all(
            &sqlx::query(sql::QUEUE_DEPTH)
                .fetch_all(self.readers())
                .await?,
        )
    }

    fn connection_pools(&self) -> Vec<ConnectionPool> {
        [("writer", self.writer()), ("readers", self.readers())]
            .into_iter()
            .map(|(name, pool)| ConnectionPool {
                name,
                size: pool.size(),
                idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
            })
            .collect()
    }

    async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        let rows = sqlx::query(sql::APPLIED_MIGRATIONS)
            .fetch_all(self.readers())
            .await?;
        rows.iter().map(|row| row.integer("version")).collect()
    }

    async fn service_stats(&self, since: Millis) -> Result<ServiceStats, StoreError> {
        let replicas = rows::all(&sqlx::query(sql::REPLICAS).fetch_all(self.readers()).await?)?;
        let queue = self.queue_depth().await?;
        let per_minute = |rows: Vec<<B::Db as Database>::Row>| {
            rows.iter()
                .map(|row| Ok((row.integer("minute")?, row.integer("jobs")?)))
                .collect::<Result<Vec<_>, StoreError>>()
        };
        let accepted = per_minute(
            sqlx::query(sql::ACCEPTED_PER_MINUTE)
                .bind(first_job_id_since(since))
                .fetch_all(self.readers())
                .await?,
        )?;
        let ended = per_minute(
            sqlx::query(sql::ENDED_PER_MINUTE)
                .bind(since)
                .fetch_all(self.readers())
                .await?,
        )?;
        Ok(ServiceStats {
            replicas,
            queue,
            minutes: fill_minutes(since, now_millis(), &accepted, &ended),
        })
    }
}

/// The smallest UUIDv7 text of a job created at or after `at`: job ids are UUIDv7, whose
/// text sorts by creation time, so the primary key finds the jobs created since then.
pub(super) fn first_job_id_since(at: Millis) -> String {
    let at = at.max(0) as u64;
    format!(
        "{:08x}-{:04x}-0000-0000-000000000000",
        (at >> 16) & 0xffff_ffff,
        at & 0xffff
    )
}

/// Every minute from `since` to `now` with its counts, zero where nothing happened.
pub(super) fn fill_minutes(
    since: Millis,
    now: Millis,
    accepted: &[(Millis, i64)],
    ended: &[(Millis, i64)],
) -> Vec<MinuteCounts> {
    let first = since.div_euclid(60_000);
    let last = now.div_euclid(60_000);
    let count = |counts: &[(Millis, i64)], minute: Millis| {
        counts
            .iter()
            .find(|(at, _)| *at == minute)
            .map_or(0, |(_, count)| (*count).max(0) as u64)
    };
    (first..=last)
        .map(|minute| MinuteCounts {
            minute: minute * 60_000,
            accepted: count(accepted, minute),
            ended: count(ended, minute),
        })
        .collect()
}

/// `REPLICAS`'s columns.
impl FromRow for ReplicaReport {
    fn from_row(row: &impl Columns) -> Result<ReplicaReport, StoreError> {
        Ok(ReplicaReport {
            id: row.text("id")?,
            name: row.text("name")?,
            workers: row.integer("workers")?.max(0) as u32,
            busy: row.integer("busy")?.max(0) as u32,
            accepted: row.count("accepted")?,
            ended: row.count("ended")?,
            started_at: row.integer("started_at")?,
            seen_at: row.integer("seen_at")?,
            pool: row.text("pool")?,
            stopped_at: row.integer_or_null("stopped_at")?,
        })
    }
}

/// `QUEUE_DEPTH`'s columns.
impl FromRow for QueueDepth {
    fn from_row(row: &impl Columns) -> Result<QueueDepth, StoreError> {
        Ok(QueueDepth {
            problem: row.text("problem")?,
            pending: row.count("pending")?,
            running: row.count("running")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_id_sorts_before_every_job_of_that_millisecond_and_after_earlier_ones() {
        let at: Millis = 1_764_000_000_123;
        let bound = first_job_id_since(at);
        let made = |ms: u64| {
            let mut bytes = [0xffu8; 16];
            bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
            uuid::Uuid::from_bytes(bytes).to_string()
        };
        assert!(made(at as u64 - 1) < bound);
        assert!(made(at as u64) >= bound);
        assert!(uuid::Uuid::now_v7().to_string() > first_job_id_since(at));
    }

    #[test]
    fn minutes_without_jobs_count_zero() {
        let minutes = fill_minutes(0, 179_999, &[(1, 4)], &[(2, 3)]);
        let counts: Vec<_> = minutes.iter().map(|m| (m.accepted, m.ended)).collect();
        assert_eq!(counts, [(0, 0), (4, 0), (0, 3)]);
        assert_eq!(minutes[2].minute, 120_000);
    }
}
