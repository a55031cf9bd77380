//! What a SQL backend is ([`Backend`]), and the writes a group-commit batch carries
//! ([`apply`](crate::apply::apply)), written once for both. Each capability's methods are written once over
//! [`Backend`] in their own file; the statements are in [`super::sql`]; what differs (the
//! claim, the reaper, cancellation notices, recovery at start, wake-ups from other
//! processes) is each backend's, in its own file.

use std::sync::Arc;

use sqlx::{Database, Decode, Encode, IntoArguments, Pool, Type};

use super::types::{JobChange, JobEvents, StoreError};

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
    /// lets all through), returning the columns [`ClaimedJob`](crate::records::ClaimedJob)'s `from_row` reads.
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
    /// in one ([`sql::FINISH_IN_ONE`](crate::sql::FINISH_IN_ONE), [`sql::START_AND_FINISH_IN_ONE`](crate::sql::START_AND_FINISH_IN_ONE)), or three.
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

/// The use cases whose jobs a claim may take: a worker pool's share of the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimFilter {
    /// Every use case's.
    All,
    /// Only these use cases'.
    Only(Vec<String>),
    /// Every use case's but these.
    Except(Vec<String>),
}

impl ClaimFilter {
    /// The use cases named, as the JSON array the claim statements read (`$3`).
    pub(super) fn names_json(&self) -> String {
        match self {
            ClaimFilter::All => "[]".to_owned(),
            ClaimFilter::Only(names) | ClaimFilter::Except(names) => {
                serde_json::to_string(names).unwrap_or_else(|_| "[]".to_owned())
            }
        }
    }
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
