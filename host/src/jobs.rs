//! Jobs: the options a client may set, and the workers that claim pending jobs from the store
//! and run them in the sandbox.
//!
//! Workers are dedicated OS threads, not tokio tasks: a guest is CPU-bound and may not yield
//! for as long as its deadline allows, which would starve the async runtime serving HTTP.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::FieldError;
use crate::metrics::Metrics;
use crate::plugins::{DatasetError, Plugin, PluginRegistry};
use crate::runtime::{
    BoundedLog, CallError, ExecutionObserver, Limits, LogTail, RunOptions, RunReport, Violation,
};
use crate::store::{
    ClaimedJob, ErrorCode, ExecutionEnd, ExecutionError, ExecutionStatus, JobEvents, JobStatus,
    JobStore, Lease, LiveUpdate, PluginRef, Progress, QueuedWrite, StoreError, now_millis,
};

/// How often an idle worker looks for work even if nobody woke it: a backstop only, since new
/// jobs wake workers (and, on PostgreSQL, notify other replicas' workers).
const IDLE_POLL: Duration = Duration::from_secs(2);

/// Short jobs are claimed several at a time, so that one commit serves many of them; a job
/// that ran at least this long sets the claim back to one job, so that a replica never holds
/// long jobs back in its own queue while other replicas idle.
const SHORT_JOB: Duration = Duration::from_millis(20);

/// The most jobs one claim takes.
const MAX_CLAIM: u32 = 32;

/// At most one progress write per execution in this interval.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// The limits jobs run under, from the server's configuration: the defaults, and the
/// overrides of each use case (`--plugin-limits`).
#[derive(Debug, Clone)]
pub struct JobLimits {
    /// The time limit of a job that does not set one.
    pub default_time_limit: Duration,
    /// The most a job may ask for.
    pub max_time_limit: Duration,
    /// Memory, log and output caps of one execution.
    pub sandbox: Limits,
    /// How many attempts a job gets when workers die under it.
    pub max_attempts: u32,
    /// How long a claim lasts without a heartbeat; a third of it passes between heartbeats.
    pub lease: Duration,
    /// Overrides by use-case name.
    pub per_use_case: Arc<HashMap<String, LimitOverrides>>,
}

/// What `--plugin-limits` may set for one use case; what it leaves out is the server's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    pub default_time_limit: Option<Duration>,
    pub max_time_limit: Option<Duration>,
    pub memory_bytes: Option<usize>,
    pub output_bytes: Option<usize>,
}

/// The limits of one use case's jobs. A job's options may lower them, never raise them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UseCaseLimits {
    pub default_time_limit: Duration,
    pub max_time_limit: Duration,
    pub sandbox: Limits,
}

impl JobLimits {
    /// The most memory any one call may have: the server's limit, or a use case's above it.
    /// The instance pool's memory slots are sized for it, or a use case given more than the
    /// server's limit would stop at the server's.
    pub fn largest_memory_bytes(&self) -> usize {
        self.per_use_case
            .values()
            .filter_map(|overrides| overrides.memory_bytes)
            .fold(self.sandbox.memory_bytes, usize::max)
    }

    /// The limits of the named use case.
    pub fn of(&self, use_case: &str) -> UseCaseLimits {
        let overrides = self.per_use_case.get(use_case).cloned().unwrap_or_default();
        UseCaseLimits {
            default_time_limit: overrides
                .default_time_limit
                .unwrap_or(self.default_time_limit),
            max_time_limit: overrides.max_time_limit.unwrap_or(self.max_time_limit),
            sandbox: Limits {
                memory_bytes: overrides.memory_bytes.unwrap_or(self.sandbox.memory_bytes),
                output_bytes: overrides.output_bytes.unwrap_or(self.sandbox.output_bytes),
                ..self.sandbox
            },
        }
    }
}

impl UseCaseLimits {
    /// The sandbox's limits for a run with these options: its wall-clock deadline is the job's
    /// time limit plus a grace period, so that an anytime solver can return its best answer
    /// instead of being killed at the very moment it should answer.
    pub fn for_run(&self, options: &JobOptions) -> Limits {
        let time_limit = options.time_limit();
        let grace = (time_limit / 10).max(Duration::from_secs(1));
        let memory_bytes = options
            .memory_limit_mib
            .map_or(self.sandbox.memory_bytes, |mib| {
                (mib as usize)
                    .saturating_mul(1 << 20)
                    .min(self.sandbox.memory_bytes)
            });
        Limits {
            wall_time: time_limit + grace,
            memory_bytes,
            ..self.sandbox
        }
    }
}

