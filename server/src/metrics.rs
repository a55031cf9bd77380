//! What the server measures, for `GET /metrics` in the OpenMetrics text format, kept in a
//! `prometheus-client` registry: counters, gauges and histograms of HTTP requests, of the
//! time jobs wait and run, and of logins. The gauges only the caller can read (the queue,
//! the plugins, the waiters, the database's connections) are set when the text is rendered.
//! Beside them: the build, the process (`process.rs`), and how busy the workers are.

mod process;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use prometheus_client::metrics::info::Info;

use self::process::ProcessCollector;
use crate::store::{ConnectionPool, QueueDepth};

/// A metric's labels, by name.
type Labels = Vec<(&'static str, String)>;

type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// What the server counts; shared by the handlers and the workers.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    jobs_accepted: Family<Labels, Counter>,
    executions_running: Gauge,
    claim_size: Gauge,
    claims: Counter,
    executions_ended: Family<Labels, Counter>,
    execution_seconds: Histograms,
    job_wait_seconds: Histograms,
    http_request_seconds: Histograms,
    logins_failed: Counter,
    logins_throttled: Counter,
    jobs_pending: Gauge,
    queue_depth: Family<Labels, Gauge>,
    pool_pending: Family<Labels, Gauge>,
    plugins_loaded: Gauge,
    waiters: Family<Labels, Gauge>,
    workers: Gauge,
    workers_busy: Gauge,
    job_failures: Family<Labels, Counter>,
    database_connections: Family<Labels, Gauge>,
    database_connections_idle: Family<Labels, Gauge>,
    /// Totals for this replica's report, whatever their labels.
    accepted_total: AtomicU64,
    ended_total: AtomicU64,
}

/// Jobs accepted and executions ended since start, and executions running now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub accepted: u64,
    pub ended: u64,
    pub running: u32,
}

/// How one execution ended, for its counters and histogram.
#[derive(Debug, Clone, Copy)]
pub struct ExecutionOutcome<'a> {
    pub problem: &'a str,
    pub status: &'static str,
    pub error_code: Option<&'static str>,
    pub took: Duration,
}

/// From a millisecond to about 9 minutes, doubling: HTTP answers, waits and runs alike.
fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 20))
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::default();
        let metrics = Metrics {
            jobs_accepted: Family::default(),
            executions_running: Gauge::default(),
            claim_size: Gauge::default(),
            claims: Counter::default(),
            executions_ended: Family::default(),
            execution_seconds: Family::new_with_constructor(seconds_histogram),
            job_wait_seconds: Family::new_with_constructor(seconds_histogram),
            http_request_seconds: Family::new_with_constructor(seconds_histogram),
            logins_failed: Counter::default(),
            logins_throttled: Counter::default(),
            jobs_pending: Gauge::default(),
            queue_depth: Family::default(),
            pool_pending: Family::default(),
            plugins_loaded: Gauge::default(),
            waiters: Family::default(),
            workers: Gauge::default(),
            workers_busy: Gauge::default(),
            job_failures: Family::default(),
            database_connections: Family::default(),
            database_connections_idle: Family::default(),
            accepted_total: AtomicU64::new(0),
            ended_total: AtomicU64::new(0),
            registry: Registry::default(),
        };
        registry.register(
            "caseload_jobs_accepted",
            "Jobs accepted (202) by this process, by use case",
            metrics.jobs_accepted.clone(),
        );
        registry.register(
            "caseload_jobs_pending",
            "Jobs waiting for a worker, in the whole store",
            metrics.jobs_pending.clone(),
        );
        registry.register(
            "caseload_queue_depth",
            "Jobs waiting (state=pending) or claimed by a worker (state=running), per use case, in the whole store",
            metrics.queue_depth.clone(),
        );
        registry.register(
            "caseload_pool_pending",
            "Jobs waiting that the workers of a pool may claim, per pool and use case, in the whole store: what a pool's autoscaler scales on (a use case in two pools counts in both)",
            metrics.pool_pending.clone(),
        );
        registry.register(
            "caseload_executions_running",
            "Executions running on this process's workers",
            metrics.executions_running.clone(),
        );
        registry.register(
            "caseload_claim_size",
            "Jobs the next claim of this process's workers takes for each of them: it grows while runs are short and falls back to one after a long run",
            metrics.claim_size.clone(),
        );
        registry.register(
            "caseload_claims",
            "Claims this process's workers sent to the store, one at a time: a claim takes jobs for every worker it is for",
            metrics.claims.clone(),
        );
        registry.register(
            "caseload_executions_ended",
            "Executions ended on this process's workers, by status and error code",
            metrics.executions_ended.clone(),
        );
        registry.register(
            "caseload_execution_seconds",
            "Wall time of ended executions, by use case and status",
            metrics.execution_seconds.clone(),
        );
        registry.register(
            "caseload_job_wait_seconds",
            "Time from a job's acceptance to the start of its execution, by use case",
            metrics.job_wait_seconds.clone(),
        );
        registry.register(
            "caseload_http_request_seconds",
            "Time to answer HTTP requests, by route, method and status",
            metrics.http_request_seconds.clone(),
        );
        registry.register(
            "caseload_logins_failed",
            "Logins refused for a wrong user name or password, or a disabled user",
            metrics.logins_failed.clone(),
        );
        registry.register(
            "caseload_logins_throttled",
            "Logins answered 429 before any check: too many failures from the address",
            metrics.logins_throttled.clone(),
        );
        registry.register(
            "caseload_plugins_loaded",
            "Use cases in service",
            metrics.plugins_loaded.clone(),
        );
        registry.register(
            "caseload_waiters",
            "Held long-polls and event streams, on one job or on all of a user's jobs",
            metrics.waiters.clone(),
        );
        registry.register(
            "caseload_workers",
            "Worker threads of this process (--workers)",
            metrics.workers.clone(),
        );
        registry.register(
            "caseload_workers_busy",
            "Worker threads of this process running an execution now: their share of caseload_workers is the workers' utilisation",
            metrics.workers_busy.clone(),
        );
        registry.register(
            "caseload_job_failures",
            "Executions on this process's workers that ended without an output (failed, timed out), by use case and reason (the error code)",
            metrics.job_failures.clone(),
        );
        registry.register(
            "caseload_database_connections",
            "Connections open to the database, per pool of this process",
            metrics.database_connections.clone(),
        );
        registry.register(
            "caseload_database_connections_idle",
            "Connections open to the database and not in use, per pool of this process",
            metrics.database_connections_idle.clone(),
        );
        registry.register(
            "caseload_build",
            "The version of caseload this process runs",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION").to_owned())]),
        );
        registry.register_collector(Box::new(ProcessCollector));
        Metrics {
            registry,
            ..metrics
        }
    }
}

