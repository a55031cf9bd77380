//! Executions: claims, leases, starts, progress, heartbeats, ends, and the reaper.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::ClaimFilter;
use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::batch::{Batched, QueuedWrite, Write};
use super::outcome::JobEnds;
use super::plugins::PluginBinding;
use super::records::{
    ClaimedJob, ExecutionEnd, ExecutionError, ExecutionRecord, ExecutionStart, JobDataset,
    LiveUpdate, PluginRef, Progress,
};
use super::rows::{Columns, FromRow};
use super::sql;
use super::statement::{Statement, WriteConnection};
use super::types::{ErrorCode, ExecutionStatus, Lease, Millis, StoreError, now_millis};

/// Executions: what workers write of the jobs they claim, each write under its lease.
#[async_trait]
pub trait Executions: Send + Sync + 'static {
    /// Claims up to `limit` of the oldest pending jobs, oldest first: marks them `RUNNING`,
    /// bumps their attempt counts and lease tokens, and sets their leases to expire after
    /// `lease`.
    async fn claim_jobs(&self, lease: Duration, limit: u32) -> Result<Vec<ClaimedJob>, StoreError> {
        self.claim_jobs_of(lease, limit, Arc::new(ClaimFilter::All))
            .await
    }

    /// [`Executions::claim_jobs`], of the use cases `filter` lets through only: what a
    /// worker of one pool claims.
    async fn claim_jobs_of(
        &self,
        lease: Duration,
        limit: u32,
        filter: Arc<ClaimFilter>,
    ) -> Result<Vec<ClaimedJob>, StoreError>;

    /// Gives back a claimed job that never started: `PENDING` again, its attempt not counted.
    /// Its outcome is false if the lease is no longer held.
    fn release_unstarted(&self, lease: &Lease) -> QueuedWrite;

    /// Extends the leases this process holds to expire `lease` from now. Returns the leases that
    /// were lost (the job was reaped, cancelled or claimed by another worker).
    async fn heartbeat(&self, leases: &[Lease], lease: Duration) -> Result<Vec<Lease>, StoreError>;

    /// Queues the start of an attempt for the next group commit (see [`QueuedWrite`]); its
    /// outcome is false if the lease is no longer held.
    fn start_execution(&self, lease: &Lease, start: &ExecutionStart) -> QueuedWrite;

    /// Queues an update of a running execution's progress, log and incumbents, whichever
    /// `update` carries, for the next group commit, in order with the execution's other
    /// writes; its outcome is false if the lease is no longer held.
    fn record_progress(
        &self,
        lease: &Lease,
        execution_id: &str,
        update: &LiveUpdate,
    ) -> QueuedWrite;

    /// Queues an execution's end: moves its job to the status [`JobEnd::after`](super::JobEnd::after)
    /// gives and stores the output if
    /// any. Its outcome is false, and nothing changed, if the lease is no longer held.
    fn finish_execution(&self, lease: &Lease, end: &ExecutionEnd) -> QueuedWrite;

    /// [`Executions::start_execution`] and [`Executions::finish_execution`] as one write, for
    /// an attempt that ended before its start was queued: the execution is stored ended, in
    /// one statement where the backend can. Its outcome is false, and nothing changed, if the
    /// lease is no longer held.
    fn start_and_finish_execution(
        &self,
        lease: &Lease,
        start: &ExecutionStart,
        end: &ExecutionEnd,
    ) -> QueuedWrite;

    /// Jobs whose lease expired (their worker died or stalled): the execution becomes
    /// `ABANDONED` with `worker_lost`, and the job goes back to `PENDING`, or to `FAILED` once
    /// it had `max_attempts`. Returns how many jobs were reaped.
    async fn reap_expired(&self, max_attempts: u32) -> Result<u64, StoreError>;

    /// At start. On the embedded single-process store every `RUNNING` job was left by a crash
    /// of this very server and is reaped at once; on a shared database other replicas may be
    /// running them, so only expired leases are reaped.
    async fn recover_interrupted(&self, max_attempts: u32) -> Result<u64, StoreError>;
}

