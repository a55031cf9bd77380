//! The job store: users, jobs, their executions and outputs, behind one interface.
//!
//! Handlers and workers see only [`JobStore`]. Two implementations sit behind it: the embedded
//! [`SqliteStore`] (one process) and [`PostgresStore`] (any number of replicas sharing one
//! database). Every write of a running execution carries the [`Lease`] its worker got when it
//! claimed the job, so a worker that lost its lease changes nothing.
//!
//! The frequent writes (new jobs, claims, starts, progress, heartbeats, ends) go through a
//! [`batch::Batcher`]: concurrent writes share one transaction and so one durable commit, which
//! is where throughput comes from, without weakening durability.
//!
//! # Invariants in full
//!
//! What ARCHITECTURE.md says in a line each, with the detail.
//!
//! - Migrations are applied by one process at a time (PostgreSQL's advisory lock; SQLite's
//!   `BEGIN IMMEDIATE`), at start or by `caseload migrate`; a replica started with `--no-migrate`
//!   applies none and refuses a database that lacks one of its build's. `/readyz` checks the
//!   same list, so a replica behind its schema is never sent traffic.
//! - Every write of a running execution (start, progress, heartbeat, end) carries its lease
//!   token and checks `status = 'RUNNING'`; a worker whose lease moved on changes nothing. Every
//!   claim and every reap bumps the token.
//! - A `RUNNING` job always has a live lease or is reaped: on SQLite (one process per file) all
//!   `RUNNING` jobs are requeued at start; on PostgreSQL only expired leases are, since other
//!   replicas may be running the rest.
//! - A claimed job is either running, waiting in its process's local queue with its lease
//!   renewed like a running one, or given back (`release_unstarted`, its attempt uncounted) when
//!   the process stops, when it is cancelled, or when it has waited 500 ms (every worker of the
//!   process is busy: a run in its batch turned out long), so that no job waits behind another
//!   while a replica idles (cancelled or waiting too long, it is handed to the pool's
//!   `release_unstarted` task; the shutdown gives back the rest of the queue). While it waits, the
//!   API shows it `PENDING`: the stored status is `RUNNING` until its execution starts, and every
//!   statement that reads a job for clients (a job, its output, a page, the counts) shows its
//!   status through the one clause `sql::CLIENT_STATUS`: `RUNNING` only with an execution
//!   running. If the process dies instead, the reaper requeues it and records the lost attempt
//!   as an `ABANDONED` execution, so attempt numbers never skip silently.
//! - What a job's status becomes when an attempt ends is decided in one place,
//!   `JobEnd::after` (`store/outcome.rs`), from the execution's status, whether an abandoned
//!   attempt's job runs again (`Retry`) and whether its cancellation was asked for. The worker
//!   decides only the execution's end; a worker's end, the release of an unstarted claim, the
//!   reaper and the recovery at start bind that function's answers into their statements, one
//!   per case only the database can tell at commit (cancellation asked for; attempts used up).
//! - The queue's order is `fair_key`, set at insert: the creation time, or 60 s after the
//!   owner's last pending job (migration 0006). A user's backlog never holds back another user's
//!   job by more than the jobs already keyed before it; a user without a backlog is first in,
//!   first out. A job of higher `priority` takes the key of its owner's first pending job of
//!   lower priority, and those move back 60 s each in the same transaction (migration 0010): the
//!   owner's set of keys grows by one place at its end, as for any job, so priority never moves
//!   a user ahead of another.
//!   A job of a shared project takes the later of that key and 60 s after the project's last
//!   pending job (migration 0032), so a project's backlog is spread as one user's is.
//! - Quota checks run in the committing transaction, after the rows they read are locked
//!   (PostgreSQL: the user's row, then the project's; SQLite's writer excludes all others): a
//!   user's pending jobs and kept bytes, and a shared project's own cap on pending jobs. A
//!   transaction reads each owner's and project's counts once and adds its own launches to them
//!   (store/launch_quotas.rs).
//! - On PostgreSQL a batch's launches of one owner are first paid for out of a launch allowance:
//!   pending jobs and dataset bytes of the owner's headroom set aside in its slots (migration
//!   0036, store/postgres_allowances.rs). A batch takes what it needs from one slot no other
//!   transaction holds and locks no user's row, so launches on several lanes and replicas never
//!   wait for each other. Where no slot has enough, the batch locks the owner's row first and
//!   checks against the counts with every allowance counted as used (taken back first where that
//!   would refuse), then adds half the headroom left to the allowances of up to 8 free slots.
//!   The quotas stay exact: the totals plus every allowance never pass a quota, headroom is
//!   handed out only with the owner's row locked, an allowance is only taken under the quotas
//!   it was handed out under, and a job back in the queue (reaped, let go, retried) is paid for
//!   out of a free allowance where one is left.
//! - The sum of a user's `user_counts` rows (migrations 0035, 0036) is its running totals:
//!   `output_bytes`, the sum of `job_outputs.bytes` of its jobs (added by a trigger on the insert
//!   of an output, taken off in the transaction that purges it), `pending_jobs`, the number of
//!   its jobs whose stored status is `PENDING` (kept by triggers on every insert, status change
//!   and delete of a job; on PostgreSQL an insert's jobs are counted once per statement and
//!   owner, migration 0040, and a claim, the only statement that sets `RUNNING`, takes
//!   its jobs off the count itself, once per owner, and marks each with the token it gave it,
//!   which the trigger then leaves alone, so that a claim of an earlier release is still
//!   counted once: migration 0039), and `kept_bytes`, its jobs' inputs and the deleted data files they
//!   still refer to, so that a quota check reads a few rows however deep the user's queue.
//!   On PostgreSQL a transaction adds to a slot no other open transaction holds (`SKIP
//!   LOCKED`): no write waits on another's counts, and no row is written by every lane.
//! - Every committed write that changes a job as clients see it (insert, start, progress, end,
//!   requeue, cancel, reap) is told to `changes::JobChanges`, with its owner and its project
//!   (whose feed hears it too): directly after the commit on SQLite, by a `caseload_job_changes` notification sent just after the commit on
//!   PostgreSQL (every replica listens, the writer included; a notice lost with its process is
//!   as a lost listening connection: waiters read the job again when their wait ends). A waiter subscribes before it
//!   reads the job, so no change falls between the read and the wait.
//! - A job with a `callback_url` gets its `webhook_deliveries` row from a trigger on the
//!   update that ends it (migration 0012), in that transaction, on every path. A dispatcher
//!   claims a delivery for 60 s by moving its `next_attempt_at` and setting `claimed_until`
//!   (migration 0016); only a 2xx marks it delivered. Deliveries are at least once, never lost;
//!   a callback's address is checked again at each delivery, after its name resolves, and the
//!   connection goes to the address checked.
//! - At most 4 deliveries are in flight to one destination (`webhook_deliveries.destination`:
//!   scheme, host and port) across all replicas: the claim counts the unexpired `claimed_until`
//!   of that destination, and on PostgreSQL claims take an advisory lock so two replicas never
//!   count the same free place. Owners take turns in each claim, so a receiver that never
//!   answers costs other users nothing but its 4 places, each for at most one 10 s attempt.
//! - An experiment is stored with its runs in one transaction, or not at all; its runs are
//!   ordinary jobs, under their owner's quotas and the fair queue like any other.
//! - A race is never claimed: both claim statements skip rows whose `race` is set. It ends once,
//!   in the transaction that finds every entrant ended (`END_RACE` moves it only from
//!   `PENDING`), with the output of its best completed entrant; a worker settles it after an
//!   entrant's end commits, and every replica's settle loop covers a worker that stopped first.
//! - A data file row exists only for a complete upload; its blob is sealed (sha256 set) in the
//!   same transaction. A blob is deleted only when no data file and no job refers to it, and the
//!   foreign keys make a racing reference fail the delete rather than dangle.

