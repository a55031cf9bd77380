//! The jobs this process holds: those it claimed and has not started (any of its workers
//! takes the next one), the leases of its runs, and the wake-ups of its idle workers. The
//! API, the store's notifications and the upkeep tasks reach the workers only through it.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::leases::HeldLeases;
use super::wakeup::Wakeup;
use crate::store::{ClaimedJob, JobEvents, Lease};

/// A claimed job no worker has started.
#[derive(Debug)]
struct Unstarted {
    claim: ClaimedJob,
    interrupt: Arc<AtomicBool>,
    claimed_at: Instant,
}

#[derive(Debug, Default)]
pub struct LocalJobs {
    pub(crate) wakeup: Wakeup,
    pub(crate) held: HeldLeases,
    /// Jobs claimed but not started yet, oldest first.
    claimed: Mutex<VecDeque<Unstarted>>,
    /// Claimed jobs cancelled before they started, for the worker pool to end.
    cancelled_unstarted: Mutex<Vec<Lease>>,
    pub(crate) cancelled_wake: tokio::sync::Notify,
}

impl LocalJobs {
    /// A job was added: wakes one idle worker.
    pub fn job_added(&self) {
        self.wakeup.notify_one();
    }

    /// Jobs may be waiting (added by another process, or requeued): wakes every idle worker.
    pub fn jobs_added(&self) {
        self.wakeup.notify_all();
    }

    /// Stops this process's run of the job, if it holds one. A job claimed but waiting for a
    /// worker (behind a long run, say) leaves the queue and ends `CANCELLED` at once, instead
    /// of when a worker reaches it; a running one is interrupted. True if either happened.
    /// Asks this process's run of the job, if any, to return what it has now; true if one
    /// runs here.
    pub fn finish(&self, job_id: &str) -> bool {
        let found = self.held.finish_job(job_id);
        if found {
            tracing::info!(job = %job_id, "finish asked for; the run returns what it has");
        }
        found
    }

    pub fn cancel(&self, job_id: &str) -> bool {
        let unstarted = {
            let mut claimed = self.claimed.lock().unwrap_or_else(PoisonError::into_inner);
            claimed
                .iter()
                .position(|unstarted| unstarted.claim.lease.job_id == job_id)
                .and_then(|index| claimed.remove(index))
        };
        let was_queued = unstarted.is_some();
        if let Some(Unstarted { claim, .. }) = unstarted {
            tracing::info!(job = %job_id, "cancellation asked for; the job had not started");
            self.cancelled_unstarted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(claim.lease);
            self.cancelled_wake.notify_one();
        }
        // Every other lease this process holds on the job too: after a lost heartbeat and a
        // reap, it may hold a stale one and run or queue a newer one.
        let interrupted = self.held.interrupt_job(job_id);
        if interrupted && !was_queued {
            tracing::info!(job = %job_id, "cancellation asked for; interrupting the run");
        }
        was_queued || interrupted
    }

    /// Holds the leases of freshly claimed jobs (the heartbeat renews them from now on) and
    /// queues the jobs for this process's workers.
    pub(crate) fn queue_claimed(&self, claimed: Vec<ClaimedJob>) {
        let claimed_at = Instant::now();
        let mut queue = self.claimed.lock().unwrap_or_else(PoisonError::into_inner);
        for claim in claimed {
            let interrupt = self.held.hold(&claim.lease);
            queue.push_back(Unstarted {
                claim,
                interrupt,
                claimed_at,
            });
        }
    }

    /// The oldest claimed job no worker has started, with its interrupt flag.
    pub(crate) fn next_claimed(&self) -> Option<(ClaimedJob, Arc<AtomicBool>)> {
        self.claimed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .map(|unstarted| (unstarted.claim, unstarted.interrupt))
    }

    /// Takes out of the queue the claimed jobs that have waited longer than `bound` for a
    /// worker of this process: every one of them is busy (an idle one would have taken the
    /// job), so the job goes back to the queue for another replica, or this one's next free
    /// worker, instead of waiting behind a long run.
    pub(crate) fn take_waiting_longer_than(&self, bound: Duration) -> Vec<Lease> {
        let mut claimed = self.claimed.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = claimed
            .iter()
            .take_while(|unstarted| unstarted.claimed_at.elapsed() > bound)
            .count();
        claimed
            .drain(..waiting)
            .map(|unstarted| unstarted.claim.lease)
            .collect()
    }

    /// Empties the queue of claimed jobs: the server stops.
    pub(crate) fn drain_claimed(&self) -> Vec<Lease> {
        self.claimed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .map(|unstarted| unstarted.claim.lease)
            .collect()
    }

    /// The claimed jobs cancelled before they started, for whoever ends them now.
    pub(crate) fn take_cancelled_unstarted(&self) -> Vec<Lease> {
        std::mem::take(
            &mut *self
                .cancelled_unstarted
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

impl JobEvents for LocalJobs {
    fn jobs_pending(&self) {
        self.jobs_added();
    }

    fn cancel_requested(&self, job_id: &str) {
        self.cancel(job_id);
    }

    fn finish_requested(&self, job_id: &str) {
        self.finish(job_id);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    fn claimed(local: &LocalJobs, job_id: &str) -> Arc<AtomicBool> {
        let claim = ClaimedJob {
            lease: Lease {
                job_id: job_id.into(),
                owner_id: "owner".into(),
                project_id: "owner".into(),
                token: 1,
            },
            problem: "maxcut".into(),
            input: "{}".into(),
            options: "{}".into(),
            attempt: 1,
            created_at: 0,
            dataset: None,
            binding: None,
            race_of: None,
        };
        local.queue_claimed(vec![claim]);
        let queue = local.claimed.lock().expect("the queue");
        queue.back().expect("the job just queued").interrupt.clone()
    }

    #[test]
    fn a_cancelled_job_leaves_the_queue_of_claimed_jobs_at_once() {
        let local = LocalJobs::default();
        let first = claimed(&local, "first");
        let second = claimed(&local, "second");
        assert!(local.cancel("second"));
        // Its flag is set too, though no worker will see it: it is handed on to be ended.
        assert!(second.load(Ordering::SeqCst));
        let queue: Vec<String> = local
            .claimed
            .lock()
            .expect("the queue")
            .iter()
            .map(|unstarted| unstarted.claim.lease.job_id.clone())
            .collect();
        assert_eq!(queue, ["first"]);
        let handed_on = local.take_cancelled_unstarted();
        assert_eq!(handed_on.len(), 1);
        assert_eq!(handed_on[0].job_id, "second");
        // A job no worker of this process holds is not ours to cancel.
        assert!(!local.cancel("elsewhere"));
        assert!(!first.load(Ordering::SeqCst));
    }

    #[test]
    fn only_jobs_that_waited_past_the_bound_leave_the_queue() {
        let local = LocalJobs::default();
        claimed(&local, "early");
        std::thread::sleep(Duration::from_millis(300));
        claimed(&local, "late");
        let taken = local.take_waiting_longer_than(Duration::from_millis(150));
        let taken: Vec<&str> = taken.iter().map(|lease| lease.job_id.as_str()).collect();
        assert_eq!(taken, ["early"]);
        let (next, _) = local.next_claimed().expect("the late job stays");
        assert_eq!(next.lease.job_id, "late");
        assert!(local.take_waiting_longer_than(Duration::ZERO).is_empty());
    }
}
