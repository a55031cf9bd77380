//! Counters for `GET /metrics`, in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// What the server counts; shared by the handlers and the workers.
#[derive(Debug, Default)]
pub struct Metrics {
    jobs_accepted: AtomicU64,
    executions_running: AtomicI64,
    /// Ended executions by (status, error code or "").
    executions_ended: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    execution_micros_sum: AtomicU64,
    logins_failed: AtomicU64,
    logins_throttled: AtomicU64,
}

/// Jobs accepted and executions ended since start, and executions running now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub accepted: u64,
    pub ended: u64,
    pub running: u32,
}

impl Metrics {
    pub fn job_accepted(&self) {
        self.jobs_accepted.fetch_add(1, Ordering::Relaxed);
    }

    pub fn login_failed(&self) {
        self.logins_failed.fetch_add(1, Ordering::Relaxed);
    }

    pub fn login_throttled(&self) {
        self.logins_throttled.fetch_add(1, Ordering::Relaxed);
    }

    pub fn execution_started(&self) {
        self.executions_running.fetch_add(1, Ordering::Relaxed);
    }

    pub fn execution_ended(
        &self,
        status: &'static str,
        error_code: Option<&'static str>,
        took: Duration,
    ) {
        self.executions_running.fetch_sub(1, Ordering::Relaxed);
        self.execution_micros_sum
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        let mut ended = self
            .executions_ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *ended.entry((status, error_code.unwrap_or(""))).or_default() += 1;
    }

    /// The counts this process's replica report carries.
    pub fn totals(&self) -> Totals {
        let ended = self
            .executions_ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .sum();
        Totals {
            accepted: self.jobs_accepted.load(Ordering::Relaxed),
            ended,
            running: self.executions_running.load(Ordering::Relaxed).max(0) as u32,
        }
    }

    /// The exposition, with the gauges only the caller can read.
    /// The text of `GET /metrics`; `waiters` is the held long-polls and event streams, on one
    /// job and on one user's jobs.
    pub fn render(
        &self,
        jobs_pending: u64,
        plugins_loaded: usize,
        waiters: (usize, usize),
    ) -> String {
        let mut text = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, String)]| {
            let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(text, "{name}{labels} {value}");
            }
        };
        metric(
            "caseload_jobs_accepted_total",
            "counter",
            "Jobs accepted (202) by this process.",
            &[(
                String::new(),
                self.jobs_accepted.load(Ordering::Relaxed).to_string(),
            )],
        );
        metric(
            "caseload_jobs_pending",
            "gauge",
            "Jobs waiting for a worker, in the whole store.",
            &[(String::new(), jobs_pending.to_string())],
        );
        metric(
            "caseload_executions_running",
            "gauge",
            "Executions running on this process's workers.",
            &[(
                String::new(),
                self.executions_running.load(Ordering::Relaxed).to_string(),
            )],
        );
        let ended = self
            .executions_ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|((status, code), count)| {
                (
                    format!("{{status=\"{status}\",error_code=\"{code}\"}}"),
                    count.to_string(),
                )
            })
            .collect::<Vec<_>>();
        let total: u64 = ended
            .iter()
            .filter_map(|(_, count)| count.parse::<u64>().ok())
            .sum();
        metric(
            "caseload_executions_ended_total",
            "counter",
            "Executions ended on this process's workers, by status and error code.",
            &ended,
        );
        metric(
            "caseload_execution_seconds",
            "summary",
            "Wall time of ended executions.",
            &[
                (
                    "_sum".to_owned(),
                    format!(
                        "{:.6}",
                        self.execution_micros_sum.load(Ordering::Relaxed) as f64 / 1e6
                    ),
                ),
                ("_count".to_owned(), total.to_string()),
            ],
        );
        metric(
            "caseload_logins_failed_total",
            "counter",
            "Logins refused for a wrong user name or password, or a disabled user.",
            &[(
                String::new(),
                self.logins_failed.load(Ordering::Relaxed).to_string(),
            )],
        );
        metric(
            "caseload_logins_throttled_total",
            "counter",
            "Logins answered 429 before any check: too many failures from the address.",
            &[(
                String::new(),
                self.logins_throttled.load(Ordering::Relaxed).to_string(),
            )],
        );
        metric(
            "caseload_plugins_loaded",
            "gauge",
            "Use cases in service.",
            &[(String::new(), plugins_loaded.to_string())],
        );
        metric(
            "caseload_waiters",
            "gauge",
            "Held long-polls and event streams, on one job or on all of a user's jobs.",
            &[
                ("{kind=\"job\"}".to_owned(), waiters.0.to_string()),
                ("{kind=\"user\"}".to_owned(), waiters.1.to_string()),
            ],
        );
        text
    }
}
