//! The records more than one capability reads or carries (a job to insert and what came of
//! it, a claimed job, an execution's start, updates and end, an experiment stored with its
//! runs, a race's entrants), kept below the capabilities and the group commit's writes so
//! that they share them through this file, not through each other.

use super::incumbents::NewIncumbent;
use super::outcome::Retry;
use super::plugins::PluginBinding;
use super::types::{ErrorCode, ExecutionStatus, JobStatus, Lease, Millis, Quotas, Refusal};
use crate::objective::Objective;

/// An experiment as stored: its definition is the API's to read (JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentRecord {
    pub id: String,
    pub owner_id: String,
    /// The use case's name.
    pub problem: String,
    /// The request as resolved, JSON.
    pub definition: String,
    pub created_at: Millis,
    /// When its owner cancelled what had not run.
    pub cancelled_at: Option<Millis>,
    /// The shared project it belongs to; `None` for its owner's personal one.
    pub project_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Its output's objective, once it completed, where its use case declares one.
    pub objective: Option<Objective>,
    /// How many incumbents it reported (the number of the newest).
    pub incumbents: u32,
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

/// One entrant of a race.
#[derive(Debug, Clone, PartialEq)]
pub struct RaceEntrant {
    pub job_id: String,
    /// As clients see it.
    pub status: JobStatus,
    pub version: Option<String>,
    pub seed: Option<u64>,
    pub objective: Option<Objective>,
    pub time_to_best_s: Option<f64>,
    /// Its latest execution, if it started.
    pub execution_id: Option<String>,
    /// It completed with what it had when a finish asked it to stop.
    pub stopped_early: bool,
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
    /// The size of the shared inline input its dataset holds (one with no data file), which
    /// its owner keeps once however many jobs share it; 0 otherwise.
    pub shared_input_bytes: u64,
    /// Its place among its owner's pending jobs (`options.priority`): higher runs first.
    pub priority: u8,
    /// Its labels, a JSON object of strings, if it has any.
    pub labels: Option<String>,
    /// Where its end is posted (`options.callback_url`), if anywhere.
    pub callback_url: Option<String>,
    /// The quotas it is checked against, where its owner has none of its own.
    pub quotas: Quotas,
    /// The component it runs, bound at acceptance.
    pub binding: PluginBinding,
    /// The job it runs again, for a rerun.
    pub rerun_of: Option<String>,
    /// The job whose output it started from (`options.warm_start`).
    pub warm_start: Option<String>,
    /// The experiment it is a run of.
    pub experiment_id: Option<String>,
    /// For a race: its entrants as launched (JSON); a race is never claimed.
    pub race: Option<String>,
    /// For a race's entrant: the race.
    pub race_of: Option<String>,
    /// The project it belongs to; `None` for its owner's personal project.
    pub project_id: Option<String>,
}

/// A client's `Idempotency-Key` and a digest of the request it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idempotency {
    pub key: String,
    pub request_hash: String,
}

/// A job's own reference to the dataset it was launched with: the blob outlives the data file
/// as long as a job refers to it. A job whose inline input is shared with other jobs (an
/// experiment's runs, a race's entrants) refers the same way to the one blob that holds it,
/// with no data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDataset {
    /// The data file it was launched with; `None` for a shared inline input.
    pub data_file_id: Option<String>,
    pub blob_id: String,
    pub media_type: String,
}

/// What [`JobQueue::insert_job`](crate::jobs::JobQueue::insert_job) did.
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
    /// The component it was bound to at acceptance.
    pub binding: Option<PluginBinding>,
    /// The race it is an entrant of, if it is one.
    pub race_of: Option<String>,
}

/// How an execution ended, written in one transaction with the job's new status, which
/// [`JobEnd::after`](super::JobEnd::after) makes of `status` and `retry`.
#[derive(Debug, Clone)]
pub struct ExecutionEnd {
    pub execution_id: String,
    pub status: ExecutionStatus,
    /// For an abandoned execution, whether its job runs again; ignored for the others.
    pub retry: Retry,
    pub error: Option<ExecutionError>,
    /// The output JSON, for a completed execution.
    pub output: Option<String>,
    /// The output's objective, where its use case declares one.
    pub objective: Option<Objective>,
    /// Seconds the run took to find its output, where the output says.
    pub time_to_best_s: Option<f64>,
    pub log_tail: String,
    pub log_truncated: bool,
    pub ended_at: Millis,
}

/// How an attempt began: written when it starts, or with its end if it ended before its
/// start was written (a short job: see [`Executions::start_and_finish_execution`](crate::executions::Executions::start_and_finish_execution)).
#[derive(Debug, Clone)]
pub struct ExecutionStart {
    pub execution_id: String,
    pub attempt: u32,
    pub plugin: PluginRef,
    pub started_at: Millis,
}

/// What a running execution shows before it ends: its latest progress, its log so far, the
/// incumbents it reported since the last update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveUpdate {
    pub progress: Option<Progress>,
    /// The log's newest bytes, and whether older ones were dropped.
    pub log: Option<(String, bool)>,
    /// In the order they were reported.
    pub incumbents: Vec<NewIncumbent>,
}

impl From<Progress> for LiveUpdate {
    fn from(progress: Progress) -> LiveUpdate {
        LiveUpdate {
            progress: Some(progress),
            ..LiveUpdate::default()
        }
    }
}
