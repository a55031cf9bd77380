//! The records more than one capability reads or carries (an experiment stored with its
//! runs, a job's executions, a race's entrants), kept below all of them so that the
//! capabilities share them through this file, not through each other.

use super::{ErrorCode, ExecutionStatus, JobStatus, Millis};
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
