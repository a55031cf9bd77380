//! One execution: a claimed job's input made (from its dataset if it has one), the plugin
//! run in the sandbox, its output checked, and whatever happened turned into the
//! execution's end: its status, error and, for an abandoned one, whether the job runs again.
//! What the job's status becomes is the store's one mapping, [`crate::store::JobEnd::after`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};

use super::context::WorkerContext;
use super::progress::ProgressWriter;
use super::start::DeferredStart;
use crate::options::JobOptions;
use crate::plugins::{DatasetError, Plugin};
use crate::runtime::{CallError, Limits, LogTail, RunOptions, RunReport};
use crate::store::{
    ClaimedJob, ErrorCode, ExecutionEnd, ExecutionError, ExecutionStatus, JobDataset, Retry,
    StoreError, now_millis,
};
use crate::violation::Violation;

pub(super) fn failed(execution_id: &str, code: ErrorCode, message: String) -> ExecutionEnd {
    ExecutionEnd {
        execution_id: execution_id.to_owned(),
        status: ExecutionStatus::Failed,
        retry: Retry::No,
        error: Some(ExecutionError { code, message }),
        output: None,
        objective: None,
        time_to_best_s: None,
        log_tail: String::new(),
        log_truncated: false,
        ended_at: now_millis(),
    }
}

/// Runs the plugin and turns whatever happened into the execution's end.
pub(super) fn execute(
    context: &WorkerContext,
    claim: &ClaimedJob,
    execution_id: &str,
    plugin: &Plugin,
    interrupt: Arc<AtomicBool>,
    start: Arc<DeferredStart>,
) -> ExecutionEnd {
    let options: JobOptions = match serde_json::from_str(&claim.options) {
        Ok(options) => options,
        Err(error) => {
            return failed(
                execution_id,
                ErrorCode::InvalidInput,
                format!("the job's stored options are unreadable: {error}"),
            );
        }
    };
    let limits = context.limits.of(&plugin.info.name).for_run(&options);
    let observer = Arc::new(ProgressWriter::new(
        context.store.clone(),
        context.runtime.clone(),
        claim.lease.clone(),
        execution_id.to_owned(),
        context.local.held.finish_flag(&claim.lease),
        start,
    ));
    observer.start_when_due();
    let run_options = RunOptions {
        time_limit: options.time_limit(),
        seed: options.seed,
        max_iterations: options.max_iterations,
    };
    let run = |input: &str| match &context.sandbox_processes {
        Some(processes) => processes.run(
            &plugin.component,
            context.limits.sandbox_place_of(&plugin.info.name),
            input,
            &run_options,
            &limits,
            interrupt.clone(),
            observer.clone(),
        ),
        None => plugin.component.run(
            input,
            &run_options,
            &limits,
            interrupt.clone(),
            observer.clone(),
        ),
    };
    let report = match dataset_input(context, claim, plugin, &limits) {
        Ok(None) => run(&claim.input),
        Ok(Some(input)) => run(&input),
        Err(DatasetFailure::Call(error)) => RunReport {
            result: Err(error),
            log: LogTail::default(),
            peak_memory_bytes: 0,
        },
        // Not the job's fault: it goes back to the queue, like a job whose worker died. Bytes
        // the store found corrupt will not mend, so like that job it fails once it has had
        // its attempts instead of going round for ever; a store it could not reach may
        // recover, and the job keeps its place.
        Err(DatasetFailure::Unreadable { message, permanent }) => {
            let (retry, message) = if permanent && claim.attempt >= context.limits.max_attempts {
                let message = format!("{message}; that was the job's last attempt");
                (Retry::No, message)
            } else {
                let message = format!("{message}; the job went back to the queue");
                (Retry::Yes, message)
            };
            return ExecutionEnd {
                status: ExecutionStatus::Abandoned,
                retry,
                ..failed(execution_id, ErrorCode::WorkerLost, message)
            };
        }
    };
    // Before the end is queued: the incumbents the run reported last are stored before it.
    observer.flush();
    let (status, error, output, scored) = match report.result {
        Ok(output) => match plugin.check_output(&output) {
            Ok(scored) => (ExecutionStatus::Completed, None, Some(output), scored),
            Err(message) => (
                ExecutionStatus::Failed,
                Some(ExecutionError {
                    code: ErrorCode::InvalidOutput,
                    message,
                }),
                None,
                None,
            ),
        },
        Err(error) => {
            let releasing = context.releasing.load(Ordering::SeqCst);
            let (status, error) = call_failed(error, options.time_limit(), releasing);
            (status, error, None, None)
        }
    };
    ExecutionEnd {
        execution_id: execution_id.to_owned(),
        status,
        // Only an abandoned execution (the server stopped) looks at it: the job runs again.
        retry: Retry::Yes,
        error,
        output,
        objective: scored.map(|scored| scored.objective),
        time_to_best_s: scored.and_then(|scored| scored.time_to_best_s),
        log_tail: report.log.text,
        log_truncated: report.log.truncated,
        ended_at: now_millis(),
    }
}

