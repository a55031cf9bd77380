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

mod batch;
mod postgres;
pub mod scratch;
mod service;
mod shared;
mod sql;
mod sqlite;
#[cfg(test)]
mod tests;

use std::time::Duration;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Row, Type};

pub use self::batch::QueuedWrite;
pub use self::postgres::PostgresStore;
pub use self::service::{MinuteCounts, QueueDepth, ReplicaReport, ServiceStats};
pub use self::sqlite::SqliteStore;

/// Milliseconds since the Unix epoch, the store's one representation of time.
pub type Millis = i64;

/// Now, in [`Millis`].
pub fn now_millis() -> Millis {
    chrono::Utc::now().timestamp_millis()
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or failed the operation.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A row with the same unique key exists already.
    #[error("{0} already exists")]
    Conflict(String),
    /// The schema could not be brought up to date.
    #[error("migration {version} failed: {source}")]
    Migration {
        version: i64,
        #[source]
        source: sqlx::Error,
    },
    /// The store is shutting down and takes no more writes.
    #[error("the store is closed")]
    Closed,
    /// The database holds a value this version of caseload does not understand.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// Nothing was written: it would take its owner past a quota, or the owner is gone.
    #[error("refused: {0:?}")]
    Refused(Refusal),
}

/// Why a write that adds to what a user holds was refused, checked in the transaction that
/// would have committed it (so concurrent writes cannot all pass one check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The owner would have more jobs pending than this.
    PendingJobs(u64),
    /// The owner would keep more bytes of inputs (data files, and what its jobs hold) than
    /// this.
    DatasetBytes(u64),
    /// The owner no longer exists (deleted since its token was checked).
    NoSuchOwner,
}

/// What one user may hold at once, unless the user has quotas of its own
/// ([`UserQuotas`]): the server's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    pub pending_jobs: u64,
    /// Bytes of inputs: data files, the inputs jobs keep, and data files deleted while jobs
    /// still refer to them.
    pub dataset_bytes: u64,
    pub output_bytes: u64,
}

impl Default for Quotas {
    fn default() -> Quotas {
        Quotas {
            pending_jobs: 10_000,
            dataset_bytes: 10 << 30,
            output_bytes: 10 << 30,
        }
    }
}

#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub username: String,
    pub password_hash: String,
    /// A disabled user cannot log in, and its tokens are refused.
    pub disabled: bool,
}

/// What a request's token is checked against, on every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserAccess {
    pub disabled: bool,
    /// May publish and promote plugins, and see what the service runs on.
    pub admin: bool,
    /// Tokens issued before this (milliseconds since the epoch) are revoked.
    pub tokens_valid_after: i64,
}

/// What counts against a user's quotas, and the user's own quotas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub pending_jobs: u64,
    pub dataset_bytes: u64,
    pub output_bytes: u64,
    pub quotas: UserQuotas,
}

/// A user's own quotas; `None` is the server's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserQuotas {
    pub pending_jobs: Option<u64>,
    pub dataset_bytes: Option<u64>,
    pub output_bytes: Option<u64>,
}

/// What `caseload user` changes of a user.
#[derive(Debug, Clone)]
pub enum UserChange {
    Disable,
    Enable,
    /// Every token issued until now stops working.
    RevokeTokens,
    /// A new password hash; the tokens issued until now stop working too.
    Password(String),
    /// The user's own quotas, both replaced.
    Quotas(UserQuotas),
    /// Made an administrator, or not ([`StoreError::Conflict`] for the last one).
    Admin(bool),
}

/// What a job is doing, as clients see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
}

/// What one attempt at running a job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionStatus {
    Running,
    Completed,
    Failed,
    TimedOut,
    Cancelled,
    /// Its worker died or lost its lease; the job went back to the queue.
    Abandoned,
}

/// Why an execution failed, as a stable machine-readable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidInput,
    PluginError,
    Trap,
    Timeout,
    MemoryLimit,
    InvalidOutput,
    WorkerLost,
}

macro_rules! string_enum {
    ($type:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $type {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($type::$variant => $text),*
                }
            }

            pub fn parse(text: &str) -> Result<$type, StoreError> {
                match text {
                    $($text => Ok($type::$variant),)*
                    other => Err(StoreError::Corrupt(format!(
                        concat!("unknown ", stringify!($type), " {:?}"),
                        other
                    ))),
                }
            }
        }
    };
}

