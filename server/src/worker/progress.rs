//! A running execution's progress, log and incumbents, written to the store as the plugin
//! reports them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::start::{DeferredStart, START_DELAY};
use crate::runtime::{BoundedLog, ExecutionObserver};
use crate::store::{JobStore, Lease, LiveUpdate, NewIncumbent, Progress, now_millis};

/// At most one progress write per execution in this interval.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// At most this many incumbents wait for the next write; older ones are dropped (the store
/// keeps no more than this of an execution anyway).
const PENDING_INCUMBENTS: usize = 20;

/// Stores a running execution's progress, log and incumbents as the plugin reports them, at
/// most once per [`PROGRESS_INTERVAL`], without blocking the guest: the write is queued for
/// the group commit and awaited on the async runtime. What arrives in between is kept and
/// goes with the next write; incumbents still waiting when the run returns go with
/// [`ProgressWriter::flush`], queued before the execution's end. Nothing is written while
/// the execution's start may still wait ([`DeferredStart`]): a run that ends within
/// [`START_DELAY`] writes its log with its end, and one that goes on writes what it reported
/// so far then, after its start.
pub(crate) struct ProgressWriter {
    store: Arc<dyn JobStore>,
    runtime: tokio::runtime::Handle,
    lease: Lease,
    execution_id: String,
    live: Mutex<Live>,
    /// Set when the job is asked to finish now.
    finish: Arc<AtomicBool>,
    start: Arc<DeferredStart>,
}

impl ProgressWriter {
    pub(crate) fn new(
        store: Arc<dyn JobStore>,
        runtime: tokio::runtime::Handle,
        lease: Lease,
        execution_id: String,
        finish: Arc<AtomicBool>,
        start: Arc<DeferredStart>,
    ) -> ProgressWriter {
        ProgressWriter {
            store,
            runtime,
            lease,
            execution_id,
            live: Mutex::new(Live::default()),
            finish,
            start,
        }
    }

    /// Writes the start, and what the run reported meanwhile, once [`START_DELAY`] has
    /// passed, unless the run ended first.
    pub(crate) fn start_when_due(self: &Arc<Self>) {
        let writer = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(START_DELAY).await;
            if let Some(writer) = writer.upgrade()
                && writer.start.queue()
            {
                writer.update(None, None);
            }
        });
    }
}

#[derive(Default)]
struct Live {
    last_write: Option<Instant>,
    /// Progress reported since the last write.
    progress: Option<Progress>,
    /// [`BoundedLog::written`] at the last write.
    log_written: u64,
    /// Incumbents reported since the last write.
    incumbents: VecDeque<NewIncumbent>,
    /// The number of the last incumbent reported.
    incumbent_seq: u32,
    /// The log, if it grew while the start waited.
    log: Option<BoundedLog>,
}

impl ProgressWriter {
    fn update(&self, progress: Option<Progress>, log: Option<&BoundedLog>) {
        let update = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if progress.is_some() {
                live.progress = progress;
            }
            if self.start.may_wait() {
                if let Some(log) = log {
                    live.log = Some(log.clone());
                }
                return;
            }
            let now = Instant::now();
            if live
                .last_write
                .is_some_and(|last| now - last < PROGRESS_INTERVAL)
            {
                return;
            }
            let held = live.log.take();
            let log = log.or(held.as_ref());
            live.last_write = Some(now);
            let log = log.and_then(|log| {
                let written = log.written();
                (written != live.log_written).then(|| {
                    live.log_written = written;
                    let tail = log.tail();
                    (tail.text, tail.truncated)
                })
            });
            LiveUpdate {
                progress: live.progress.take(),
                log,
                incumbents: live.incumbents.drain(..).collect(),
            }
        };
        self.write(&update);
    }

    fn write(&self, update: &LiveUpdate) {
        if update.progress.is_none() && update.log.is_none() && update.incumbents.is_empty() {
            return;
        }
        if !self.start.queue() {
            // The end is queued: nothing more is written about the run.
            return;
        }
        let queued = self
            .store
            .record_progress(&self.lease, &self.execution_id, update);
        self.runtime.spawn(async move {
            if let Err(error) = queued.lease_held().await {
                tracing::warn!(%error, "cannot record progress");
            }
        });
    }

    /// Queues the incumbents not written yet. Called once the run returned, before its end is
    /// queued, so that they are stored in order before it.
    pub(crate) fn flush(&self) {
        let incumbents: Vec<NewIncumbent> = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            live.incumbents.drain(..).collect()
        };
        self.write(&LiveUpdate {
            incumbents,
            ..LiveUpdate::default()
        });
    }
}

impl ExecutionObserver for ProgressWriter {
    fn progress(&self, fraction: f64, message: String, log: &BoundedLog) {
        let mut message = message;
        message.truncate(message.floor_char_boundary(1024));
        self.update(Some(Progress { fraction, message }), Some(log));
    }

    fn logged(&self, log: &BoundedLog) {
        self.update(None, Some(log));
    }

    fn finishing(&self) -> bool {
        self.finish.load(Ordering::Relaxed)
    }

    fn incumbent(&self, objective: f64, solution: String) {
        {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            live.incumbent_seq = live.incumbent_seq.saturating_add(1);
            let seq = live.incumbent_seq;
            if live.incumbents.len() == PENDING_INCUMBENTS {
                live.incumbents.pop_front();
            }
            live.incumbents.push_back(NewIncumbent {
                seq,
                found_at: now_millis(),
                objective,
                solution,
            });
        }
        self.update(None, None);
    }
}
