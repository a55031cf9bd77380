//! The types every capability shares: time, errors, statuses, leases, and how the store
//! tells the layers above what changed. The bottom of the crate: it imports no module of it.

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
    /// SQLite refused or failed a statement run on its handle (a batch's).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
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
    /// The database lacks migrations this build needs, and opening it was not to apply
    /// them (`serve --no-migrate`).
    #[error("{message}")]
    SchemaBehind {
        missing: Vec<i64>,
        /// What to do about it, made where the migrations are known (`schema::behind`).
        message: String,
    },
    /// The database could not be reached when the store opened: where (without the
    /// password), and why.
    #[error("cannot reach the database at {address}: {cause}")]
    Unreachable { address: String, cause: String },
    /// A thread the store writes on could not be started.
    #[error("cannot start the store's writer thread: {0}")]
    Thread(#[source] std::io::Error),
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
    /// The owner's stored outputs already reach this many bytes.
    OutputBytes(u64),
    /// The shared project the jobs go to would have more jobs pending than its own cap.
    ProjectPendingJobs(u64),
    /// The owner no longer exists (deleted since its token was checked).
    NoSuchOwner,
}

/// What one user may hold at once, unless the user has quotas of its own
/// ([`UserQuotas`](crate::users::UserQuotas)): the server's defaults.
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

/// The right to write a running execution, held by the worker that claimed its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub job_id: String,
    /// Whose job it is: the change notices of the lease's writes name it.
    pub owner_id: String,
    /// The project the job is in (its owner's id for the personal one): the change notices
    /// name it too.
    pub project_id: String,
    /// Bumped on every claim; writes that carry an older token are ignored.
    pub token: i64,
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
    /// The plugins the store lists changed (on PostgreSQL, on any replica).
    fn plugins_changed(&self) {}
    /// A client asked the running job to finish now: this process's run of it, if any,
    /// should return what it has.
    fn finish_requested(&self, _job_id: &str) {}
}

impl std::fmt::Debug for dyn JobEvents {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("JobEvents")
    }
}

/// A job whose state, as clients see it, changed: its owner's feed and its project's hear
/// of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobChange {
    pub owner_id: String,
    pub job_id: String,
    /// The project the job is in: its owner's id for the owner's personal project (and for
    /// a job from before projects).
    pub project_id: String,
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

    fn plugins_changed(&self) {
        self.0.iter().for_each(|events| events.plugins_changed());
    }

    fn finish_requested(&self, job_id: &str) {
        self.0
            .iter()
            .for_each(|events| events.finish_requested(job_id));
    }
}
