//! The worker threads: each claims jobs from the store (several at a time while they are
//! short), runs them one by one, and confirms their ends; beside them, the heartbeat that
//! renews the held leases and the task that ends claimed jobs cancelled before they started.
//!
//! Workers are dedicated OS threads, not tokio tasks: a guest is CPU-bound and may not yield
//! for as long as its deadline allows, which would starve the async runtime serving HTTP.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::claim_filter::claim_filter;
use super::claim_turn::{ClaimTurn, look_again};
use super::context::{MAX_CLAIM, SHORT_JOB, WorkerContext};
use super::execute::{execute, failed};
use super::leases::HeldLeases;
use super::local_jobs::LocalJobs;
use super::race;
use super::run_clocks::RunClocks;
use super::start::{DeferredStart, Started};
use crate::config::JobLimits;
use crate::metrics::{ExecutionOutcome, Metrics};
use crate::plugins::sync::Fetched;
use crate::plugins::{Plugin, PluginSync};
use crate::sandbox_process::SandboxProcesses;
use crate::store::{
    ClaimFilter, ClaimedJob, ErrorCode, ExecutionEnd, ExecutionStart, ExecutionStatus, JobStore,
    Lease, PluginRef, QueuedWrite, Retry, now_millis,
};

/// How often an idle worker looks for work even if nobody woke it: a backstop only, since new
/// jobs wake workers (and, on PostgreSQL, notify other replicas' workers).
const IDLE_POLL: Duration = Duration::from_secs(2);

/// How long a claimed job may wait for a worker of the process that claimed it before it goes
/// back to the queue. A claim takes several jobs only while runs are short, so a batch drains
/// in milliseconds unless a run turned out long; then the rest of the batch should not wait
/// for it while other replicas idle.
const UNSTARTED_BOUND: Duration = Duration::from_millis(500);

/// How many ends a worker queues, while claimed jobs remain, before it waits for their
/// commit. A worker waits for the commit of its ends when it claims next (the claim rides in
/// the same commit), so that a claim of short jobs costs one wait, not two; this bound (four
/// times a worker's largest share of a claim) only keeps a long local queue from holding
/// ends unconfirmed for long.
const UNCONFIRMED_ENDS: usize = 4 * MAX_CLAIM as usize;

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

/// How many workers a replica runs, the pool they are in, and where their long runs go.
#[derive(Debug, Clone)]
pub struct Workers<'a> {
    pub count: usize,
    pub pool: &'a str,
    /// Sandbox processes for the runs they take; the rest run in this process.
    pub sandbox_processes: Option<Arc<SandboxProcesses>>,
}