/// Reads `--plugin-limits`: a TOML table per use case.
pub fn read_limit_overrides(
    path: &std::path::Path,
) -> Result<HashMap<String, LimitOverrides>, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Entry {
        default_time_limit: Option<String>,
        max_time_limit: Option<String>,
        memory_limit_mib: Option<u64>,
        max_output_bytes: Option<toml::Value>,
    }

    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let entries: HashMap<String, Entry> =
        toml::from_str(&text).map_err(|error| error.to_string())?;
    let mut overrides = HashMap::new();
    for (use_case, entry) in entries {
        fn named<T>(use_case: &str, what: &str, result: Result<T, String>) -> Result<T, String> {
            result.map_err(|error| format!("[{use_case}] {what}: {error}"))
        }
        let within = |what: &str, result: Result<Duration, String>| named(&use_case, what, result);
        let duration = |what: &str, text: &Option<String>| {
            text.as_deref()
                .map(|text| within(what, crate::config::parse_duration(text)))
                .transpose()
        };
        let output_bytes = match &entry.max_output_bytes {
            None => None,
            Some(toml::Value::Integer(bytes)) => Some(named(
                &use_case,
                "max_output_bytes",
                usize::try_from(*bytes).map_err(|_| "must not be negative".to_owned()),
            )?),
            Some(toml::Value::String(text)) => Some(named(
                &use_case,
                "max_output_bytes",
                crate::config::parse_bytes(text).map(|bytes| bytes as usize),
            )?),
            Some(_) => {
                return Err(format!(
                    "[{use_case}] max_output_bytes: a number of bytes or a size such as \"1MiB\""
                ));
            }
        };
        overrides.insert(
            use_case.clone(),
            LimitOverrides {
                default_time_limit: duration("default_time_limit", &entry.default_time_limit)?,
                max_time_limit: duration("max_time_limit", &entry.max_time_limit)?,
                memory_bytes: entry
                    .memory_limit_mib
                    .map(|mib| (mib as usize).saturating_mul(1 << 20)),
                output_bytes,
            },
        );
    }
    Ok(overrides)
}

/// The options of a job as stored: every default already applied, so a retry runs the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOptions {
    pub time_limit_ms: u64,
    pub seed: u64,
    pub max_iterations: Option<u64>,
    /// A memory cap below the use case's, if the job asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mib: Option<u64>,
}

impl JobOptions {
    /// Reads the body's `options` object (absent means all defaults). Unknown keys are errors:
    /// a misspelt option silently ignored would be worse.
    pub fn from_request(
        options: Option<&Value>,
        limits: &UseCaseLimits,
    ) -> Result<JobOptions, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut resolved = JobOptions {
            time_limit_ms: limits
                .default_time_limit
                .min(limits.max_time_limit)
                .as_millis() as u64,
            seed: rand::random::<u32>() as u64,
            max_iterations: None,
            memory_limit_mib: None,
        };
        let error = |field: &str, message: String| FieldError {
            pointer: format!("/options{field}"),
            message,
        };
        let Some(options) = options else {
            return Ok(resolved);
        };
        let Some(options) = options.as_object() else {
            return Err(vec![error("", "must be an object".into())]);
        };
        for (key, value) in options {
            match key.as_str() {
                "time_limit_s" => {
                    let max = limits.max_time_limit.as_secs_f64();
                    match value.as_f64() {
                        Some(seconds) if seconds > 0.0 && seconds <= max => {
                            resolved.time_limit_ms = ((seconds * 1000.0).ceil() as u64).max(1);
                        }
                        _ => errors.push(error(
                            "/time_limit_s",
                            format!("must be a number of seconds greater than 0 and at most {max}"),
                        )),
                    }
                }
                "seed" => match value.as_u64() {
                    Some(seed) => resolved.seed = seed,
                    None => errors.push(error("/seed", "must be a non-negative integer".into())),
                },
                "max_iterations" => match value.as_u64() {
                    Some(iterations) if iterations > 0 => {
                        resolved.max_iterations = Some(iterations)
                    }
                    _ => errors.push(error(
                        "/max_iterations",
                        "must be a positive integer".into(),
                    )),
                },
                "memory_limit_mib" => {
                    let max = (limits.sandbox.memory_bytes >> 20) as u64;
                    match value.as_u64() {
                        Some(mib) if mib > 0 && mib <= max => resolved.memory_limit_mib = Some(mib),
                        _ => errors.push(error(
                            "/memory_limit_mib",
                            format!("must be a whole number of MiB from 1 to {max}"),
                        )),
                    }
                }
                other => errors.push(error(
                    &format!("/{}", other.replace('~', "~0").replace('/', "~1")),
                    "unknown option; known options are time_limit_s, seed, max_iterations and \
                     memory_limit_mib"
                        .into(),
                )),
            }
        }
        if errors.is_empty() {
            Ok(resolved)
        } else {
            Err(errors)
        }
    }

    pub fn time_limit(&self) -> Duration {
        Duration::from_millis(self.time_limit_ms)
    }
}

