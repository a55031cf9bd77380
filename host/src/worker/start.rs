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
    start: ExecutionStart,
    began: Instant,
    state: Mutex<State>,
}

enum State {
    Waiting,
    Queued(QueuedWrite),
    Taken,
}

/// What became of the start when the attempt ended.
pub(crate) enum Started {
    /// Never written: it goes with the end.
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
            start,
            began: Instant::now(),
            state: Mutex::new(State::Waiting),
        }
    }

    /// Whether the start may wait longer: not queued, and within [`START_DELAY`].
    pub(crate) fn may_wait(&self) -> bool {
        matches!(*self.state(), State::Waiting) && self.began.elapsed() < START_DELAY
    }

    /// Queues the start, unless it was queued or taken already; whether the run may still
    /// write about this execution (false once its end was queued). Whatever it writes is
    /// queued after the start, so it finds the execution there.
    pub(crate) fn queue(&self) -> bool {
        let mut state = self.state();
        match *state {
            State::Waiting => {
                *state = State::Queued(self.store.start_execution(&self.lease, &self.start));
                true
            }
            State::Queued(_) => true,
            State::Taken => false,
        }
    }

    /// The start as the attempt ends: unwritten if it was never queued, and never queued
    /// from now on.
    pub(crate) fn take(&self) -> Started {
        let mut state = self.state();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Waiting => Started::Unwritten(self.start.clone()),
            State::Queued(queued) => Started::Queued(queued),
            State::Taken => Started::Taken,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