impl WorkerPool {
    /// Starts `count` workers (none: a replica that serves the API and runs no job).
    /// `runtime` is the tokio runtime the store's futures run on.
    pub fn start(
        workers: Workers<'_>,
        store: Arc<dyn JobStore>,
        plugins: Arc<PluginSync>,
        limits: JobLimits,
        local: Arc<LocalJobs>,
        metrics: Arc<Metrics>,
        runtime: tokio::runtime::Handle,
    ) -> WorkerPool {
        let Workers {
            count,
            pool,
            sandbox_processes,
        } = workers;
        let claim_filter = Arc::new(claim_filter(&limits, pool));
        if count > 0 && claim_filter.as_ref() == &ClaimFilter::Only(Vec::new()) {
            tracing::warn!(
                pool,
                "no use case is bound to this pool (pools = [...] in --plugin-limits): \
                 its workers will claim nothing"
            );
        }
        if count > 0 {
            metrics.claim_size_set(1);
        }
        let context = Arc::new(WorkerContext {
            store,
            plugins,
            claim_filter,
            limits,
            local,
            metrics,
            shutdown: AtomicBool::new(false),
            releasing: AtomicBool::new(false),
            claim_size: AtomicU32::new(1),
            claim_turn: ClaimTurn::default(),
            runs: RunClocks::new(count),
            runtime,
            sandbox_processes,
        });
        context.runtime.spawn(heartbeat(Arc::downgrade(&context)));
        context
            .runtime
            .spawn(release_unstarted(Arc::downgrade(&context)));
        let threads = (0..count)
            .map(|index| {
                let context = context.clone();
                std::thread::Builder::new()
                    .name(format!("worker-{index}"))
                    .spawn(move || work(&context, index))
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
        self.context.local.jobs_added();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && self.threads.iter().any(|thread| !thread.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let running = self.context.local.held.leases().len();
        if running > 0 {
            tracing::warn!(
                jobs = running,
                "the shutdown grace ran out; giving the running jobs back to the queue"
            );
            self.context.releasing.store(true, Ordering::SeqCst);
            let _ = self.context.local.held.interrupt(None);
        }
        for thread in self.threads {
            let _ = thread.join();
        }
        // Claimed jobs nobody started go straight back, their attempt uncounted (those
        // cancelled meanwhile end `CANCELLED`).
        let mut unstarted = self.context.local.drain_claimed();
        unstarted.extend(self.context.local.take_cancelled_unstarted());
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

/// Gives back the claimed jobs no worker of this process started: those cancelled meanwhile
/// (each goes back with its attempt uncounted, which for a job whose cancellation was asked
/// for means `CANCELLED`, with no execution), and those that waited past [`UNSTARTED_BOUND`]
/// behind this process's runs (pending again, for another replica or the next free worker).
/// Runs until the worker pool is gone.
async fn release_unstarted(context: std::sync::Weak<WorkerContext>) {
    loop {
        let Some(local) = context.upgrade().map(|context| context.local.clone()) else {
            return;
        };
        let _ = tokio::time::timeout(UNSTARTED_BOUND / 2, local.cancelled_wake.notified()).await;
        let Some(context) = context.upgrade() else {
            return;
        };
        let cancelled = context.local.take_cancelled_unstarted();
        let waiting = context.local.take_waiting_longer_than(UNSTARTED_BOUND);
        if !waiting.is_empty() {
            tracing::info!(
                jobs = waiting.len(),
                "claimed jobs waited for a busy worker; giving them back to the queue"
            );
        }
        let released: Vec<_> = cancelled
            .iter()
            .chain(&waiting)
            .map(|lease| (lease, context.store.release_unstarted(lease)))
            .collect();
        for (lease, released) in released {
            if let Err(error) = released.lease_held().await {
                tracing::warn!(job = %lease.job_id, %error, "cannot give back an unstarted job");
            }
            context.local.held.release(lease);
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
        let leases = context.local.held.leases();
        if leases.is_empty() {
            continue;
        }
        match context.store.heartbeat(&leases, context.limits.lease).await {
            Ok(lost) if lost.is_empty() => {}
            Ok(lost) => {
                // Some of these may simply have ended since they were listed (their end is
                // written, not yet confirmed); a result really lost is logged when its end
                // is refused.
                for job in context.local.held.interrupt(Some(&lost)) {
                    tracing::debug!(%job, "lease not renewed; interrupting the execution");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot renew the leases"),
        }
    }
}

/// Worker `index`'s loop: the claimed jobs of this process first, then a claim, for the
/// other idle workers too.
fn work(context: &WorkerContext, index: usize) {
    let mut endings = Vec::new();
    while !context.shutdown.load(Ordering::SeqCst) {
        if let Some((claim, interrupt)) = context.local.next_claimed() {
            let run = context.runs.start(index);
            let ending = run_guarded(context, claim, interrupt);
            let long = run.elapsed() >= SHORT_JOB;
            drop(run);
            let entrant = ending
                .as_ref()
                .is_some_and(|ending| ending.race_of.is_some());
            endings.extend(ending);
            // A race entrant's end may settle its race, and after a long run the next one
            // may be long too: neither waits for this worker's next claim.
            if long || entrant || endings.len() >= UNCONFIRMED_ENDS {
                confirm_all(context, &mut endings);
            }
            continue;
        }
        let seen = context.local.wakeup.generation();
        // Read after `seen`: a stop asked for before it is seen here, one after it wakes the
        // wait.
        if context.shutdown.load(Ordering::SeqCst) {
            break;
        }
        let Some(turn) = context.claim_turn.take() else {
            // Another worker is claiming, for this one too: it confirms its ends, and wakes
            // when the claim is back with jobs, or when jobs are announced.
            context.claim_turn.wait_behind(|| {
                confirm_all(context, &mut endings);
                context.local.wakeup.wait(seen, IDLE_POLL);
            });
            continue;
        };
        // The claim rides in the same group commit as the ends queued just before it, so a
        // worker waits for one commit per claim, not one per write.
        let size = context.jobs_to_claim(turn.waiting());
        let claimed = context.runtime.block_on(context.store.claim_jobs_of(
            context.limits.lease,
            size,
            context.claim_filter.clone(),
        ));
        context.metrics.claim_sent();
        // Held (renewed by the heartbeat) before anything else can take time.
        let claimed = claimed.map(|claimed| {
            let count = claimed.len();
            context.local.queue_claimed(claimed);
            count
        });
        drop(turn);
        if let Ok(count) = claimed {
            let announced = context.local.wakeup.generation() != seen;
            if look_again(count, size, announced) {
                context.local.jobs_added();
            }
        }
        confirm_all(context, &mut endings);
        match claimed {
            Ok(0) => context.local.wakeup.wait(seen, IDLE_POLL),
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
    /// The start: queued on its own, written with the end (and again with a retried end),
    /// or none (the host failed before the attempt had one).
    started: Started,
    finished: QueuedWrite,
    /// The race its job is an entrant of, if it is one.
    race_of: Option<String>,
}

/// Runs a claimed job; a panic in the host fails the job instead of leaving it `RUNNING`.
/// Nothing runs, and nothing is written, for a job whose lease was lost while it waited.
fn run_guarded(
    context: &WorkerContext,
    claim: ClaimedJob,
    interrupt: Arc<AtomicBool>,
) -> Option<Ending> {
    let lease = claim.lease.clone();
    let race_of = claim.race_of.clone();
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
        context.local.held.release(&lease);
        return None;
    }
    let execution_id = uuid::Uuid::now_v7().to_string();
    let start_slot = OnceLock::new();
    let run = std::panic::AssertUnwindSafe(|| {
        run_claimed(context, claim, &execution_id, interrupt, &start_slot)
    });
    Some(std::panic::catch_unwind(run).unwrap_or_else(|_| {
        // A bug in the host, not in the plugin: this worker keeps serving, and the job fails
        // (another attempt would likely panic the same way).
        tracing::error!(job = %lease.job_id, "the worker panicked running this job");
        let end = ExecutionEnd {
            status: ExecutionStatus::Abandoned,
            retry: Retry::No,
            ..failed(
                &execution_id,
                ErrorCode::WorkerLost,
                "the worker failed while running this job".into(),
            )
        };
        let (started, finished) = match start_slot.get() {
            Some(start) => end_with_start(context, &lease, start, &end),
            None => (Started::Taken, context.store.finish_execution(&lease, &end)),
        };
        Ending {
            started,
            finished,
            lease,
            end,
            race_of,
        }
    }))
}

/// The component a job runs: the one it was bound to at acceptance, on this replica
/// already or fetched from the store now. A job bound to a plugins directory's file that has
/// changed since (its bytes are nowhere now) runs what serves its use case here, unless it
/// asked for that version: the directory is the development path, where the newest build is
/// what an author wants run.
fn plugin_for(context: &WorkerContext, claim: &ClaimedJob) -> Result<Arc<Plugin>, String> {
    let registry = context.plugins.registry();
    let Some(binding) = &claim.binding else {
        // Accepted before jobs were bound.
        return registry
            .resolve(&claim.problem)
            .ok_or_else(|| format!("the use case {:?} is no longer loaded", claim.problem));
    };
    if let Some(plugin) = registry.by_digest(&binding.digest) {
        return Ok(plugin);
    }
    match context
        .runtime
        .block_on(context.plugins.component(&binding.digest))
    {
        Ok(Fetched::Loaded(plugin)) => Ok(plugin),
        // Bytes that are nowhere: a plugins directory's build replaced since.
        Ok(Fetched::NotStored) if binding.requested.is_none() => registry
            .resolve(&claim.problem)
            .ok_or_else(|| format!("the use case {:?} is no longer loaded", claim.problem)),
        Ok(Fetched::NotStored) => Err(format!(
            "{} {} ({}) is no longer anywhere: it was a plugins directory's file",
            claim.problem, binding.version, binding.digest
        )),
        Ok(Fetched::Refused(why)) => Err(why),
        Err(error) => Err(format!(
            "{} {} ({}) could not be read from the store: {error}",
            claim.problem, binding.version, binding.digest
        )),
    }
}

/// Runs a claimed job; `start_slot` receives its start, so that a panic can still write it.
fn run_claimed(
    context: &WorkerContext,
    claim: ClaimedJob,
    execution_id: &str,
    interrupt: Arc<AtomicBool>,
    start_slot: &OnceLock<Arc<DeferredStart>>,
) -> Ending {
    let job_id = claim.lease.job_id.clone();
    let span = tracing::info_span!(
        "job",
        job = %job_id,
        problem = %claim.problem,
        attempt = claim.attempt,
        status = tracing::field::Empty,
    );
    crate::telemetry::join_job_trace(&span, &job_id);
    let _entered = span.enter();
    let plugin = plugin_for(context, &claim);
    let plugin_ref = match &plugin {
        Ok(plugin) => PluginRef {
            name: plugin.info.name.clone(),
            version: plugin.info.version.clone(),
            digest: plugin.digest.clone(),
        },
        Err(_) => PluginRef {
            name: claim.problem.clone(),
            version: claim
                .binding
                .as_ref()
                .map(|binding| binding.version.clone())
                .unwrap_or_default(),
            digest: claim
                .binding
                .as_ref()
                .map(|binding| binding.digest.clone())
                .unwrap_or_default(),
        },
    };
    // Written late, or with the end (see `start`): the run needs nothing from it.
    let start = start_slot.get_or_init(|| {
        Arc::new(DeferredStart::new(
            context.store.clone(),
            claim.lease.clone(),
            ExecutionStart {
                execution_id: execution_id.to_owned(),
                attempt: claim.attempt,
                plugin: plugin_ref,
                started_at: now_millis(),
            },
        ))
    });

    let run_started = Instant::now();
    let waited = Duration::from_millis(now_millis().saturating_sub(claim.created_at).max(0) as u64);
    context.metrics.execution_started(&claim.problem, waited);
    let end = match plugin {
        Ok(plugin) => execute(
            context,
            &claim,
            execution_id,
            &plugin,
            interrupt,
            start.clone(),
        ),
        Err(why) => failed(execution_id, ErrorCode::PluginError, why),
    };
    context.metrics.execution_ended(ExecutionOutcome {
        problem: &claim.problem,
        status: end.status.as_str(),
        error_code: end.error.as_ref().map(|error| error.code.as_str()),
        took: run_started.elapsed(),
    });
    span.record("status", end.status.as_str());
    context.adapt_claim_size(run_started.elapsed());
    tracing::info!(
        status = end.status.as_str(),
        error = end.error.as_ref().map(|error| error.code.as_str()),
        "execution ended"
    );
    let (started, finished) = end_with_start(context, &claim.lease, start, &end);
    Ending {
        lease: claim.lease,
        end,
        started,
        finished,
        race_of: claim.race_of,
    }
}

/// Queues an attempt's end, with its start if that was never written; returns what became
/// of the start, to be confirmed with the end.
fn end_with_start(
    context: &WorkerContext,
    lease: &Lease,
    start: &DeferredStart,
    end: &ExecutionEnd,
) -> (Started, QueuedWrite) {
    let started = start.take();
    let finished = queue_end(context, lease, &started, end);
    (started, finished)
}

/// Queues an attempt's end, with its start if that goes with it.
fn queue_end(
    context: &WorkerContext,
    lease: &Lease,
    started: &Started,
    end: &ExecutionEnd,
) -> QueuedWrite {
    match started {
        Started::Unwritten(start) => context.store.start_and_finish_execution(lease, start, end),
        Started::Queued(_) | Started::Taken => context.store.finish_execution(lease, end),
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
        race_of,
    } = ending;
    let job = &lease.job_id;
    // Renewed until the end is written: a retried end must still hold the lease.
    let _release = ReleaseOnDrop(&context.local.held, &lease);
    let started = match started {
        Started::Queued(queued) => {
            if let Err(error) = context.runtime.block_on(queued.lease_held()) {
                tracing::error!(%job, %error, "cannot record the execution's start");
            }
            Started::Taken
        }
        // A failed end rolled its start back with it: a retry writes both again.
        unwritten => unwritten,
    };
    let mut outcome = context.runtime.block_on(finished.lease_held());
    let mut backoff = Duration::from_millis(100);
    for attempt in 1.. {
        match outcome {
            Ok(true) => {
                if let Some(race_id) = race_of {
                    context.runtime.spawn(race::entrant_ended(
                        context.store.clone(),
                        context.local.clone(),
                        lease.owner_id.clone(),
                        race_id,
                        race::proven_optimal(end.output.as_deref()),
                    ));
                }
                return;
            }
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
                    .block_on(queue_end(context, &lease, &started, &end).lease_held());
            }
            Err(error) => {
                tracing::error!(%job, %error, "cannot record the execution's end");
                return;
            }
        }
    }
}
