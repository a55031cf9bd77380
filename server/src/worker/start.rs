//! An attempt's start, written late: once the run has gone on for [`START_DELAY`], before
//! anything the run reported (progress, a log, incumbents; held until then); or, for a run
//! that ends sooner, with its end, in one write (after its last incumbents, if it reported
//! any).
//!
//! A tiny job's attempt is then one write where it would be three (its start, its first
//! progress, its end). A claimed job reads `PENDING` until its start is stored, about
//! [`START_DELAY`] into its run; one that ends sooner goes from `PENDING` to its end.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::store::{ExecutionStart, JobStore, Lease, QueuedWrite};

/// How long an attempt's start may wait to be written: the runs that end within it write
/// their start with their end. Short beside a lease and beside what a client polling a job
/// notices; long beside a tiny job's run (well under a millisecond in the sandbox).
pub(crate) const START_DELAY: Duration = Duration::from_millis(20);

/// An attempt's start, until it is queued for the group commit or goes with the end.
pub(crate) struct DeferredStart {
    store: Arc<dyn JobStore>,
    lease: Lease,
    began: Instant,
    state: Mutex<Started>,
}

/// Where an attempt's start is: waiting to be written (or, once the attempt ended, going with
/// its end), queued on its own, or neither any more.
pub(crate) enum Started {
    /// Not written yet: after the end, it goes with the end.
    Unwritten(ExecutionStart),
    /// Queued, to be confirmed with the end.
    Queued(QueuedWrite),
    /// Nothing to write or confirm: taken before, or confirmed already.
    Taken,
}

impl DeferredStart {
    pub(crate) fn new(
        store: Arc<dyn JobStore>,
        lease: Lease,
        start: ExecutionStart,
    ) -> DeferredStart {
        DeferredStart {
            store,
            lease,
            began: Instant::now(),
            state: Mutex::new(Started::Unwritten(start)),
        }
    }

    /// Whether the start may wait longer: not queued, and within [`START_DELAY`].
    pub(crate) fn may_wait(&self) -> bool {
        matches!(*self.state(), Started::Unwritten(_)) && self.began.elapsed() < START_DELAY
    }

    /// Queues the start, unless it was queued or taken already; whether the run may still
    /// write about this execution (false once its end was queued). Whatever it writes is
    /// queued after the start, so it finds the execution there.
    pub(crate) fn queue(&self) -> bool {
        let mut state = self.state();
        let queued = match &*state {
            Started::Unwritten(start) => self.store.start_execution(&self.lease, start),
            Started::Queued(_) => return true,
            Started::Taken => return false,
        };
        *state = Started::Queued(queued);
        true
    }

    /// The start as the attempt ends: unwritten if it was never queued, and never queued
    /// from now on.
    pub(crate) fn take(&self) -> Started {
        std::mem::replace(&mut *self.state(), Started::Taken)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Started> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
