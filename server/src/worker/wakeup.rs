//! Wake-ups for idle workers: a generation counter under a condition variable, so a
//! notification that arrives between a worker's empty claim and its wait is never lost.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

#[derive(Debug, Default)]
pub(crate) struct Wakeup {
    generation: Mutex<u64>,
    condvar: Condvar,
}

impl Wakeup {
    /// Wakes one idle worker.
    pub(crate) fn notify_one(&self) {
        *self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += 1;
        self.condvar.notify_one();
    }

    /// Wakes every idle worker.
    pub(crate) fn notify_all(&self) {
        *self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += 1;
        self.condvar.notify_all();
    }

    /// The count of notifications so far; a worker reads it before it looks for work.
    pub(crate) fn generation(&self) -> u64 {
        *self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until a notification newer than `seen`, or the timeout.
    pub(crate) fn wait(&self, seen: u64, timeout: Duration) {
        let guard = self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .condvar
            .wait_timeout_while(guard, timeout, |generation| *generation == seen);
    }
}