string_enum!(JobStatus {
    Pending => "PENDING",
    Running => "RUNNING",
    Completed => "COMPLETED",
    Failed => "FAILED",
    Cancelled => "CANCELLED",
});

string_enum!(ExecutionStatus {
    Running => "RUNNING",
    Completed => "COMPLETED",
    Failed => "FAILED",
    TimedOut => "TIMED_OUT",
    Cancelled => "CANCELLED",
    Abandoned => "ABANDONED",
});

string_enum!(ErrorCode {
    InvalidInput => "invalid_input",
    PluginError => "plugin_error",
    Trap => "trap",
    Timeout => "timeout",
    MemoryLimit => "memory_limit",
    InvalidOutput => "invalid_output",
    WorkerLost => "worker_lost",
});

/// A client's `Idempotency-Key` and a digest of the request it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idempotency {
    pub key: String,
    pub request_hash: String,
}

/// What [`JobStore::cancel_job`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was pending: it is `CANCELLED` and never runs.
    Cancelled,
    /// The job is running: its worker was asked to stop, and ends it `CANCELLED`.
    Requested,
    /// The job had ended already, with this status.
    Ended(JobStatus),
}

/// What [`JobStore::insert_job`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inserted {
    /// The job is stored.
    Created,
    /// The owner used this idempotency key before: nothing was stored, and this is the job that
    /// key names, with the digest of the request that created it.
    Existing {
        job_id: String,
        request_hash: String,
    },
    /// Nothing was stored: the owner is at a quota, or gone.
    Refused(Refusal),
}

/// A job as accepted by the API, stored before the client hears about it.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub id: String,
    pub owner_id: String,
    /// The name of the use case the job runs (resolved from the client's `problem_id`).
    pub problem: String,
    /// The input JSON, already validated.
    pub input: String,
    /// The resolved job options JSON (time limit, seed...).
    pub options: String,
    pub created_at: Millis,
    pub idempotency: Option<Idempotency>,
    /// The dataset the job reads instead of inline input (then `input` is empty).
    pub dataset: Option<JobDataset>,
    /// Its place among its owner's pending jobs (`options.priority`): higher runs first.
    pub priority: u8,
    /// Its labels, a JSON object of strings, if it has any.
    pub labels: Option<String>,
    /// Where its end is posted (`options.callback_url`), if anywhere.
    pub callback_url: Option<String>,
    /// The quotas it is checked against, where its owner has none of its own.
    pub quotas: Quotas,
}

/// A job's end to post to the callback its launch named: claimed by one dispatcher for a
/// while, then delivered, tried again later, or given up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookDelivery {
    /// The message's id (`webhook-id`), the same on every attempt.
    pub id: String,
    pub job_id: String,
    pub owner_id: String,
    pub url: String,
    pub status: JobStatus,
    /// This attempt's number, 1 for the first.
    pub attempts: u32,
    pub created_at: Millis,
}

/// What one [`JobStore::claim_webhooks`] may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookClaim {
    /// The most deliveries claimed.
    pub deliveries: u32,
    /// The most deliveries in flight to one destination (the callback URL's scheme, host and
    /// port), counting those every dispatcher already holds.
    pub per_destination: u32,
    /// How long the claimed deliveries are the claimer's.
    pub hold: Duration,
}

/// How an attempt to deliver a webhook went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookOutcome {
    Delivered,
    RetryAt { at: Millis, error: String },
    GiveUp { error: String },
}

/// A job's own reference to the dataset it was launched with: the blob outlives the data file
/// as long as a job refers to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDataset {
    pub data_file_id: String,
    pub blob_id: String,
    pub media_type: String,
}

/// An uploaded dataset, as `GET /data_file/<id>` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    pub id: String,
    pub owner_id: String,
    /// Where the bytes are; uploads of the same bytes share one blob.
    pub blob_id: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
    pub media_type: String,
    pub filename: Option<String>,
    pub created_at: Millis,
}

/// A job with its executions, for the status endpoint.
#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: String,
    pub problem: String,
    pub status: JobStatus,
    pub created_at: Millis,
    pub ended_at: Option<Millis>,
    pub labels: Option<String>,
    pub executions: Vec<ExecutionRecord>,
}

#[derive(Debug, Clone)]
pub struct PluginRef {
    pub name: String,
    pub version: String,
    pub digest: String,
}

#[derive(Debug, Clone)]
pub struct ExecutionRecord {
    pub id: String,
    pub attempt: u32,
    pub status: ExecutionStatus,
    pub plugin: PluginRef,
    pub started_at: Millis,
    pub ended_at: Option<Millis>,
    pub progress: Option<Progress>,
    pub error: Option<ExecutionError>,
    pub log_tail: String,
    pub log_truncated: bool,
}

