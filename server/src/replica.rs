//! This process as one replica of the service: every few seconds it writes its workers and
//! counters to the store, where `GET /service` on any replica reads them, and at a clean
//! stop it writes a last report that says it stopped.

use std::sync::Arc;
use std::time::Duration;

use crate::metrics::Metrics;
use crate::store::{JobStore, Millis, ReplicaReport, StoreError, now_millis};

/// How often a replica reports.
const REPORT_INTERVAL: Duration = Duration::from_secs(5);

/// A replica silent this long stopped; its row goes.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

/// How long the last report may take before the process exits without it: the others then
/// count this replica live until its reports are old.
const LAST_REPORT_PATIENCE: Duration = Duration::from_secs(5);

/// This process's reports: what they say of it, and the task that sends them.
pub struct Replica {
    reporter: Arc<Reporter>,
    reports: tokio::task::JoinHandle<()>,
}

/// What a report is made of, and the store it goes to.
struct Reporter {
    id: String,
    name: String,
    store: Arc<dyn JobStore>,
    metrics: Arc<Metrics>,
    workers: u32,
    pool: String,
    started_at: Millis,
}

impl Replica {
    /// Starts the reports on the current tokio runtime; the first goes at once.
    pub fn start(
        id: String,
        store: Arc<dyn JobStore>,
        metrics: Arc<Metrics>,
        workers: usize,
        pool: String,
    ) -> Replica {
        let reporter = Arc::new(Reporter {
            id,
            name: format!("{} pid {}", host_name(), std::process::id()),
            store,
            metrics,
            workers: u32::try_from(workers).unwrap_or(u32::MAX),
            pool,
            started_at: now_millis(),
        });
        let reports = tokio::spawn({
            let reporter = reporter.clone();
            async move {
                let mut ticks = tokio::time::interval(REPORT_INTERVAL);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticks.tick().await;
                    if let Err(error) = reporter.send(reporter.now()).await {
                        tracing::warn!(%error, "cannot report this replica's workers");
                    }
                }
            }
        });
        Replica { reporter, reports }
    }

    /// Ends the reports with the last, once the workers have stopped: its counts are final,
    /// and it says the replica stopped, so that `GET /service` shows it stopped and the
    /// other replicas stop counting it at once rather than once its reports are old.
    pub async fn report_stopped(self) {
        // A report cut off here may still reach the store after the last one; the store
        // keeps a stopped replica stopped.
        self.reports.abort();
        let _ = self.reports.await;
        let mut last = self.reporter.now();
        last.stopped_at = Some(last.seen_at);
        let last = self.reporter.send(last);
        match tokio::time::timeout(LAST_REPORT_PATIENCE, last).await {
            Ok(Ok(())) => tracing::info!("reported this replica stopped"),
            Ok(Err(error)) => tracing::warn!(%error, "cannot report this replica stopped"),
            Err(_) => tracing::warn!(
                patience = ?LAST_REPORT_PATIENCE,
                "the store did not take this replica's last report in time"
            ),
        }
    }
}

impl Reporter {
    /// This replica as it is now.
    fn now(&self) -> ReplicaReport {
        let totals = self.metrics.totals();
        ReplicaReport {
            id: self.id.clone(),
            name: self.name.clone(),
            workers: self.workers,
            busy: totals.running,
            accepted: totals.accepted,
            ended: totals.ended,
            started_at: self.started_at,
            seen_at: now_millis(),
            pool: self.pool.clone(),
            stopped_at: None,
        }
    }

    /// Writes `report`, and forgets replicas silent for long.
    async fn send(&self, report: ReplicaReport) -> Result<(), StoreError> {
        let forget_before = report.seen_at - FORGET_AFTER.as_millis() as Millis;
        self.store.report_replica(&report, forget_before).await
    }
}

/// The machine's name, as the kernel knows it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}