/// What the API, the store's notifications and the workers of one process share: wake-ups for
/// idle workers (never lost between a worker's empty claim and its wait), and the leases the
/// workers hold, so that a cancellation reaches the run it concerns.
#[derive(Debug, Default)]
pub struct WorkSignal {
    generation: Mutex<u64>,
    condvar: Condvar,
    held: HeldLeases,
    /// Jobs claimed but not started yet, oldest first, with their interrupt flags; any
    /// worker of this process takes the next one.
    claimed: Mutex<VecDeque<(ClaimedJob, Arc<AtomicBool>)>>,
    /// Claimed jobs cancelled before they started, for [`release_cancelled`] to end.
    cancelled_unstarted: Mutex<Vec<Lease>>,
    cancelled_wake: tokio::sync::Notify,
}

impl WorkSignal {
    /// Stops this process's run of the job, if it holds one. A job claimed but waiting for a
    /// worker (behind a long run, say) leaves the queue and ends `CANCELLED` at once, instead
    /// of when a worker reaches it; a running one is interrupted. True if either happened.
    pub fn cancel(&self, job_id: &str) -> bool {
        let unstarted = {
            let mut claimed = self.claimed.lock().unwrap_or_else(PoisonError::into_inner);
            claimed
                .iter()
                .position(|(claim, _)| claim.lease.job_id == job_id)
                .and_then(|index| claimed.remove(index))
        };
        let was_queued = unstarted.is_some();
        if let Some((claim, _)) = unstarted {
            tracing::info!(job = %job_id, "cancellation asked for; the job had not started");
            self.cancelled_unstarted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(claim.lease);
            self.cancelled_wake.notify_one();
        }
        // Every other lease this process holds on the job too: after a lost heartbeat and a
        // reap, it may hold a stale one and run or queue a newer one.
        let interrupted = self.held.interrupt_job(job_id);
        if interrupted && !was_queued {
            tracing::info!(job = %job_id, "cancellation asked for; interrupting the run");
        }
        was_queued || interrupted
    }

    /// The claimed jobs cancelled before they started, for whoever ends them now.
    fn take_cancelled_unstarted(&self) -> Vec<Lease> {
        std::mem::take(
            &mut *self
                .cancelled_unstarted
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    pub fn notify(&self) {
        *self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += 1;
        self.condvar.notify_one();
    }

    pub(crate) fn generation(&self) -> u64 {
        *self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until a notification newer than `seen`, or the timeout.
    fn wait(&self, seen: u64, timeout: Duration) {
        let guard = self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .condvar
            .wait_timeout_while(guard, timeout, |generation| *generation == seen);
    }

    pub fn notify_all(&self) {
        *self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += 1;
        self.condvar.notify_all();
    }
}

impl JobEvents for WorkSignal {
    fn jobs_pending(&self) {
        self.notify_all();
    }

    fn cancel_requested(&self, job_id: &str) {
        self.cancel(job_id);
    }
}

/// What every worker shares.
struct WorkerContext {
    store: Arc<dyn JobStore>,
    registry: Arc<PluginRegistry>,
    limits: JobLimits,
    signal: Arc<WorkSignal>,
    metrics: Arc<Metrics>,
    /// Set when the server stops: claim nothing more.
    shutdown: AtomicBool,
    /// Set when the shutdown grace ran out: interrupt running jobs and give them back.
    releasing: AtomicBool,
    /// How many jobs the next claim takes: doubles while jobs are short, back to one after a
    /// long one.
    claim_size: AtomicU32,
    runtime: tokio::runtime::Handle,
}

impl WorkerContext {
    fn next_claimed(&self) -> Option<(ClaimedJob, Arc<AtomicBool>)> {
        self.signal
            .claimed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }

    /// Learns from a run's length how many jobs to claim next.
    fn adapt_claim_size(&self, run_time: Duration) {
        let size = if run_time < SHORT_JOB {
            (self.claim_size.load(Ordering::Relaxed) * 2).min(MAX_CLAIM)
        } else {
            1
        };
        self.claim_size.store(size, Ordering::Relaxed);
    }
}

/// The leases this process's workers hold, each with its execution's interrupt flag: the
/// heartbeat renews them all in one write, and stops the executions whose lease was lost.
/// Keyed by job and token: a job reaped from this process and claimed by it again is two
/// leases, and ending the old one must not drop the new one.
#[derive(Debug, Default)]
struct HeldLeases(Mutex<HashMap<LeaseKey, (Lease, Arc<AtomicBool>)>>);

/// A job id and a lease token.
type LeaseKey = (String, i64);

impl HeldLeases {
    fn hold(&self, lease: &Lease) -> Arc<AtomicBool> {
        let interrupt = Arc::new(AtomicBool::new(false));
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                (lease.job_id.clone(), lease.token),
                (lease.clone(), interrupt.clone()),
            );
        interrupt
    }

    fn release(&self, lease: &Lease) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(lease.job_id.clone(), lease.token));
    }