/// What a running execution shows before it ends: its latest progress, its log so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveUpdate {
    pub progress: Option<Progress>,
    /// The log's newest bytes, and whether older ones were dropped.
    pub log: Option<(String, bool)>,
}

impl From<Progress> for LiveUpdate {
    fn from(progress: Progress) -> LiveUpdate {
        LiveUpdate {
            progress: Some(progress),
            log: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub fraction: f64,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionError {
    pub code: ErrorCode,
    pub message: String,
}

/// The right to write a running execution, held by the worker that claimed its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub job_id: String,
    /// Whose job it is: the change notices of the lease's writes name it.
    pub owner_id: String,
    /// Bumped on every claim; writes that carry an older token are ignored.
    pub token: i64,
}

/// A job a worker claimed and must now run.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    pub lease: Lease,
    pub problem: String,
    pub input: String,
    pub options: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    pub created_at: Millis,
    pub dataset: Option<JobDataset>,
}

/// How an execution ended, written in one transaction with the job's new status.
#[derive(Debug, Clone)]
pub struct ExecutionEnd {
    pub execution_id: String,
    pub status: ExecutionStatus,
    pub job_status: JobStatus,
    pub error: Option<ExecutionError>,
    /// The output JSON, for a completed execution.
    pub output: Option<String>,
    pub log_tail: String,
    pub log_truncated: bool,
    pub ended_at: Millis,
}

/// A job as `GET /jobs` lists it.
#[derive(Debug, Clone)]
pub struct JobSummary {
    pub id: String,
    pub problem: String,
    pub status: JobStatus,
    pub created_at: Millis,
    pub ended_at: Option<Millis>,
    /// A JSON object of strings, if the job has labels.
    pub labels: Option<String>,
}

/// Which of an owner's jobs `GET /jobs` lists; every condition given must hold.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Any of these statuses, as clients see them.
    pub statuses: Vec<JobStatus>,
    /// The use case's name.
    pub problem: Option<String>,
    /// Every one of these labels, key and value.
    pub labels: Vec<(String, String)>,
    /// Created at or after.
    pub since: Option<Millis>,
    /// Created before.
    pub until: Option<Millis>,
    /// Any of these ids.
    pub ids: Vec<String>,
}

/// What a job was launched with.
#[derive(Debug, Clone)]
pub struct JobInput {
    /// The inline input, or for a dataset job the parameters given beside it (or nothing).
    pub input: String,
    pub dataset: Option<JobDataset>,
}

/// The job's output, or where the job is instead.
#[derive(Debug, Clone)]
pub enum JobOutput {
    Completed(String),
    NotCompleted(JobStatus),
}

