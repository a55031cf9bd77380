//! The job store: users, jobs, their executions and outputs, behind one interface.
//!
//! Handlers and workers see only [`JobStore`]; the embedded SQLite implementation lives in
//! [`sqlite`], and a PostgreSQL one can sit beside it without either of them changing.
//! Every write of a running execution carries the [`Lease`] its worker got when it claimed the
//! job, so a worker that lost its lease changes nothing.

mod sqlite;

use std::time::Duration;

use async_trait::async_trait;

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
    /// The database holds a value this version of caseload does not understand.
    #[error("corrupt row: {0}")]
    Corrupt(String),
}

#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub username: String,
    pub password_hash: String,
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
}

/// A job with its executions, for the status endpoint.
#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: String,
    pub problem: String,
    pub status: JobStatus,
    pub created_at: Millis,
    pub ended_at: Option<Millis>,
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

    /// Stores a new `PENDING` job durably; returns once it is committed.
    async fn insert_job(&self, job: &NewJob) -> Result<(), StoreError>;

    /// The job with its executions, if it exists and belongs to `owner_id`.
    async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError>;

    /// How many jobs wait for a worker.
    async fn pending_count(&self) -> Result<u64, StoreError>;

    /// The owner's jobs, newest first: at most `limit`, all older than the job `before` if
    /// given (keyset pagination on the time-ordered id).
    async fn jobs(
        &self,
        owner_id: &str,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<JobSummary>, StoreError>;

    /// The job's output, if it exists and belongs to `owner_id`.
    async fn job_output(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobOutput>, StoreError>;

    /// Claims the oldest pending job: marks it `RUNNING`, bumps its attempt count and lease
    /// token, and sets its lease to expire after `lease`.
    async fn claim_next_job(&self, lease: Duration) -> Result<Option<ClaimedJob>, StoreError>;

    /// Records the start of an attempt. Returns false if the lease is no longer held.
    async fn start_execution(
        &self,
        lease: &Lease,
        execution_id: &str,
        attempt: u32,
        plugin: &PluginRef,
        started_at: Millis,
    ) -> Result<bool, StoreError>;

    /// Updates a running execution's progress. Returns false if the lease is no longer held.
    async fn record_progress(
        &self,
        lease: &Lease,
        execution_id: &str,
        progress: &Progress,
    ) -> Result<bool, StoreError>;

    /// Ends an execution and moves its job to `end.job_status`, storing the output if any.
    /// Returns false, and changes nothing, if the lease is no longer held.
    async fn finish_execution(&self, lease: &Lease, end: &ExecutionEnd)
    -> Result<bool, StoreError>;

    /// At the start of a single-process server: executions left `RUNNING` by a crash become
    /// `ABANDONED`, and their jobs go back to `PENDING` (or `FAILED` after `max_attempts`).
    /// Returns how many jobs were recovered.
    async fn recover_interrupted(&self, max_attempts: u32) -> Result<u64, StoreError>;
}
