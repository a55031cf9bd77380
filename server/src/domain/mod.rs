//! What the API's requests decide, below HTTP: plain Rust that handlers, commands and tests
//! call with the shared [`Services`](crate::state::Services). Nothing here imports `api`;
//! the handlers translate a request into one of these calls and its answer into HTTP.
//!
//! - `launch.rs`: what a launch is: its use case resolved, its body checked, the job to store.
//! - `evaluate.rs`: an evaluate-only run, a given solution scored without a job.
//! - `options.rs`, `labels.rs`, `warm_start.rs`: a launch's options, labels and warm start.
//! - `races.rs`: `options.race`, its entrants launched, stopped and settled.
//! - `experiments.rs`, `experiment_summary.rs`: experiments, and what their runs add up to.
//! - `publish_gate.rs`: a published version promoted only if its experiment passes.
//! - `rerun.rs`: the launch an earlier job stands for.
//! - `jobs.rs`: what a caller is told of a job it may not see or change.
//! - `projects.rs`: roles in projects, where a launch goes, where a bound key reaches.
//! - `audit.rs`: how a change adds to the audit log.
//! - `error.rs`: [`ApiError`], what a request is refused or fails with.

pub mod audit;
pub mod error;
pub mod evaluate;
pub mod experiment_summary;
pub mod experiments;
pub mod jobs;
pub mod labels;
pub mod launch;
pub mod options;
pub mod projects;
pub mod publish_gate;
pub mod races;
pub mod rerun;
pub mod warm_start;

pub use self::error::ApiError;