/// Everything the server stores.
#[async_trait]
pub trait JobStore: Send + Sync + 'static {
    /// Creates a user; [`StoreError::Conflict`] if the name is taken.
    async fn create_user(&self, username: &str, password_hash: &str) -> Result<User, StoreError>;

    async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError>;

    async fn user_count(&self) -> Result<u64, StoreError>;
    /// Whether the user with this id may use its tokens; `None` if there is no such user.
    async fn user_access(&self, user_id: &str) -> Result<Option<UserAccess>, StoreError>;
    /// What counts against the user's quotas now; `None` if there is no such user.
    async fn usage(&self, user_id: &str) -> Result<Option<Usage>, StoreError>;
    /// Changes a user; false if there is no such user.
    async fn update_user(&self, username: &str, change: &UserChange) -> Result<bool, StoreError>;
    /// Deletes a user with its jobs and data files, in one transaction; false if there is no
    /// such user, [`StoreError::Conflict`] while any of its jobs is pending or running.
    async fn delete_user(&self, username: &str) -> Result<bool, StoreError>;

    /// Stores a new `PENDING` job durably; returns once it is committed. With an idempotency key
    /// the owner used before, stores nothing and names the job that key created.
    async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError>;

    /// Stores new `PENDING` jobs in one transaction, all or none, as [`JobStore::insert_job`]
    /// stores one; what became of each, in order.
    async fn insert_jobs(&self, jobs: &[NewJob]) -> Result<Vec<Inserted>, StoreError>;

    /// The job an idempotency key of this owner created, with its request digest.
    async fn job_by_idempotency_key(
        &self,
        owner_id: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError>;

    /// The job with its executions, if it exists and belongs to `owner_id`.
    async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError>;

    /// The owner's jobs that pass `filter`, newest first: at most `limit`, all older than the
    /// job `before` if given (keyset pagination on the time-ordered id).
    async fn jobs(
        &self,
        owner_id: &str,
        filter: &JobFilter,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<JobSummary>, StoreError>;

    /// The job's output, if it exists and belongs to `owner_id`.
    async fn job_output(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobOutput>, StoreError>;

    /// Cancels the owner's job: a pending one at once, a running one by marking it so that
    /// its worker (told through [`JobEvents::cancel_requested`], on
    /// every replica) stops it. `None` if the owner has no such job.
    async fn cancel_job(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<CancelOutcome>, StoreError>;

    /// Starts an upload: a blob with no digest yet, which no query shows. Returns its id.
    async fn begin_blob(&self) -> Result<String, StoreError>;

    /// Appends chunk number `seq` (from 0) to an upload started by [`JobStore::begin_blob`].
    async fn write_blob_chunk(
        &self,
        blob_id: &str,
        seq: u32,
        data: &[u8],
    ) -> Result<(), StoreError>;

    /// Completes an upload in one transaction: the blob gets its digest, or is dropped for the
    /// blob that holds the same bytes already, and the data file appears. Returns the data
    /// file as stored (its `blob_id` may be the older blob's).
    /// Refused ([`StoreError::Refused`]) if it would take its owner past its dataset quota,
    /// `max_dataset_bytes` unless the owner has its own.
    async fn complete_upload(
        &self,
        file: &DataFile,
        max_dataset_bytes: u64,
    ) -> Result<DataFile, StoreError>;

    /// Deletes an unfinished upload and its chunks.
    async fn discard_blob(&self, blob_id: &str) -> Result<(), StoreError>;

    /// The data file, if it exists and belongs to `owner_id`.
    async fn data_file(&self, owner_id: &str, id: &str) -> Result<Option<DataFile>, StoreError>;

    /// Deletes the data file; its bytes go too unless another data file or a job still refers
    /// to them. False if there was no such file of `owner_id`'s.
    async fn delete_data_file(&self, owner_id: &str, id: &str) -> Result<bool, StoreError>;

    /// The bytes of a completed blob, `None` if there is no such blob.
    async fn blob(&self, blob_id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Deletes, at most `batch` of each, blobs nothing refers to and uploads untouched since
    /// `stale_before` (cut off by a crash). Returns how many blobs went.
    async fn sweep_blobs(&self, stale_before: Millis, batch: u32) -> Result<u64, StoreError>;

    /// Claims up to `limit` of the oldest pending jobs, oldest first: marks them `RUNNING`,
    /// bumps their attempt counts and lease tokens, and sets their leases to expire after
    /// `lease`.
    async fn claim_jobs(&self, lease: Duration, limit: u32) -> Result<Vec<ClaimedJob>, StoreError>;

    /// Gives back a claimed job that never started: `PENDING` again, its attempt not counted.
    /// Its outcome is false if the lease is no longer held.
    fn release_unstarted(&self, lease: &Lease) -> QueuedWrite;

    /// Extends the leases this process holds to expire `lease` from now. Returns the leases that
    /// were lost (the job was reaped, cancelled or claimed by another worker).
    async fn heartbeat(&self, leases: &[Lease], lease: Duration) -> Result<Vec<Lease>, StoreError>;

    /// Queues the start of an attempt for the next group commit (see [`QueuedWrite`]); its
    /// outcome is false if the lease is no longer held.
    fn start_execution(
        &self,
        lease: &Lease,
        execution_id: &str,
        attempt: u32,
        plugin: &PluginRef,
        started_at: Millis,
    ) -> QueuedWrite;

    /// Updates a running execution's progress and log, whichever `update` carries. Returns
    /// false if the lease is no longer held.
    async fn record_progress(
        &self,
        lease: &Lease,
        execution_id: &str,
        update: &LiveUpdate,
    ) -> Result<bool, StoreError>;

    /// Queues an execution's end: moves its job to `end.job_status` and stores the output if
    /// any. Its outcome is false, and nothing changed, if the lease is no longer held.
    fn finish_execution(&self, lease: &Lease, end: &ExecutionEnd) -> QueuedWrite;

    /// Jobs whose lease expired (their worker died or stalled): the execution becomes
    /// `ABANDONED` with `worker_lost`, and the job goes back to `PENDING`, or to `FAILED` once
    /// it had `max_attempts`. Returns how many jobs were reaped.
    async fn reap_expired(&self, max_attempts: u32) -> Result<u64, StoreError>;

    /// At start. On the embedded single-process store every `RUNNING` job was left by a crash
    /// of this very server and is reaped at once; on a shared database other replicas may be
    /// running them, so only expired leases are reaped.
    async fn recover_interrupted(&self, max_attempts: u32) -> Result<u64, StoreError>;

    /// Deletes at most `batch` finished jobs (with their executions and outputs) that ended
    /// before `ended_before`. Returns how many were deleted.
    async fn purge_finished(&self, ended_before: Millis, batch: u32) -> Result<u64, StoreError>;

    /// Claims webhook deliveries that are due, fairly between owners and within the bound per
    /// destination, for the claim's `hold`: no other dispatcher takes them meanwhile, and a
    /// dispatcher that dies lets them come due again after it.
    async fn claim_webhooks(
        &self,
        claim: &WebhookClaim,
    ) -> Result<Vec<WebhookDelivery>, StoreError>;

    /// Records how a claimed delivery's attempt went.
    async fn settle_webhook(&self, id: &str, outcome: &WebhookOutcome) -> Result<(), StoreError>;

    /// The user's webhook signing secret, made on first use, or a new one with `rotate`;
    /// `None` for no such user.
    async fn webhook_secret(
        &self,
        owner_id: &str,
        fresh: &str,
        rotate: bool,
    ) -> Result<Option<String>, StoreError>;

    /// How many jobs an owner has in each status, as clients see it; statuses with none
    /// are left out.
    async fn job_counts(&self, owner_id: &str) -> Result<Vec<(JobStatus, u64)>, StoreError>;

    /// What a job was launched with, if the owner has it.
    async fn job_input(&self, owner_id: &str, job_id: &str)
    -> Result<Option<JobInput>, StoreError>;

    /// Writes this replica's report of itself, and forgets replicas silent since
    /// `forget_before`.
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

    /// Tells `events` whenever a process makes a job pending or asks to cancel one (other
    /// processes only), and whenever any job changes as clients see it (every process, this
    /// one included).
    async fn watch_new_jobs(&self, events: std::sync::Arc<dyn JobEvents>);
}

/// What the store reports to this process about jobs other processes changed. The layers
/// above implement it, so the store needs nothing of them.
pub trait JobEvents: Send + Sync {
    /// Jobs became pending: idle workers should look for them.
    fn jobs_pending(&self) {}
    /// A client asked to cancel the job: this process's run of it, if any, should stop.
    fn cancel_requested(&self, _job_id: &str) {}
    /// Jobs changed as clients see them (status, progress, log), on any replica, once
    /// committed.
    fn jobs_changed(&self, _changes: &[JobChange]) {}
}

impl std::fmt::Debug for dyn JobEvents {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("JobEvents")
    }
}

/// A job whose state, as clients see it, changed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobChange {
    pub owner_id: String,
    pub job_id: String,
}

/// Several listeners of the store's events, each told everything.
pub struct EventFanout(pub Vec<std::sync::Arc<dyn JobEvents>>);

impl JobEvents for EventFanout {
    fn jobs_pending(&self) {
        self.0.iter().for_each(|events| events.jobs_pending());
    }

    fn cancel_requested(&self, job_id: &str) {
        self.0
            .iter()
            .for_each(|events| events.cancel_requested(job_id));
    }

    fn jobs_changed(&self, changes: &[JobChange]) {
        self.0
            .iter()
            .for_each(|events| events.jobs_changed(changes));
    }
}

/// Reads an execution from a row of either backend (the columns of `executions`).
fn execution_from_row<R>(row: &R) -> Result<ExecutionRecord, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
{
    let progress = match row.try_get::<Option<f64>, _>("progress_fraction")? {
        Some(fraction) => Some(Progress {
            fraction,
            message: row
                .try_get::<Option<String>, _>("progress_message")?
                .unwrap_or_default(),
        }),
        None => None,
    };
    let error = match row.try_get::<Option<String>, _>("error_code")? {
        Some(code) => Some(ExecutionError {
            code: ErrorCode::parse(&code)?,
            message: row
                .try_get::<Option<String>, _>("error_message")?
                .unwrap_or_default(),
        }),
        None => None,
    };
    Ok(ExecutionRecord {
        id: row.try_get("id")?,
        attempt: attempt_from(row.try_get("attempt")?)?,
        status: ExecutionStatus::parse(&row.try_get::<String, _>("status")?)?,
        plugin: PluginRef {
            name: row.try_get("plugin_name")?,
            version: row.try_get("plugin_version")?,
            digest: row.try_get("plugin_digest")?,
        },
        started_at: row.try_get("started_at")?,
        ended_at: row.try_get("ended_at")?,
        progress,
        error,
        log_tail: row.try_get("log_tail")?,
        log_truncated: row.try_get("log_truncated")?,
    })
}

/// Reads a job summary from a row of either backend.
fn summary_from_row<R>(row: &R) -> Result<JobSummary, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(JobSummary {
        id: row.try_get("id")?,
        problem: row.try_get("problem")?,
        status: JobStatus::parse(&row.try_get::<String, _>("status")?)?,
        created_at: row.try_get("created_at")?,
        ended_at: row.try_get("ended_at")?,
        labels: row.try_get("labels")?,
    })
}

/// Reads a claimed job from the `RETURNING` row of either backend's claim.
fn claim_from_row<R>(row: &R) -> Result<ClaimedJob, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(ClaimedJob {
        created_at: row.try_get("created_at")?,
        lease: Lease {
            job_id: row.try_get("id")?,
            owner_id: row.try_get("owner_id")?,
            token: row.try_get("lease_token")?,
        },
        problem: row.try_get("problem")?,
        input: row.try_get("input")?,
        options: row.try_get("options")?,
        attempt: attempt_from(row.try_get("attempts")?)?,
        dataset: dataset_from_row(row)?,
    })
}

