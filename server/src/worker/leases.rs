//! The leases this process's workers hold: renewed together by the heartbeat, and each
//! with the interrupt flag that stops its execution when the lease is lost or the job is
//! cancelled.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::store::Lease;

/// The leases this process's workers hold, each with its execution's interrupt flag: the
/// heartbeat renews them all in one write, and stops the executions whose lease was lost.
/// Keyed by job and token: a job reaped from this process and claimed by it again is two
/// leases, and ending the old one must not drop the new one.
#[derive(Debug, Default)]
pub(crate) struct HeldLeases(Mutex<HashMap<LeaseKey, Held>>);

/// A held lease, and the flags that stop its execution.
#[derive(Debug)]
struct Held {
    lease: Lease,
    /// Stops the execution now (lease lost, cancel).
    interrupt: Arc<AtomicBool>,
    /// Asks the execution to return what it has (finish now).
    finish: Arc<AtomicBool>,
}

/// A job id and a lease token.
type LeaseKey = (String, i64);

impl HeldLeases {
    pub(crate) fn hold(&self, lease: &Lease) -> Arc<AtomicBool> {
        let interrupt = Arc::new(AtomicBool::new(false));
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                (lease.job_id.clone(), lease.token),
                Held {
                    lease: lease.clone(),
                    interrupt: interrupt.clone(),
                    finish: Arc::default(),
                },
            );
        interrupt
    }

    /// The flag that asks the execution under this lease to return what it has.
    pub(crate) fn finish_flag(&self, lease: &Lease) -> Arc<AtomicBool> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(lease.job_id.clone(), lease.token))
            .map(|held| held.finish.clone())
            .unwrap_or_default()
    }

    /// Asks every held lease's execution of the job to return what it has; true if there
    /// was one.
    pub(crate) fn finish_job(&self, job_id: &str) -> bool {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = false;
        for held in held.values().filter(|held| held.lease.job_id == job_id) {
            held.finish.store(true, Ordering::SeqCst);
            found = true;
        }
        found
    }

    pub(crate) fn release(&self, lease: &Lease) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(lease.job_id.clone(), lease.token));
    }

    pub(crate) fn leases(&self) -> Vec<Lease> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|held| held.lease.clone())
            .collect()
    }

    /// Interrupts every held lease of the job; true if there was one.
    pub(crate) fn interrupt_job(&self, job_id: &str) -> bool {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = false;
        for held in held.values().filter(|held| held.lease.job_id == job_id) {
            held.interrupt.store(true, Ordering::SeqCst);
            found = true;
        }
        found
    }

    /// Interrupts the executions of these leases that are still held (all of them, without a
    /// list), and returns the job ids interrupted.
    pub(crate) fn interrupt(&self, leases: Option<&[Lease]>) -> Vec<String> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut interrupted = Vec::new();
        for held in held.values() {
            if leases.is_none_or(|leases| leases.contains(&held.lease)) {
                held.interrupt.store(true, Ordering::SeqCst);
                interrupted.push(held.lease.job_id.clone());
            }
        }
        interrupted
    }
}