    fn leases(&self) -> Vec<Lease> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|(lease, _)| lease.clone())
            .collect()
    }

    /// Interrupts every held lease of the job; true if there was one.
    fn interrupt_job(&self, job_id: &str) -> bool {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = false;
        for (lease, interrupt) in held.values() {
            if lease.job_id == job_id {
                interrupt.store(true, Ordering::SeqCst);
                found = true;
            }
        }
        found
    }

    /// Interrupts the executions of these leases that are still held (all of them, without a
    /// list), and returns the job ids interrupted.
    fn interrupt(&self, leases: Option<&[Lease]>) -> Vec<String> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut interrupted = Vec::new();
        for (lease, interrupt) in held.values() {
            if leases.is_none_or(|leases| leases.contains(lease)) {
                interrupt.store(true, Ordering::SeqCst);
                interrupted.push(lease.job_id.clone());
            }
        }
        interrupted
    }
}

/// The worker threads.
pub struct WorkerPool {
    context: Arc<WorkerContext>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("WorkerPool")
            .field("workers", &self.threads.len())
            .finish()
    }
}

impl WorkerPool {
    /// Starts `count` workers. `runtime` is the tokio runtime the store's futures run on.
    pub fn start(
        count: usize,
        store: Arc<dyn JobStore>,
        registry: Arc<PluginRegistry>,
        limits: JobLimits,
        signal: Arc<WorkSignal>,
        metrics: Arc<Metrics>,
        runtime: tokio::runtime::Handle,
    ) -> WorkerPool {
        let context = Arc::new(WorkerContext {
            store,
            registry,
            limits,
            signal,
            metrics,
            shutdown: AtomicBool::new(false),
            releasing: AtomicBool::new(false),
            claim_size: AtomicU32::new(1),
            runtime,
        });
        context.runtime.spawn(heartbeat(Arc::downgrade(&context)));
        context
            .runtime
            .spawn(release_cancelled(Arc::downgrade(&context)));
        let threads = (0..count.max(1))
            .map(|index| {
                let context = context.clone();
                std::thread::Builder::new()
                    .name(format!("worker-{index}"))
                    .spawn(move || work(&context))
                    .expect("a worker thread starts")
            })
            .collect();
        WorkerPool { context, threads }
    }

