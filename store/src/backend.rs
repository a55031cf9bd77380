//! What a SQL backend is ([`Backend`]), and the writes a group-commit batch carries
//! ([`apply`]), written once for both. Each capability's methods are written once over
//! [`Backend`] in their own file; the statements are in [`super::sql`]; what differs (the
//! claim, the reaper, cancellation notices, recovery at start, wake-ups from other
//! processes) is each backend's, in its own file.

use std::sync::Arc;

use sqlx::{Database, Decode, Encode, IntoArguments, Pool, Type};

use super::batch::{Batcher, Outcome, Write};
use super::executions::{ClaimFilter, ClaimedJob, finish, start_statement};
use super::jobs::{Inserted, insert_job};
use super::launch_quotas::LaunchQuotas;
use super::outcome::{JobEnds, Retry};
use super::statement::{Statement, Value, WriteConnection};
use super::{ExecutionStatus, JobChange, JobEvents, StoreError, now_millis, sql};
use super::{incumbents, rows};

/// Before a job id in [`Backend::announce_cancel`]: the job is asked to finish now, not to
/// be cancelled.
pub(super) const FINISH_PREFIX: &str = "finish:";

/// A SQL backend: its database, its pools and batcher, and the few things it does its own
/// way. sqlx has no common trait for a statement's rows-affected count, hence
/// [`Backend::rows_affected`].
#[async_trait::async_trait]
pub(super) trait Backend: Send + Sync + 'static {
    type Db: Database<Arguments: IntoArguments<Self::Db>>;

    /// The statement that claims up to `$2` of the oldest pending jobs with lease expiry
    /// `$1`, of the use cases `filter` lets through (named in `$3`, a JSON array, unless it
    /// lets all through), returning the columns [`ClaimedJob`]'s `from_row` reads.
    fn claim_statement(filter: &ClaimFilter) -> &'static str;

    fn rows_affected(result: &<Self::Db as Database>::QueryResult) -> u64;

    /// The pool for writes (group commit, upkeep).
    fn writer(&self) -> &Pool<Self::Db>;

    /// The pool for reads.
    fn readers(&self) -> &Pool<Self::Db>;

    /// A transaction on the writer pool, for writes. SQLite's takes the write lock as it
    /// begins (`BEGIN IMMEDIATE`): the group commit writes on a connection of its own, and
    /// SQLite refuses, without waiting, a write by a transaction that read before another
    /// connection's commit.
    async fn begin_write(&self) -> Result<sqlx::Transaction<'_, Self::Db>, StoreError> {
        Ok(self.writer().begin().await?)
    }

    fn batcher(&self) -> &Batcher;

    /// Requeues (or fails, after `max_attempts`) `RUNNING` jobs whose lease expired, or every
    /// `RUNNING` job with `every_running`. Returns how many.
    async fn reap(&self, max_attempts: u32, every_running: bool) -> Result<u64, StoreError>;

    /// Tells, at commit, every process that may run the job that its cancellation was asked
    /// for.
    async fn announce_cancel(
        transaction: &mut sqlx::Transaction<'_, Self::Db>,
        job_id: &str,
    ) -> Result<(), StoreError>;

    /// Tells, at commit, every process that the jobs changed as clients see them.
    async fn announce_changes(
        transaction: &mut sqlx::Transaction<'_, Self::Db>,
        changes: &[JobChange],
    ) -> Result<(), StoreError>;

    /// After a commit that changed jobs: tells this process, where no announcement does.
    fn changes_committed(&self, changes: &[JobChange]);

    /// Locks user `$1`'s row until the transaction ends, where other writers could
    /// otherwise change what a quota check reads meanwhile (`None` where the transaction
    /// excludes every other writer already).
    const LOCK_USER: Option<&'static str>;

    /// Takes back every launch allowance user `$1`'s slots hold, locking those slots until
    /// the transaction ends: it waits for every launch that took from one to commit, so the
    /// quota check after it reads the user's exact totals (`None` where the backend sets no
    /// allowances aside: see migration 0036 of PostgreSQL).
    const RECLAIM_ALLOWANCES: Option<&'static str>;

    /// Locks project `$1`'s row until the transaction ends, as [`Backend::LOCK_USER`] does a
    /// user's, for the project's quota check.
    const LOCK_PROJECT: Option<&'static str>;

    /// Whether an attempt's end is one statement, where the backend can write three tables
    /// in one ([`sql::FINISH_IN_ONE`], [`sql::START_AND_FINISH_IN_ONE`]), or three.
    const FINISH_IN_ONE: bool;

    /// A statement that tells every replica at commit that the plugins the store lists
    /// changed, where the backend can (`None`: replicas poll).
    const ANNOUNCE_PLUGINS: Option<&'static str>;

    /// A statement that tells every replica that a replica reported, so that each counts
    /// again the replicas writing to the database, where replicas share one (`None`: a
    /// replica has its database to itself).
    const ANNOUNCE_REPLICAS: Option<&'static str>;

    /// A statement that makes the transaction's webhook claim the only one until it commits,
    /// where the claim statement alone is not.
    const LOCK_WEBHOOK_CLAIMS: Option<&'static str>;

    /// A condition that the job's labels hold the key `$key` with the value `$value`, where
    /// `key` and `value` are the numbers of those parameters.
    fn label_condition(key: usize, value: usize) -> String;

    /// [`Executions::recover_interrupted`](super::Executions::recover_interrupted), the backend's way.
    async fn recover(&self, max_attempts: u32) -> Result<u64, StoreError>;

    /// [`JobQueue::watch_new_jobs`](super::JobQueue::watch_new_jobs), the backend's way.
    async fn watch(&self, events: Arc<dyn JobEvents>);
}