#[async_trait]
impl<B> Executions for B
where
    B: Backend + Batched,
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
    async fn claim_jobs_of(
        &self,
        lease: Duration,
        limit: u32,
        filter: Arc<ClaimFilter>,
    ) -> Result<Vec<ClaimedJob>, StoreError> {
        self.batcher()
            .claim(now_millis() + lease.as_millis() as Millis, limit, filter)
            .await
    }

    fn release_unstarted(&self, lease: &Lease) -> QueuedWrite {
        self.batcher().queue(Write::Release {
            lease: lease.clone(),
        })
    }

    async fn heartbeat(&self, leases: &[Lease], lease: Duration) -> Result<Vec<Lease>, StoreError> {
        self.batcher()
            .heartbeat(leases, now_millis() + lease.as_millis() as Millis)
            .await
    }

    fn start_execution(&self, lease: &Lease, start: &ExecutionStart) -> QueuedWrite {
        self.batcher().queue(Write::Start {
            lease: lease.clone(),
            start: start.clone(),
        })
    }

    fn record_progress(
        &self,
        lease: &Lease,
        execution_id: &str,
        update: &LiveUpdate,
    ) -> QueuedWrite {
        self.batcher().queue(Write::Progress {
            lease: lease.clone(),
            execution_id: execution_id.to_owned(),
            update: update.clone(),
        })
    }

    fn finish_execution(&self, lease: &Lease, end: &ExecutionEnd) -> QueuedWrite {
        self.batcher().queue(Write::Finish {
            lease: lease.clone(),
            start: None,
            end: end.clone(),
        })
    }

    fn start_and_finish_execution(
        &self,
        lease: &Lease,
        start: &ExecutionStart,
        end: &ExecutionEnd,
    ) -> QueuedWrite {
        self.batcher().queue(Write::Finish {
            lease: lease.clone(),
            start: Some(Box::new(start.clone())),
            end: end.clone(),
        })
    }

    async fn reap_expired(&self, max_attempts: u32) -> Result<u64, StoreError> {
        self.reap(max_attempts, false).await
    }

    async fn recover_interrupted(&self, max_attempts: u32) -> Result<u64, StoreError> {
        self.recover(max_attempts).await
    }
}

/// The insert of an attempt's execution, `RUNNING`, if `lease` is held.
pub(super) fn start_statement<'a>(lease: &'a Lease, start: &'a ExecutionStart) -> Statement<'a> {
    Statement::new(sql::START_EXECUTION)
        .bind(&start.execution_id)
        .bind(i64::from(start.attempt))
        .bind(&start.plugin.name)
        .bind(&start.plugin.version)
        .bind(&start.plugin.digest)
        .bind(start.started_at)
        .bind(&lease.job_id)
        .bind(lease.token)
}

/// Writes an attempt's end under its lease, and its start first if `start` is given (it was
/// not written before): the job's new status, the execution, the output.
pub(super) async fn finish<C: WriteConnection>(
    connection: &mut C,
    lease: &Lease,
    start: Option<&ExecutionStart>,
    end: &ExecutionEnd,
) -> Result<bool, StoreError> {
    let ends = end.job_ends();
    let finish = ends.otherwise.bind(Statement::new(sql::FINISH_JOB));
    let finish = finish.bind(&lease.job_id).bind(lease.token);
    let job = ends
        .cancel_requested
        .bind(finish)
        .bind(end.objective.map(|objective| objective.value))
        .bind(end.objective.map(|objective| objective.sense.as_str()))
        .bind(end.time_to_best_s);
    let execution = Statement::new(sql::FINISH_EXECUTION)
        .bind(end.status.as_str())
        .bind(end.ended_at)
        .bind(end.error.as_ref().map(|error| error.code.as_str()))
        .bind(end.error.as_ref().map(|error| error.message.as_str()))
        .bind(&end.log_tail)
        .bind(end.log_truncated)
        .bind(&end.execution_id)
        .bind(&lease.job_id)
        .bind(end.objective.map(|objective| objective.value))
        .bind(end.objective.map(|objective| objective.sense.as_str()));
    let bytes = end.output_bytes();
    // One round trip where the backend can, three or four where it cannot.
    if C::FINISH_IN_ONE {
        let mut values = job.values;
        values.extend(execution.values);
        let finish = Statement {
            sql: if start.is_some() {
                sql::START_AND_FINISH_IN_ONE.as_str()
            } else {
                sql::FINISH_IN_ONE.as_str()
            },
            values,
        }
        .bind(end.output.as_deref())
        .bind(bytes);
        let finish = match start {
            Some(start) => finish
                .bind(i64::from(start.attempt))
                .bind(&start.plugin.name)
                .bind(&start.plugin.version)
                .bind(&start.plugin.digest)
                .bind(start.started_at),
            None => finish,
        };
        let row = connection.fetch_optional(finish).await?;
        return Ok(match row {
            Some(row) => row.integer("held")? == 1,
            None => false,
        });
    }
    if let Some(start) = start
        && connection.execute(start_statement(lease, start)).await? != 1
    {
        return Ok(false);
    }
    if connection.execute(job).await? != 1 {
        // The lease was lost: someone else owns the job now. Change nothing.
        return Ok(false);
    }
    connection.execute(execution).await?;
    if let Some(output) = &end.output {
        let insert = Statement::new(sql::INSERT_OUTPUT)
            .bind(&lease.job_id)
            .bind(output)
            .bind(bytes);
        connection.execute(insert).await?;
    }
    Ok(true)
}

