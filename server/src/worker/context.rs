//! What every worker of the pool shares: the store, the plugins, the limits, this process's
//! local jobs, and the flags and claim size that steer the loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use super::claim_turn::ClaimTurn;
use super::local_jobs::LocalJobs;
use super::run_clocks::RunClocks;
use crate::config::JobLimits;
use crate::metrics::Metrics;
use crate::plugins::PluginSync;
use crate::sandbox_process::SandboxProcesses;
use crate::store::{ClaimFilter, JobStore};

/// Short jobs are claimed several at a time, so that one commit serves many of them; a job
/// that ran at least this long sets the claim back to one job, so that a replica never holds
/// long jobs back in its own queue while other replicas idle.
pub(super) const SHORT_JOB: Duration = Duration::from_millis(20);

/// The most jobs one claim takes for each worker it is for.
pub(super) const MAX_CLAIM: u32 = 32;

/// What every worker shares.
pub(super) struct WorkerContext {
    pub(super) store: Arc<dyn JobStore>,
    /// The registry, and the store's components it loads on demand.
    pub(super) plugins: Arc<PluginSync>,
    pub(super) limits: JobLimits,
    /// The use cases this process's pool runs.
    pub(super) claim_filter: Arc<ClaimFilter>,
    pub(super) local: Arc<LocalJobs>,
    pub(super) metrics: Arc<Metrics>,
    /// Set when the server stops: claim nothing more.
    pub(super) shutdown: AtomicBool,
    /// Set when the shutdown grace ran out: interrupt running jobs and give them back.
    pub(super) releasing: AtomicBool,
    /// How many jobs the next claim takes for each worker: doubles while jobs are short, back
    /// to one after a long one.
    pub(super) claim_size: AtomicU32,
    /// When each worker's run started.
    pub(super) runs: RunClocks,
    /// Which worker claims, for the others too.
    pub(super) claim_turn: ClaimTurn,
    pub(super) runtime: tokio::runtime::Handle,
    /// Where runs with long time limits go, if anywhere.
    pub(super) sandbox_processes: Option<Arc<SandboxProcesses>>,
}

impl WorkerContext {
    /// How many jobs a claim takes, `waiting` workers waiting for it besides the one that
    /// sends it. While runs are short, what every worker not held by a long run would take:
    /// each is free again within milliseconds, and one claim a commit keeps them all busy.
    /// After a long run, one job for each worker the claim is for, so that no job waits
    /// behind a run.
    pub(super) fn jobs_to_claim(&self, waiting: u32) -> u32 {
        let held = self.runs.in_runs_of_at_least(SHORT_JOB);
        claim_of(
            self.claim_size.load(Ordering::Relaxed),
            self.runs.workers().saturating_sub(held),
            waiting,
        )
    }

    /// Learns from a run's length how many jobs to claim next.
    pub(super) fn adapt_claim_size(&self, run_time: Duration) {
        let size = if run_time < SHORT_JOB {
            (self.claim_size.load(Ordering::Relaxed) * 2).min(MAX_CLAIM)
        } else {
            1
        };
        self.claim_size.store(size, Ordering::Relaxed);
        self.metrics.claim_size_set(size);
    }
}

/// See [`WorkerContext::jobs_to_claim`]: `size` jobs for each of the `free` workers while runs
/// are short (`size` above one), else one for the claiming worker and each `waiting` one.
fn claim_of(size: u32, free: u32, waiting: u32) -> u32 {
    if size > 1 {
        size.saturating_mul(free.max(1))
    } else {
        1 + waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_takes_jobs_for_every_worker_it_is_for() {
        // Short runs: every worker not held by a long run is free again in milliseconds.
        assert_eq!(claim_of(32, 4, 0), 128);
        assert_eq!(claim_of(32, 1, 0), 32);
        assert_eq!(claim_of(2, 0, 0), 2, "the claiming worker is free");
        // After a long run: one job each for the claiming worker and those waiting, none
        // for a worker still running, so that no job waits behind a run.
        assert_eq!(claim_of(1, 4, 0), 1);
        assert_eq!(claim_of(1, 4, 2), 3);
    }
}