/// Applies one write of a batch; `quotas` carries the quota checks of the transaction's
/// launches from one to the next.
pub(super) async fn apply<C: WriteConnection>(
    connection: &mut C,
    write: &Write,
    quotas: &mut LaunchQuotas,
) -> Result<Outcome, StoreError> {
    Ok(match write {
        Write::InsertJob(job) => {
            let jobs = std::slice::from_ref(job.as_ref());
            let inserted = match quotas.check(connection, jobs).await? {
                Some(refusal) => Inserted::Refused(refusal),
                None => insert_job(connection, job).await?,
            };
            quotas.add(jobs, std::slice::from_ref(&inserted));
            Outcome::Inserted(inserted)
        }
        Write::InsertJobs { jobs, experiment } => {
            if let Some(refusal) = quotas.check(connection, jobs).await? {
                return Ok(Outcome::InsertedAll(vec![
                    Inserted::Refused(refusal);
                    jobs.len()
                ]));
            }
            // An experiment is stored with its runs, in their transaction: never one without
            // the other.
            if let Some(experiment) = experiment {
                let insert = Statement::new(sql::INSERT_EXPERIMENT)
                    .bind(&experiment.id)
                    .bind(&experiment.owner_id)
                    .bind(&experiment.problem)
                    .bind(&experiment.definition)
                    .bind(experiment.created_at)
                    .bind(experiment.project_id.as_ref());
                connection.execute(insert).await?;
            }
            // A group that meets a job stored before (its key used already: the same request
            // sent twice at once) stores no more of itself: the first request stored it all.
            let mut inserted = Vec::with_capacity(jobs.len());
            for job in jobs {
                let outcome = insert_job(connection, job).await?;
                let stored_before = outcome != Inserted::Created;
                inserted.push(outcome);
                if stored_before {
                    break;
                }
            }
            quotas.add(jobs, &inserted);
            Outcome::InsertedAll(inserted)
        }
        Write::Claim {
            lease_expires_at,
            limit,
            filter,
        } => {
            let claim = Statement::new(C::claim_statement(filter))
                .bind(*lease_expires_at)
                .bind(i64::from(*limit));
            let names = filter.names_json();
            let claim = match **filter {
                ClaimFilter::All => claim,
                _ => claim.bind(names.as_str()),
            };
            let rows = connection.fetch_all(claim).await?;
            let mut claimed: Vec<ClaimedJob> = rows::all(&rows)?;
            // RETURNING has no order: oldest first, as the queue promises.
            claimed.sort_by(|a, b| {
                (a.created_at, &a.lease.job_id).cmp(&(b.created_at, &b.lease.job_id))
            });
            Outcome::Claimed(claimed)
        }
        Write::Release { lease } => {
            // An attempt abandoned before it started: its job runs again.
            let ends = JobEnds::after(ExecutionStatus::Abandoned, Retry::Yes, now_millis());
            let release = Statement::new(sql::RELEASE_UNSTARTED)
                .bind(&lease.job_id)
                .bind(lease.token);
            let release = ends.otherwise.bind(ends.cancel_requested.bind(release));
            Outcome::Held(connection.execute(release).await? == 1)
        }
        Write::Start { lease, start } => {
            Outcome::Held(connection.execute(start_statement(lease, start)).await? == 1)
        }
        Write::Progress {
            lease,
            execution_id,
            update,
        } => {
            let progress = update.progress.as_ref();
            let log = update.log.as_ref();
            let record = Statement::new(sql::RECORD_PROGRESS)
                .bind(progress.map(|progress| progress.fraction))
                .bind(progress.map(|progress| progress.message.as_str()))
                .bind(execution_id)
                .bind(&lease.job_id)
                .bind(lease.token)
                .bind(log.map(|(tail, _)| tail.as_str()))
                .bind(Value::Flag(log.map(|(_, truncated)| *truncated)))
                .bind(update.incumbents.last().map(|last| i64::from(last.seq)));
            let held = connection.execute(record).await? == 1;
            if held {
                incumbents::keep(connection, &lease.job_id, execution_id, &update.incumbents)
                    .await?;
            }
            Outcome::Held(held)
        }
        Write::Heartbeat {
            leases,
            lease_expires_at,
        } => {
            let mut lost = Vec::new();
            for lease in leases {
                let renew = Statement::new(sql::HEARTBEAT)
                    .bind(*lease_expires_at)
                    .bind(&lease.job_id)
                    .bind(lease.token);
                if connection.execute(renew).await? == 0 {
                    lost.push(lease.clone());
                }
            }
            Outcome::Lost(lost)
        }
        Write::Finish { lease, start, end } => {
            Outcome::Held(finish(connection, lease, start.as_deref(), end).await?)
        }
    })
}