/// `EXECUTIONS`'s columns (those of the `executions` table).
impl FromRow for ExecutionRecord {
    fn from_row(row: &impl Columns) -> Result<ExecutionRecord, StoreError> {
        let progress = match row.real_or_null("progress_fraction")? {
            Some(fraction) => Some(Progress {
                fraction,
                message: row.text_or_null("progress_message")?.unwrap_or_default(),
            }),
            None => None,
        };
        let error = match row.text_or_null("error_code")? {
            Some(code) => Some(ExecutionError {
                code: ErrorCode::parse(&code)?,
                message: row.text_or_null("error_message")?.unwrap_or_default(),
            }),
            None => None,
        };
        Ok(ExecutionRecord {
            id: row.text("id")?,
            attempt: attempt_from(row.integer("attempt")?)?,
            status: ExecutionStatus::parse(&row.text("status")?)?,
            plugin: PluginRef {
                name: row.text("plugin_name")?,
                version: row.text("plugin_version")?,
                digest: row.text("plugin_digest")?,
            },
            started_at: row.integer("started_at")?,
            ended_at: row.integer_or_null("ended_at")?,
            progress,
            error,
            log_tail: row.text("log_tail")?,
            log_truncated: row.flag("log_truncated")?,
            objective: super::jobs::objective_from(row)?,
            incumbents: u32::try_from(row.count("incumbents")?).unwrap_or(u32::MAX),
        })
    }
}

/// The columns each backend's claim statement (`Backend::CLAIM`) returns.
impl FromRow for ClaimedJob {
    fn from_row(row: &impl Columns) -> Result<ClaimedJob, StoreError> {
        Ok(ClaimedJob {
            created_at: row.integer("created_at")?,
            lease: Lease {
                job_id: row.text("id")?,
                owner_id: row.text("owner_id")?,
                project_id: row.text("project_id")?,
                token: row.integer("lease_token")?,
            },
            problem: row.text("problem")?,
            input: row.text("input")?,
            options: row.text("options")?,
            attempt: attempt_from(row.integer("attempts")?)?,
            dataset: Option::<JobDataset>::from_row(row)?,
            binding: Option::<PluginBinding>::from_row(row)?,
            race_of: row.text_or_null("race_of")?,
        })
    }
}

fn attempt_from(value: i64) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("attempt number {value}")))
}

impl ExecutionEnd {
    /// What its job becomes, whether or not its cancellation was asked for.
    pub(super) fn job_ends(&self) -> JobEnds {
        JobEnds::after(self.status, self.retry, self.ended_at)
    }

    /// The output's size, which counts against its owner's output quota.
    pub(super) fn output_bytes(&self) -> Option<i64> {
        self.output
            .as_ref()
            .map(|output| i64::try_from(output.len()).unwrap_or(i64::MAX))
    }
}
