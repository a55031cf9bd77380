//! What every worker of the pool shares: the store, the plugins, the limits, this process's
//! local jobs, and the flags and claim size that steer the loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use super::local_jobs::LocalJobs;
use crate::config::JobLimits;
use crate::metrics::Metrics;
use crate::plugins::PluginSync;
use crate::sandbox_process::SandboxProcesses;
use crate::store::{ClaimFilter, JobStore};

/// Short jobs are claimed several at a time, so that one commit serves many of them; a job
/// that ran at least this long sets the claim back to one job, so that a replica never holds
/// long jobs back in its own queue while other replicas idle.
pub(super) const SHORT_JOB: Duration = Duration::from_millis(20);

/// The most jobs one claim takes.
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
    /// How many jobs the next claim takes: doubles while jobs are short, back to one after a
    /// long one.
    pub(super) claim_size: AtomicU32,
    pub(super) runtime: tokio::runtime::Handle,
    /// Where runs with long time limits go, if anywhere.
    pub(super) sandbox_processes: Option<Arc<SandboxProcesses>>,
}

impl WorkerContext {
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