    /// Stops claiming new jobs and lets the running ones end within `grace`. Jobs still
    /// running then are interrupted and given back to the queue (their execution `ABANDONED`),
    /// so that another replica takes them at once instead of waiting for the lease to expire.
    pub fn shutdown(self, grace: Duration) {
        self.context.shutdown.store(true, Ordering::SeqCst);
        self.context.signal.notify_all();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && self.threads.iter().any(|thread| !thread.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let running = self.context.signal.held.leases().len();
        if running > 0 {
            tracing::warn!(
                jobs = running,
                "the shutdown grace ran out; giving the running jobs back to the queue"
            );
            self.context.releasing.store(true, Ordering::SeqCst);
            let _ = self.context.signal.held.interrupt(None);
        }
        for thread in self.threads {
            let _ = thread.join();
        }
        // Claimed jobs nobody started go straight back, their attempt uncounted (those
        // cancelled meanwhile end `CANCELLED`).
        let unstarted: Vec<_> = self
            .context
            .signal
            .claimed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .map(|(claim, _)| claim.lease)
            .chain(self.context.signal.take_cancelled_unstarted())
            .collect();
        let released: Vec<_> = unstarted
            .iter()
            .map(|lease| self.context.store.release_unstarted(lease))
            .collect();
        for (lease, released) in unstarted.iter().zip(released) {
            if let Err(error) = self.context.runtime.block_on(released.lease_held()) {
                tracing::warn!(job = %lease.job_id, %error, "cannot give back an unstarted job");
            }
        }
    }
}

/// Ends the claimed jobs cancelled before they started: each goes back with its attempt
/// uncounted, which for a job whose cancellation was asked for means `CANCELLED`, with no
/// execution. Runs until the worker pool is gone.
async fn release_cancelled(context: std::sync::Weak<WorkerContext>) {
    const RECHECK: Duration = Duration::from_secs(1);
    loop {
        let Some(signal) = context.upgrade().map(|context| context.signal.clone()) else {
            return;
        };
        let _ = tokio::time::timeout(RECHECK, signal.cancelled_wake.notified()).await;
        let Some(context) = context.upgrade() else {
            return;
        };
        for lease in context.signal.take_cancelled_unstarted() {
            let released = context.store.release_unstarted(&lease);
            if let Err(error) = released.lease_held().await {
                tracing::warn!(job = %lease.job_id, %error, "cannot end a cancelled job");
            }
            context.signal.held.release(&lease);
        }
    }
}

/// Renews the held leases every third of a lease, and interrupts executions whose lease was
/// lost: their results would be discarded, so computing them is wasted.
async fn heartbeat(context: std::sync::Weak<WorkerContext>) {
    let Some(interval) = context.upgrade().map(|context| context.limits.lease / 3) else {
        return;
    };
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(context) = context.upgrade() else {
            return;
        };
        let leases = context.signal.held.leases();
        if leases.is_empty() {
            continue;
        }
        match context.store.heartbeat(&leases, context.limits.lease).await {
            Ok(lost) if lost.is_empty() => {}
            Ok(lost) => {
                // Some of these may simply have ended since they were listed (their end is
                // written, not yet confirmed); a result really lost is logged when its end
                // is refused.
                for job in context.signal.held.interrupt(Some(&lost)) {
                    tracing::debug!(%job, "lease not renewed; interrupting the execution");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot renew the leases"),
        }
    }
}

fn work(context: &WorkerContext) {
    let mut endings = Vec::new();
    while !context.shutdown.load(Ordering::SeqCst) {
        if let Some((claim, interrupt)) = context.next_claimed() {
            endings.extend(run_guarded(context, claim, interrupt));
            if endings.len() >= MAX_CLAIM as usize {
                confirm_all(context, &mut endings);
            }
            continue;
        }
        let seen = context.signal.generation();
        // The claim rides in the same group commit as the ends queued just before it, so a
        // worker waits for one commit per claim, not one per write.
        let claimed = context.runtime.block_on(context.store.claim_jobs(
            context.limits.lease,
            context.claim_size.load(Ordering::Relaxed),
        ));
        // Held (renewed by the heartbeat) before anything else can take time.
        let claimed = claimed.map(|claimed| {
            let count = claimed.len();
            let mut queue = context
                .signal
                .claimed
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for claim in claimed {
                let interrupt = context.signal.held.hold(&claim.lease);
                queue.push_back((claim, interrupt));
            }
            count
        });
        confirm_all(context, &mut endings);
        match claimed {
            Ok(0) => context.signal.wait(seen, IDLE_POLL),
            // Idle workers of this process share the batch.
            Ok(count) if count > 1 => context.signal.notify_all(),
            Ok(_) => {}
            Err(error) => {
                tracing::error!(%error, "cannot claim a job");
                std::thread::sleep(IDLE_POLL);
            }
        }
    }
    confirm_all(context, &mut endings);
}

fn confirm_all(context: &WorkerContext, endings: &mut Vec<Ending>) {
    for ending in endings.drain(..) {
        confirm(context, ending);
    }
}

/// An execution whose start and end are queued, not yet known to be committed.
struct Ending {
    lease: Lease,
    end: ExecutionEnd,
    /// None if the host failed before it queued the start.
    started: Option<QueuedWrite>,
    finished: QueuedWrite,
}

/// Runs a claimed job; a panic in the host fails the job instead of leaving it `RUNNING`.
/// Nothing runs, and nothing is written, for a job whose lease was lost while it waited.
fn run_guarded(
    context: &WorkerContext,
    claim: ClaimedJob,
    interrupt: Arc<AtomicBool>,
) -> Option<Ending> {
    let lease = claim.lease.clone();
    if interrupt.load(Ordering::SeqCst) {
        // The server stops, the job was cancelled, or its lease was lost: it goes back with
        // its attempt uncounted, which ends a cancelled job `CANCELLED`; a lease lost to
        // another worker makes the write a no-op.
        if !context.releasing.load(Ordering::SeqCst) {
            tracing::info!(job = %lease.job_id, "interrupted before it started");
        }
        let released = context.store.release_unstarted(&lease);
        if let Err(error) = context.runtime.block_on(released.lease_held()) {
            tracing::warn!(job = %lease.job_id, %error, "cannot give back an unstarted job");
        }
        context.signal.held.release(&lease);
        return None;
    }
    let execution_id = uuid::Uuid::now_v7().to_string();
    let run =
        std::panic::AssertUnwindSafe(|| run_claimed(context, claim, &execution_id, interrupt));
    Some(std::panic::catch_unwind(run).unwrap_or_else(|_| {
        // A bug in the host, not in the plugin: this worker keeps serving.
        tracing::error!(job = %lease.job_id, "the worker panicked running this job");
        let mut end = failed(
            &execution_id,
            ErrorCode::WorkerLost,
            "the worker failed while running this job".into(),
        );
        end.status = ExecutionStatus::Abandoned;
        Ending {
            started: None,
            finished: context.store.finish_execution(&lease, &end),
            lease,
            end,
        }
    }))
}

fn run_claimed(
    context: &WorkerContext,
    claim: ClaimedJob,
    execution_id: &str,
    interrupt: Arc<AtomicBool>,
) -> Ending {
    let job_id = claim.lease.job_id.clone();
    let span = tracing::info_span!("job", job = %job_id, attempt = claim.attempt);
    let _entered = span.enter();
    let plugin = context.registry.resolve(&claim.problem);
    let plugin_ref = match &plugin {
        Some(plugin) => PluginRef {
            name: plugin.info.name.clone(),
            version: plugin.info.version.clone(),
            digest: plugin.digest.clone(),
        },
        None => PluginRef {
            name: claim.problem.clone(),
            version: String::new(),
            digest: String::new(),
        },
    };
    // Queued, not awaited: the run needs nothing from it, and the end is queued behind it.
    let started = context.store.start_execution(
        &claim.lease,
        execution_id,
        claim.attempt,
        &plugin_ref,
        now_millis(),
    );

    let run_started = Instant::now();
    context.metrics.execution_started();
    let end = match plugin {
        Some(plugin) => execute(context, &claim, execution_id, &plugin, interrupt),
        None => failed(
            execution_id,
            ErrorCode::PluginError,
            format!("the use case {:?} is no longer loaded", claim.problem),
        ),
    };
    context.metrics.execution_ended(
        end.status.as_str(),
        end.error.as_ref().map(|error| error.code.as_str()),
        run_started.elapsed(),
    );
    context.adapt_claim_size(run_started.elapsed());
    tracing::info!(
        status = end.status.as_str(),
        error = end.error.as_ref().map(|error| error.code.as_str()),
        "execution ended"
    );
    let finished = context.store.finish_execution(&claim.lease, &end);
    Ending {
        lease: claim.lease,
        end,
        started: Some(started),
        finished,
    }
}

/// Stops renewing a lease when dropped.
struct ReleaseOnDrop<'a>(&'a HeldLeases, &'a Lease);

impl Drop for ReleaseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.release(self.1);
    }
}