mod api_keys;
mod apply;
mod audit;
mod backend;
mod batch;
pub mod cluster;
mod commit_gate;
mod datasets;
mod executions;
mod experiments;
mod incumbents;
mod jobs;
mod jobs_page;
mod launch_quotas;
pub mod objective;
pub mod options;
mod outcome;
mod plugins;
mod postgres;
mod postgres_allowances;
mod postgres_backend;
mod postgres_ends;
mod postgres_launches;
mod postgres_notices;
mod projects;
mod races;
mod records;
mod rows;
mod schema;
pub mod scratch;
mod service;
mod sql;
mod sqlite;
mod sqlite_backend;
mod sqlite_writer;
mod statement;
pub mod sweep;
#[cfg(test)]
mod tests;
mod types;
mod users;
mod webhooks;

pub use self::api_keys::{ApiKeyRecord, ApiKeys, ProjectOwned};
pub use self::audit::{Audit, AuditEvent};
pub use self::backend::ClaimFilter;
pub use self::batch::QueuedWrite;
pub use self::datasets::{CHUNK_BYTES, DataFile, DataSets};
pub use self::executions::Executions;
pub use self::experiments::{CancelledRuns, ExperimentRun, Experiments};
pub use self::incumbents::{IncumbentRecord, Incumbents, NewIncumbent};
pub use self::jobs::{
    CancelOutcome, FinishOutcome, JobInput, JobOutput, JobQueue, JobRecord, JobSummary,
};
pub use self::jobs_page::JobFilter;
pub use self::outcome::{JobEnd, Retry};
pub use self::plugins::{
    Actor, Catalog, PluginBinding, PluginCatalog, PluginEvent, Published, StoredVersion,
};
pub use self::postgres_backend::PostgresStore;
pub use self::projects::{ProjectMember, ProjectRecord, Projects};
pub use self::races::Races;
pub use self::records::{
    ClaimedJob, ExecutionEnd, ExecutionError, ExecutionRecord, ExecutionStart, ExperimentRecord,
    Idempotency, Inserted, JobDataset, LiveUpdate, NewJob, PluginRef, Progress, RaceEntrant,
};
pub use self::schema::{Migrations, latest_migration, missing_migrations};
pub use self::service::{
    ConnectionPool, MinuteCounts, QueueDepth, ReplicaReport, Service, ServiceStats,
};
pub use self::sqlite_backend::SqliteStore;
pub use self::users::{Role, Usage, User, UserAccess, UserChange, UserEntry, UserQuotas, Users};
pub use self::webhooks::{SecretHolder, WebhookClaim, WebhookDelivery, WebhookOutcome, Webhooks};

pub use self::types::{
    ErrorCode, EventFanout, ExecutionStatus, JobChange, JobEvents, JobStatus, Lease, Millis,
    Quotas, Refusal, StoreError, now_millis,
};

/// Everything the server stores: each capability is a trait of its own, in its own file,
/// and every backend has them all.
pub trait JobStore:
    Users
    + JobQueue
    + Executions
    + DataSets
    + Webhooks
    + Service
    + PluginCatalog
    + Experiments
    + Races
    + Incumbents
    + ApiKeys
    + Audit
    + Projects
{
}

impl<S> JobStore for S where
    S: Users
        + JobQueue
        + Executions
        + DataSets
        + Webhooks
        + Service
        + PluginCatalog
        + Experiments
        + Races
        + Incumbents
        + ApiKeys
        + Audit
        + Projects
{
}
