//! What the domain and the API share: the store, the plugins, the job limits, the workers'
//! queue, and the permits for work done off the async runtime. The API's `AppState` holds
//! these beside what only HTTP needs (login throttle, body budget, held requests), so that a
//! launch, an experiment or a race can be decided from a handler, a command or a test alike.

use std::sync::Arc;
use std::time::Duration;

use crate::changes::JobChanges;
use crate::config::JobLimits;
use crate::domain::ApiError;
use crate::metrics::Metrics;
use crate::options::JobOptions;
use crate::plugins::{PluginRegistry, PluginSync};
use crate::runtime::Limits;
use crate::store::{JobStore, Quotas};
use crate::webhooks::WebhookPolicy;
use crate::worker::LocalJobs;

/// The largest component `POST /plugins` takes by default (`--max-plugin-bytes`).
pub const DEFAULT_MAX_PLUGIN_BYTES: u64 = 64 << 20;

/// `--max-dataset-bytes` when not given: 256 MiB.
pub const DEFAULT_MAX_DATASET_BYTES: u64 = 256 << 20;

/// Publish checks run at once (each holds a sandbox instance while its examples run).
pub const PUBLISH_CHECKS: usize = 1;

/// The services a launch, an experiment, a race or a publish works with.
#[derive(Clone)]
pub struct Services {
    pub store: Arc<dyn JobStore>,
    pub registry: Arc<PluginRegistry>,
    /// The registry kept in step with the store.
    pub plugins: Arc<PluginSync>,
    /// The most bytes a published component may have.
    pub max_plugin_bytes: u64,
    pub local_jobs: Arc<LocalJobs>,
    pub metrics: Arc<Metrics>,
    pub job_limits: JobLimits,
    /// Limits of the `validate` call made while a submission waits.
    pub validate_limits: Limits,
    /// Permits for the CPU- and memory-heavy work submissions do off the async runtime
    /// (`validate`, `decode`), one per CPU: a flood of submissions queues here instead of
    /// spawning hundreds of blocking threads.
    pub blocking_work: Arc<tokio::sync::Semaphore>,
    /// One permit for a publish's check (compile, describe, the examples run, which may take
    /// the examples' whole time limit): publishes take turns on it, apart from
    /// `blocking_work`, so two slow publishes cannot hold up every launch's `validate`.
    pub publish_work: Arc<tokio::sync::Semaphore>,
    /// The largest dataset accepted, in bytes.
    pub max_dataset_bytes: u64,
    /// What one user may hold: pending jobs, and bytes of datasets.
    pub quotas: Quotas,
    /// Who waits for which job (long-polls, event streams).
    pub changes: Arc<JobChanges>,
    /// Where callbacks may go.
    pub webhook_policy: Arc<WebhookPolicy>,
}

impl Services {
    pub fn new(
        store: Arc<dyn JobStore>,
        plugins: Arc<PluginSync>,
        local_jobs: Arc<LocalJobs>,
        metrics: Arc<Metrics>,
        job_limits: JobLimits,
    ) -> Services {
        Services {
            store,
            registry: plugins.registry().clone(),
            plugins,
            max_plugin_bytes: DEFAULT_MAX_PLUGIN_BYTES,
            local_jobs,
            metrics,
            validate_limits: Limits {
                wall_time: Duration::from_secs(5),
                ..job_limits.sandbox
            },
            blocking_work: Arc::new(tokio::sync::Semaphore::new(cpus())),
            publish_work: Arc::new(tokio::sync::Semaphore::new(PUBLISH_CHECKS)),
            job_limits,
            max_dataset_bytes: DEFAULT_MAX_DATASET_BYTES,
            quotas: Quotas::default(),
            changes: Arc::default(),
            webhook_policy: Arc::default(),
        }
    }

    /// Limits of the calls a submission makes into `use_case` (`decode`, `validate`): the
    /// short deadline, and the memory cap the job would run under (the use case's own, or
    /// the job's lower `memory_limit_mib`), since checking an input needs about what running
    /// on it does, and a plugin may ask whether its run would fit.
    pub fn submission_limits(&self, use_case: &str, options: Option<&JobOptions>) -> Limits {
        let limits = self.job_limits.of(use_case);
        Limits {
            memory_bytes: options.map_or(limits.sandbox.memory_bytes, |options| {
                limits.for_run(options).memory_bytes
            }),
            ..self.validate_limits
        }
    }

    /// Runs CPU- or memory-heavy work of a submission (a call into a plugin) on a blocking
    /// thread, at most one per CPU at a time. The work holds its permit until it is done,
    /// even when the request is dropped first (the client hung up): a blocking thread cannot
    /// be stopped, and its sandbox instance holds a slot of the instance pool, which is sized
    /// for one submission call per permit.
    pub async fn run_blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        run_with_permit(&self.blocking_work, work).await
    }

    /// Runs a publish's check on a blocking thread, under the publishes' own permit.
    pub async fn run_publish_check<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        run_with_permit(&self.publish_work, work).await
    }
}

/// Runs `work` on a blocking thread once `permits` gives one, held until the work is done.
pub async fn run_with_permit<T: Send + 'static>(
    permits: &Arc<tokio::sync::Semaphore>,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    let permit = permits
        .clone()
        .acquire_owned()
        .await
        .map_err(|error| ApiError::Internal(error.to_string()))?;
    Ok(tokio::task::spawn_blocking(move || {
        let result = work();
        drop(permit);
        result
    })
    .await?)
}

/// The CPUs this process may use.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |count| count.get())
}