/// Waits for an execution's start and end to be committed, retrying the end a few times if
/// the database failed: a result that was computed is worth a short wait.
fn confirm(context: &WorkerContext, ending: Ending) {
    let Ending {
        lease,
        end,
        started,
        finished,
    } = ending;
    let job = &lease.job_id;
    // Renewed until the end is written: a retried end must still hold the lease.
    let _release = ReleaseOnDrop(&context.signal.held, &lease);
    if let Some(started) = started
        && let Err(error) = context.runtime.block_on(started.lease_held())
    {
        tracing::error!(%job, %error, "cannot record the execution's start");
    }
    let mut outcome = context.runtime.block_on(finished.lease_held());
    let mut backoff = Duration::from_millis(100);
    for attempt in 1.. {
        match outcome {
            Ok(true) => return,
            Ok(false) => {
                tracing::warn!(%job, "lease lost: the result of this execution was discarded");
                return;
            }
            Err(error) if attempt < 5 => {
                tracing::warn!(%job, %error, attempt, "cannot record the execution's end; retrying");
                std::thread::sleep(backoff);
                backoff *= 2;
                outcome = context
                    .runtime
                    .block_on(context.store.finish_execution(&lease, &end).lease_held());
            }
            Err(error) => {
                tracing::error!(%job, %error, "cannot record the execution's end");
                return;
            }
        }
    }
}

fn failed(execution_id: &str, code: ErrorCode, message: String) -> ExecutionEnd {
    ExecutionEnd {
        execution_id: execution_id.to_owned(),
        status: ExecutionStatus::Failed,
        job_status: JobStatus::Failed,
        error: Some(ExecutionError { code, message }),
        output: None,
        log_tail: String::new(),
        log_truncated: false,
        ended_at: now_millis(),
    }
}