/// A backend's connection, the one its writes and the reads inside a transaction go through.
pub(super) type Connection<B> = <<B as Backend>::Db as Database>::Connection;

/// A row of the backend's database.
pub(super) type DbRow<B> = <<B as Backend>::Db as Database>::Row;

/// A Rust type the code shared by both backends binds and reads back on `DB`.
///
/// The shared code needs these of each backend's database (`i64: Column<B::Db>`, ...) and
/// Rust cannot imply them from `B: Backend` alone: only bounds whose subject is `Self` or one
/// of its associated types are implied by a trait (rust-lang/rust#20671), and these bounds'
/// subjects are `i64`, `&str` or a connection reference. So each generic item repeats one
/// short list, in this shape, of what it uses; `Option<T>` and `&T` follow from `T`'s.
pub(super) trait Column<DB: Database>:
    for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>
{
}

impl<DB: Database, T> Column<DB> for T where
    T: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>
{
}

/// A Rust type the shared code binds on `DB` for a statement that lives for `'q` (as
/// [`Column`], without reading it back): `&'q str`, `Option<&'q str>`, `Option<i64>`...
pub(super) trait Param<'q, DB: Database>: Encode<'q, DB> + Type<DB> {}

impl<'q, DB: Database, T> Param<'q, DB> for T where T: Encode<'q, DB> + Type<DB> {}
