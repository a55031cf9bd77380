//! A running execution's progress and log, written to the store as the plugin reports them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::runtime::{BoundedLog, ExecutionObserver};
use crate::store::{JobStore, Lease, LiveUpdate, Progress};

/// At most one progress write per execution in this interval.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// Stores a running execution's progress and log as the plugin reports them, at most once per
/// [`PROGRESS_INTERVAL`], without blocking the guest: the write happens on the async runtime.
/// What arrives in between is kept and goes with the next write (or the end).
pub(crate) struct ProgressWriter {
    store: Arc<dyn JobStore>,
    runtime: tokio::runtime::Handle,
    lease: Lease,
    execution_id: String,
    live: Mutex<Live>,
    /// Set when the job is asked to finish now.
    finish: Arc<AtomicBool>,
}

impl ProgressWriter {
    pub(crate) fn new(
        store: Arc<dyn JobStore>,
        runtime: tokio::runtime::Handle,
        lease: Lease,
        execution_id: String,
        finish: Arc<AtomicBool>,
    ) -> ProgressWriter {
        ProgressWriter {
            store,
            runtime,
            lease,
            execution_id,
            live: Mutex::new(Live::default()),
            finish,
        }
    }
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

    fn finishing(&self) -> bool {
        self.finish.load(Ordering::Relaxed)
    }
}
