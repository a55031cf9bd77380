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
pub(crate) struct HeldLeases(Mutex<HashMap<LeaseKey, (Lease, Arc<AtomicBool>)>>);

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
                (lease.clone(), interrupt.clone()),
            );
        interrupt
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
            .map(|(lease, _)| lease.clone())
            .collect()
    }

    /// Interrupts every held lease of the job; true if there was one.
    pub(crate) fn interrupt_job(&self, job_id: &str) -> bool {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = false;
        for (lease, interrupt) in held.values() {
            if lease.job_id == job_id {
                interrupt.store(true, Ordering::SeqCst);
                found = true;
            }
        }
        found
    }

    /// Interrupts the executions of these leases that are still held (all of them, without a
    /// list), and returns the job ids interrupted.
    pub(crate) fn interrupt(&self, leases: Option<&[Lease]>) -> Vec<String> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut interrupted = Vec::new();
        for (lease, interrupt) in held.values() {
            if leases.is_none_or(|leases| leases.contains(lease)) {
                interrupt.store(true, Ordering::SeqCst);
                interrupted.push(lease.job_id.clone());
            }
        }
        interrupted
    }
}
