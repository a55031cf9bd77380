//! This process as one replica of the service: every few seconds it writes its workers and
//! counters to the store, where `GET /service` on any replica reads them.

use std::sync::Arc;
use std::time::Duration;

use crate::metrics::Metrics;
use crate::store::{JobStore, Millis, ReplicaReport, now_millis};

/// How often a replica reports.
const REPORT_INTERVAL: Duration = Duration::from_secs(5);

/// A replica silent this long stopped; its row goes.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

/// Starts the reports on the current tokio runtime.
pub fn start(
    id: String,
    store: Arc<dyn JobStore>,
    metrics: Arc<Metrics>,
    workers: usize,
    pool: String,
) {
    let name = format!("{} pid {}", host_name(), std::process::id());
    let started_at = now_millis();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(REPORT_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let totals = metrics.totals();
            let report = ReplicaReport {
                id: id.clone(),
                name: name.clone(),
                workers: u32::try_from(workers).unwrap_or(u32::MAX),
                busy: totals.running,
                accepted: totals.accepted,
                ended: totals.ended,
                started_at,
                seen_at: now_millis(),
                pool: pool.clone(),
            };
            let forget_before = report.seen_at - FORGET_AFTER.as_millis() as Millis;
            if let Err(error) = store.report_replica(&report, forget_before).await {
                tracing::warn!(%error, "cannot report this replica's workers");
            }
        }
    });
}

/// The machine's name, as the kernel knows it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}