/// Runs the plugin and turns whatever happened into the execution's end.
fn execute(
    context: &WorkerContext,
    claim: &ClaimedJob,
    execution_id: &str,
    plugin: &Plugin,
    interrupt: Arc<AtomicBool>,
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
    let observer = Arc::new(ProgressWriter {
        store: context.store.clone(),
        runtime: context.runtime.clone(),
        lease: claim.lease.clone(),
        execution_id: execution_id.to_owned(),
        live: Mutex::new(Live::default()),
    });
    let run_options = RunOptions {
        time_limit: options.time_limit(),
        seed: options.seed,
        max_iterations: options.max_iterations,
    };
    let report = match dataset_input(context, claim, plugin, &limits) {
        Ok(None) => plugin
            .component
            .run(&claim.input, &run_options, &limits, interrupt, observer),
        Ok(Some(input)) => plugin
            .component
            .run(&input, &run_options, &limits, interrupt, observer),
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
            let (job_status, message) = if permanent && claim.attempt >= context.limits.max_attempts
            {
                let message = format!("{message}; that was the job's last attempt");
                (JobStatus::Failed, message)
            } else {
                let message = format!("{message}; the job went back to the queue");
                (JobStatus::Pending, message)
            };
            return ExecutionEnd {
                status: ExecutionStatus::Abandoned,
                job_status,
                ..failed(execution_id, ErrorCode::WorkerLost, message)
            };
        }
    };
    let (status, job_status, error, output) = match report.result {
        Ok(output) => match check_output(plugin, &output) {
            Ok(()) => (
                ExecutionStatus::Completed,
                JobStatus::Completed,
                None,
                Some(output),
            ),
            Err(message) => (
                ExecutionStatus::Failed,
                JobStatus::Failed,
                Some(ExecutionError {
                    code: ErrorCode::InvalidOutput,
                    message,
                }),
                None,
            ),
        },
        // Interrupted because the server stops: the job goes back to the queue.
        Err(CallError::Cancelled) if context.releasing.load(Ordering::SeqCst) => (
            ExecutionStatus::Abandoned,
            JobStatus::Pending,
            Some(ExecutionError {
                code: ErrorCode::WorkerLost,
                message: "the server shut down before this execution ended; \
                          the job went back to the queue"
                    .into(),
            }),
            None,
        ),
        Err(CallError::Cancelled) => (ExecutionStatus::Cancelled, JobStatus::Cancelled, None, None),
        Err(error) => {
            let (status, code) = match &error {
                CallError::Timeout(_) => (ExecutionStatus::TimedOut, ErrorCode::Timeout),
                CallError::MemoryLimit(_) => (ExecutionStatus::Failed, ErrorCode::MemoryLimit),
                CallError::Trap(_) => (ExecutionStatus::Failed, ErrorCode::Trap),
                CallError::InvalidInput(_) => (ExecutionStatus::Failed, ErrorCode::InvalidInput),
                CallError::PluginFailed(_) => (ExecutionStatus::Failed, ErrorCode::PluginError),
                CallError::OutputTooLarge { .. } => {
                    (ExecutionStatus::Failed, ErrorCode::InvalidOutput)
                }
                CallError::Cancelled => unreachable!("handled above"),
            };
            let message = match error {
                CallError::Timeout(stopped_after) => format!(
                    "the run exceeded its time limit of {:?} and was stopped after {:?} \
                     (the limit plus a grace period)",
                    options.time_limit(),
                    stopped_after
                ),
                CallError::InvalidInput(violations) => violations
                    .iter()
                    .map(|violation| format!("{}: {}", violation.pointer, violation.message))
                    .collect::<Vec<_>>()
                    .join("; "),
                other => other.to_string(),
            };
            (
                status,
                JobStatus::Failed,
                Some(ExecutionError { code, message }),
                None,
            )
        }
    };
    ExecutionEnd {
        execution_id: execution_id.to_owned(),
        status,
        job_status,
        error,
        output,
        log_tail: report.log.text,
        log_truncated: report.log.truncated,
        ended_at: now_millis(),
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
                Violation {
                    pointer: String::new(),
                    message: format!("the bytes of data file {} are gone", dataset.data_file_id),
                },
            ])));
        }
        Err(error) => {
            return Err(DatasetFailure::Unreadable {
                message: format!("cannot read data file {}: {error}", dataset.data_file_id),
                permanent: matches!(error, StoreError::Corrupt(_)),
            });
        }
    };
    match plugin.dataset_input(&dataset.media_type, bytes, limits) {
        Ok(input) => Ok(Some(input)),
        Err(DatasetError::Decode(error)) => Err(DatasetFailure::Call(error)),
        Err(other) => Err(DatasetFailure::Call(CallError::InvalidInput(vec![
            Violation {
                pointer: String::new(),
                message: other.to_string(),
            },
        ]))),
    }
}

/// The output must be JSON that the plugin's own output schema accepts.
fn check_output(plugin: &Plugin, output: &str) -> Result<(), String> {
    let value: Value =
        serde_json::from_str(output).map_err(|error| format!("the output is not JSON: {error}"))?;
    let problems: Vec<String> = plugin
        .output_schema
        .iter_errors(&value)
        .take(10)
        .map(|error| format!("{}: {}", error.instance_path().as_str(), error.masked()))
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the output does not match the output schema: {}",
            problems.join("; ")
        ))
    }
}

/// Stores a running execution's progress and log as the plugin reports them, at most once per
/// [`PROGRESS_INTERVAL`], without blocking the guest: the write happens on the async runtime.
/// What arrives in between is kept and goes with the next write (or the end).
struct ProgressWriter {
    store: Arc<dyn JobStore>,
    runtime: tokio::runtime::Handle,
    lease: Lease,
    execution_id: String,
    live: Mutex<Live>,
}

#[derive(Default)]
struct Live {
    last_write: Option<Instant>,
    /// Progress reported since the last write.
    progress: Option<Progress>,
    /// [`BoundedLog::written`] at the last write.
    log_written: u64,
}

impl ProgressWriter {
    fn update(&self, progress: Option<Progress>, log: &BoundedLog) {
        let update = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if progress.is_some() {
                live.progress = progress;
            }
            let now = Instant::now();
            if live
                .last_write
                .is_some_and(|last| now - last < PROGRESS_INTERVAL)
            {
                return;
            }
            live.last_write = Some(now);
            let written = log.written();
            let log = (written != live.log_written).then(|| {
                live.log_written = written;
                let tail = log.tail();
                (tail.text, tail.truncated)
            });
            LiveUpdate {
                progress: live.progress.take(),
                log,
            }
        };
        if update.progress.is_none() && update.log.is_none() {
            return;
        }
        let store = self.store.clone();
        let lease = self.lease.clone();
        let execution_id = self.execution_id.clone();
        self.runtime.spawn(async move {
            if let Err(error) = store.record_progress(&lease, &execution_id, &update).await {
                tracing::warn!(%error, "cannot record progress");
            }
        });
    }
}