impl Metrics {
    pub fn job_accepted(&self, problem: &str) {
        self.jobs_accepted
            .get_or_create(&vec![("problem", problem.to_owned())])
            .inc();
        self.accepted_total.fetch_add(1, Ordering::Relaxed);
    }

    pub fn login_failed(&self) {
        self.logins_failed.inc();
    }

    pub fn login_throttled(&self) {
        self.logins_throttled.inc();
    }

    /// An execution starts, `waited` after its job was accepted.
    pub fn execution_started(&self, problem: &str, waited: Duration) {
        self.executions_running.inc();
        self.job_wait_seconds
            .get_or_create(&vec![("problem", problem.to_owned())])
            .observe(waited.as_secs_f64());
    }

    /// The workers' next claim takes `size` jobs for each of them.
    pub fn claim_size_set(&self, size: u32) {
        self.claim_size.set(i64::from(size));
    }

    /// The workers sent a claim.
    pub fn claim_sent(&self) {
        self.claims.inc();
    }

    /// This process runs `count` worker threads.
    pub fn workers_started(&self, count: usize) {
        self.workers.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    pub fn execution_ended(&self, outcome: ExecutionOutcome<'_>) {
        self.executions_running.dec();
        if !matches!(outcome.status, "COMPLETED" | "CANCELLED") {
            let reason = outcome
                .error_code
                .map_or_else(|| outcome.status.to_lowercase(), str::to_owned);
            self.job_failures
                .get_or_create(&vec![
                    ("problem", outcome.problem.to_owned()),
                    ("reason", reason),
                ])
                .inc();
        }
        self.ended_total.fetch_add(1, Ordering::Relaxed);
        self.executions_ended
            .get_or_create(&vec![
                ("status", outcome.status.to_owned()),
                ("error_code", outcome.error_code.unwrap_or("").to_owned()),
            ])
            .inc();
        self.execution_seconds
            .get_or_create(&vec![
                ("problem", outcome.problem.to_owned()),
                ("status", outcome.status.to_owned()),
            ])
            .observe(outcome.took.as_secs_f64());
    }

    /// An HTTP request answered; `route` is its path pattern (`/job/{job_id}`), not its path.
    pub fn request_answered(&self, route: &str, method: &str, status: u16, took: Duration) {
        self.http_request_seconds
            .get_or_create(&vec![
                ("route", route.to_owned()),
                ("method", method.to_owned()),
                ("status", status.to_string()),
            ])
            .observe(took.as_secs_f64());
    }

    /// The counts this process's replica report carries.
    pub fn totals(&self) -> Totals {
        Totals {
            accepted: self.accepted_total.load(Ordering::Relaxed),
            ended: self.ended_total.load(Ordering::Relaxed),
            running: self.executions_running.get().max(0) as u32,
        }
    }

    /// The text of `GET /metrics`, with the gauges only the caller can read: the queue
    /// per use case (pending, running), the use cases loaded, and the held long-polls and
    /// event streams (on one job, on one user's jobs).
    pub fn render(
        &self,
        queue: &[QueueDepth],
        pools_of: &dyn Fn(&str) -> Vec<String>,
        plugins_loaded: usize,
        waiters: (usize, usize),
        connection_pools: &[ConnectionPool],
    ) -> String {
        self.workers_busy.set(self.executions_running.get().max(0));
        for pool in connection_pools {
            let labels = vec![("pool", pool.name.to_owned())];
            self.database_connections
                .get_or_create(&labels)
                .set(i64::from(pool.size));
            self.database_connections_idle
                .get_or_create(&labels)
                .set(i64::from(pool.idle));
        }
        self.jobs_pending
            .set(queue.iter().map(|depth| depth.pending as i64).sum());
        self.queue_depth.clear();
        for depth in queue {
            for (state, count) in [("pending", depth.pending), ("running", depth.running)] {
                self.queue_depth
                    .get_or_create(&vec![
                        ("problem", depth.problem.clone()),
                        ("state", state.to_owned()),
                    ])
                    .set(count as i64);
            }
        }
        self.pool_pending.clear();
        for depth in queue {
            for pool in pools_of(&depth.problem) {
                self.pool_pending
                    .get_or_create(&vec![("pool", pool), ("problem", depth.problem.clone())])
                    .set(depth.pending as i64);
            }
        }
        self.plugins_loaded.set(plugins_loaded as i64);
        for (kind, count) in [("job", waiters.0), ("user", waiters.1)] {
            self.waiters
                .get_or_create(&vec![("kind", kind.to_owned())])
                .set(count as i64);
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_has_every_family_with_its_samples() {
        let metrics = Metrics::default();
        metrics.job_accepted("maxcut");
        metrics.execution_started("maxcut", Duration::from_millis(3));
        metrics.execution_ended(ExecutionOutcome {
            problem: "maxcut",
            status: "COMPLETED",
            error_code: None,
            took: Duration::from_millis(40),
        });
        metrics.request_answered("/job/{job_id}", "GET", 200, Duration::from_micros(900));
        let queue = [QueueDepth {
            problem: "qubo".into(),
            pending: 4,
            running: 1,
        }];
        metrics.workers_started(4);
        metrics.execution_started("qubo", Duration::from_millis(1));
        metrics.execution_ended(ExecutionOutcome {
            problem: "qubo",
            status: "FAILED",
            error_code: Some("out_of_memory"),
            took: Duration::from_millis(5),
        });
        let pools = [ConnectionPool {
            name: "readers",
            size: 3,
            idle: 2,
        }];
        let text = metrics.render(&queue, &|_| vec!["bigmem".to_owned()], 2, (3, 0), &pools);
        for line in [
            "caseload_jobs_accepted_total{problem=\"maxcut\"} 1",
            "caseload_executions_ended_total{status=\"COMPLETED\",error_code=\"\"} 1",
            "caseload_execution_seconds_count{problem=\"maxcut\",status=\"COMPLETED\"} 1",
            "caseload_job_wait_seconds_bucket{le=\"0.004\",problem=\"maxcut\"} 1",
            "caseload_http_request_seconds_count{route=\"/job/{job_id}\",method=\"GET\",status=\"200\"} 1",
            "caseload_queue_depth{problem=\"qubo\",state=\"pending\"} 4",
            "caseload_pool_pending{pool=\"bigmem\",problem=\"qubo\"} 4",
            "caseload_jobs_pending 4",
            "caseload_plugins_loaded 2",
            "caseload_waiters{kind=\"job\"} 3",
            "caseload_executions_running 0",
            "caseload_workers 4",
            "caseload_workers_busy 0",
            "caseload_job_failures_total{problem=\"qubo\",reason=\"out_of_memory\"} 1",
            "caseload_database_connections{pool=\"readers\"} 3",
            "caseload_database_connections_idle{pool=\"readers\"} 2",
            "caseload_build_info{version=\"0.1.0\"} 1",
        ] {
            assert!(
                text.lines().any(|sample| sample == line),
                "{line} in\n{text}"
            );
        }
        for family in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_open_fds",
        ] {
            assert!(
                text.lines()
                    .any(|sample| sample.starts_with(&format!("{family} "))),
                "{family} in\n{text}"
            );
        }
        // Each HELP is one sentence, with one full stop (the library adds it).
        for help in text.lines().filter(|line| line.starts_with("# HELP ")) {
            assert!(help.ends_with('.') && !help.ends_with(".."), "{help}");
        }
        assert_eq!(
            metrics.totals(),
            Totals {
                accepted: 1,
                ended: 2,
                running: 0
            }
        );
    }
}