/// How a call that returned no output ends its execution: every case with its status, error
/// code and message together. `releasing` is set when the server stops and interrupted the
/// call to give the job back.
fn call_failed(
    error: CallError,
    time_limit: Duration,
    releasing: bool,
) -> (ExecutionStatus, Option<ExecutionError>) {
    let failed = |code, message| {
        (
            ExecutionStatus::Failed,
            Some(ExecutionError { code, message }),
        )
    };
    let described = error.to_string();
    match error {
        // Interrupted because the server stops: the job goes back to the queue.
        CallError::Cancelled if releasing => (
            ExecutionStatus::Abandoned,
            Some(ExecutionError {
                code: ErrorCode::WorkerLost,
                message: "the server shut down before this execution ended; \
                          the job went back to the queue"
                    .into(),
            }),
        ),
        CallError::Cancelled => (ExecutionStatus::Cancelled, None),
        CallError::Timeout(stopped_after) => (
            ExecutionStatus::TimedOut,
            Some(ExecutionError {
                code: ErrorCode::Timeout,
                message: format!(
                    "the run exceeded its time limit of {time_limit:?} and was stopped after \
                     {stopped_after:?} (the limit plus a grace period)"
                ),
            }),
        ),
        CallError::MemoryLimit(_) => failed(ErrorCode::MemoryLimit, described),
        CallError::Trap { details, .. } => {
            // The client reads one line; the guest's backtrace is for the operator.
            tracing::warn!(%details, "the plugin trapped");
            failed(ErrorCode::Trap, described)
        }
        CallError::InvalidInput(violations) => failed(
            ErrorCode::InvalidInput,
            violations
                .iter()
                .map(|violation| format!("{}: {}", violation.pointer, violation.message))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        CallError::PluginFailed(_) => failed(ErrorCode::PluginError, described),
        CallError::OutputTooLarge { .. } => failed(ErrorCode::InvalidOutput, described),
    }
}

/// Why a dataset job's input could not be made.
enum DatasetFailure {
    /// The input is wrong for the plugin: the execution fails with this.
    Call(CallError),
    /// The bytes could not be read from the store: `permanent` when the store found them
    /// corrupt, not when it could not be reached.
    Unreadable { message: String, permanent: bool },
}

/// How a message names a job's dataset: its data file, or the inline input kept for it.
fn dataset_named(dataset: &JobDataset) -> String {
    match &dataset.data_file_id {
        Some(id) => format!("data file {id}"),
        None => "the job's kept input".to_owned(),
    }
}

/// A dataset job's input, made as at submission; `None` for an inline job.
fn dataset_input(
    context: &WorkerContext,
    claim: &ClaimedJob,
    plugin: &Plugin,
    limits: &Limits,
) -> Result<Option<String>, DatasetFailure> {
    let Some(dataset) = &claim.dataset else {
        return Ok(None);
    };
    let bytes = match context
        .runtime
        .block_on(context.store.blob(&dataset.blob_id))
    {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(DatasetFailure::Call(CallError::InvalidInput(vec![
                Violation::new(
                    "",
                    format!("the bytes of {} are gone", dataset_named(dataset)),
                ),
            ])));
        }
        Err(error) => {
            return Err(DatasetFailure::Unreadable {
                message: format!("cannot read {}: {error}", dataset_named(dataset)),
                permanent: matches!(error, StoreError::Corrupt(_)),
            });
        }
    };
    // What the job stores beside its dataset reference: the parameters given with it.
    let parameters = match serde_json::from_str::<Value>(&claim.input) {
        Ok(Value::Object(parameters)) => parameters,
        _ => Map::new(),
    };
    match plugin.dataset_input(&dataset.media_type, bytes, &parameters, limits) {
        Ok(input) => Ok(Some(input)),
        Err(DatasetError::Decode(error)) => Err(DatasetFailure::Call(error)),
        Err(other) => Err(DatasetFailure::Call(CallError::InvalidInput(vec![
            Violation::new("", other.to_string()),
        ]))),
    }
}