/// The dataset columns of a job row, all set or all null.
fn dataset_from_row<R>(row: &R) -> Result<Option<JobDataset>, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    let data_file_id: Option<String> = row.try_get("data_file_id")?;
    let blob_id: Option<String> = row.try_get("data_blob_id")?;
    let media_type: Option<String> = row.try_get("data_media_type")?;
    Ok(match (data_file_id, blob_id, media_type) {
        (Some(data_file_id), Some(blob_id), Some(media_type)) => Some(JobDataset {
            data_file_id,
            blob_id,
            media_type,
        }),
        (None, None, None) => None,
        _ => {
            return Err(StoreError::Corrupt(
                "a job's dataset columns are partly null".into(),
            ));
        }
    })
}

fn data_file_from_row<R>(row: &R) -> Result<DataFile, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let size: i64 = row.try_get("size")?;
    Ok(DataFile {
        id: row.try_get("id")?,
        owner_id: row.try_get("owner_id")?,
        blob_id: row.try_get("blob_id")?,
        size: u64::try_from(size)
            .map_err(|_| StoreError::Corrupt(format!("data file size {size}")))?,
        sha256: row.try_get("sha256")?,
        media_type: row.try_get("media_type")?,
        filename: row.try_get("filename")?,
        created_at: row.try_get("created_at")?,
    })
}