impl ExecutionObserver for ProgressWriter {
    fn progress(&self, fraction: f64, message: String, log: &BoundedLog) {
        let mut message = message;
        message.truncate(message.floor_char_boundary(1024));
        self.update(Some(Progress { fraction, message }), log);
    }

    fn logged(&self, log: &BoundedLog) {
        self.update(None, log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(signal: &WorkSignal, job_id: &str) -> Arc<AtomicBool> {
        let claim = ClaimedJob {
            lease: Lease {
                job_id: job_id.into(),
                token: 1,
            },
            problem: "maxcut".into(),
            input: "{}".into(),
            options: "{}".into(),
            attempt: 1,
            created_at: 0,
            dataset: None,
        };
        let interrupt = signal.held.hold(&claim.lease);
        signal
            .claimed
            .lock()
            .expect("the queue")
            .push_back((claim, interrupt.clone()));
        interrupt
    }

    #[test]
    fn a_cancelled_job_leaves_the_queue_of_claimed_jobs_at_once() {
        let signal = WorkSignal::default();
        let first = claimed(&signal, "first");
        let second = claimed(&signal, "second");
        assert!(signal.cancel("second"));
        // Its flag is set too, though no worker will see it: it is handed on to be ended.
        assert!(second.load(Ordering::SeqCst));
        let queue: Vec<String> = signal
            .claimed
            .lock()
            .expect("the queue")
            .iter()
            .map(|(claim, _)| claim.lease.job_id.clone())
            .collect();
        assert_eq!(queue, ["first"]);
        let handed_on = signal.take_cancelled_unstarted();
        assert_eq!(handed_on.len(), 1);
        assert_eq!(handed_on[0].job_id, "second");
        // A job no worker of this process holds is not ours to cancel.
        assert!(!signal.cancel("elsewhere"));
        assert!(!first.load(Ordering::SeqCst));
    }

    fn limits_from(text: &str) -> Result<HashMap<String, LimitOverrides>, String> {
        let file = tempfile::NamedTempFile::new().map_err(|error| error.to_string())?;
        std::fs::write(file.path(), text).map_err(|error| error.to_string())?;
        read_limit_overrides(file.path())
    }

    #[test]
    fn limit_overrides_replace_the_defaults_of_their_use_case_only() {
        let overrides = limits_from(
            "[maxcut]\nmax_time_limit = \"2m\"\nmemory_limit_mib = 64\nmax_output_bytes = \"1MiB\"\n\
             [other]\nmax_output_bytes = 1000\n",
        )
        .expect("valid");
        let limits = JobLimits {
            default_time_limit: Duration::from_secs(10),
            max_time_limit: Duration::from_secs(60),
            sandbox: Limits::default(),
            max_attempts: 3,
            lease: Duration::from_secs(30),
            per_use_case: Arc::new(overrides),
        };
        let maxcut = limits.of("maxcut");
        assert_eq!(maxcut.max_time_limit, Duration::from_secs(120));
        assert_eq!(maxcut.default_time_limit, Duration::from_secs(10));
        assert_eq!(maxcut.sandbox.memory_bytes, 64 << 20);
        assert_eq!(maxcut.sandbox.output_bytes, 1 << 20);
        assert_eq!(limits.of("other").sandbox.output_bytes, 1000);
        assert_eq!(limits.of("unlisted").sandbox, Limits::default());

        // A job's memory option lowers the cap; it never raises it.
        let options = |memory_limit_mib| JobOptions {
            time_limit_ms: 1000,
            seed: 1,
            max_iterations: None,
            memory_limit_mib,
        };
        assert_eq!(maxcut.for_run(&options(Some(16))).memory_bytes, 16 << 20);
        assert_eq!(maxcut.for_run(&options(Some(999))).memory_bytes, 64 << 20);
        assert_eq!(
            maxcut.for_run(&options(None)).wall_time,
            Duration::from_secs(2)
        );
    }

    #[test]
    fn bad_limit_files_say_what_is_wrong() {
        for (text, expected) in [
            (
                "[maxcut]\nmax_time_limit = \"soon\"\n",
                "[maxcut] max_time_limit",
            ),
            ("[maxcut]\nmemory = 1\n", "unknown field"),
            (
                "[maxcut]\nmax_output_bytes = true\n",
                "[maxcut] max_output_bytes",
            ),
            ("[maxcut]\nmax_output_bytes = -1\n", "must not be negative"),
            ("not toml", ""),
        ] {
            let error = limits_from(text).expect_err(text);
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }
}