fn attempt_from(value: i64) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("attempt number {value}")))
}

/// A taken user name is a conflict, not a database failure.
fn user_conflict(error: sqlx::Error, username: &str) -> StoreError {
    if error
        .as_database_error()
        .is_some_and(|database| database.is_unique_violation())
    {
        StoreError::Conflict(format!("user {username:?}"))
    } else {
        StoreError::Database(error)
    }
}

impl User {
    /// A new user with a fresh id.
    fn new(username: &str, password_hash: &str) -> User {
        User {
            id: uuid::Uuid::now_v7().to_string(),
            username: username.to_owned(),
            disabled: false,
            password_hash: password_hash.to_owned(),
        }
    }
}

impl JobRecord {
    fn new(summary: JobSummary, executions: Vec<ExecutionRecord>) -> JobRecord {
        JobRecord {
            id: summary.id,
            problem: summary.problem,
            status: summary.status,
            created_at: summary.created_at,
            ended_at: summary.ended_at,
            labels: summary.labels,
            executions,
        }
    }
}

impl JobOutput {
    /// The output only counts once the job completed.
    fn from_parts(status: JobStatus, output: Option<String>) -> JobOutput {
        match output {
            Some(output) if status == JobStatus::Completed => JobOutput::Completed(output),
            _ => JobOutput::NotCompleted(status),
        }
    }
}

impl ExecutionEnd {
    /// When the job ends with this execution: never, if it goes back to the queue.
    fn job_ended_at(&self) -> Option<Millis> {
        match self.job_status {
            JobStatus::Pending | JobStatus::Running => None,
            JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled => Some(self.ended_at),
        }
    }
}
