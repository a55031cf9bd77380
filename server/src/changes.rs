//! Who waits for which job, or for every job of a user or a project. Long-polls and event
//! streams subscribe here; the store's change
//! notices (this process's writes, and through PostgreSQL every replica's) wake them. A
//! waiter costs a map entry and a channel receiver, and reads the database only when woken.
//! Every batch of changes gets a sequence number, which a woken waiter hands to
//! [`SharedReads`] so that one read serves every waiter woken
//! by the same change.

mod shared_reads;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{broadcast, watch};

pub use self::shared_reads::{SharedJob, SharedReads};
use crate::store::{JobChange, JobEvents};

/// Changes one owner's stream may fall behind by before it is told it lagged (and must read
/// the owner's recent jobs from the store to catch up, a costly read). One buffer serves all
/// of an owner's streams, so a deep one costs little: about 40 bytes a change.
const OWNER_BACKLOG: usize = 16_384;

/// A changed job's id, and the sequence number of the batch of changes it was in.
type ChangedJob = (Arc<str>, u64);

/// Whose jobs a subscription hears of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The jobs a user launched, in whichever project.
    User(String),
    /// Every job in a project (a user's id for its personal one), whoever launched it.
    Project(String),
}

type OwnerSenders = Mutex<HashMap<String, broadcast::Sender<ChangedJob>>>;

/// The subscriptions, by job and by owner.
#[derive(Debug)]
pub struct JobChanges {
    /// Each job's watchers, told the sequence number of the job's latest change.
    jobs: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Each user's watchers, told each changed job and its change's sequence number.
    users: OwnerSenders,
    /// Each project's watchers, told as a user's are.
    projects: OwnerSenders,
    /// The sequence number of the latest batch of changes published.
    sequence: AtomicU64,
    /// Set when the server stops: every waiter wakes and lets its client go.
    stopping: watch::Sender<bool>,
    /// The reads the waiters of one change share.
    reads: SharedReads,
}

impl Default for JobChanges {
    fn default() -> JobChanges {
        JobChanges {
            jobs: Mutex::default(),
            users: Mutex::default(),
            projects: Mutex::default(),
            sequence: AtomicU64::new(0),
            stopping: watch::channel(false).0,
            reads: SharedReads::default(),
        }
    }
}

impl JobChanges {
    /// Wakes every waiter for good: long-polls answer what they have, streams end (their
    /// clients resume elsewhere from their last event), and the server can stop.
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// The reads the waiters woken by one change share.
    pub fn reads(&self) -> &SharedReads {
        &self.reads
    }

    /// Wakes on every change of `job_id` from now on.
    pub fn watch_job(self: &Arc<Self>, job_id: &str) -> JobWatch {
        let mut jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = jobs
            .entry(job_id.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        JobWatch {
            receiver,
            stopping: self.stopping.subscribe(),
            job_id: job_id.to_owned(),
            changes: self.clone(),
        }
    }

    /// Hears the id of every job of `owner` that changes from now on.
    pub fn watch_owner(self: &Arc<Self>, owner: &Owner) -> OwnerWatch {
        let (senders, id) = self.senders(owner);
        let mut senders = senders.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = senders
            .entry(id.to_owned())
            .or_insert_with(|| broadcast::channel(OWNER_BACKLOG).0)
            .subscribe();
        OwnerWatch {
            receiver,
            stopping: self.stopping.subscribe(),
            owner: owner.clone(),
            changes: self.clone(),
        }
    }

    /// The subscriptions of an owner's kind, and its id among them.
    fn senders<'a>(&self, owner: &'a Owner) -> (&OwnerSenders, &'a str) {
        match owner {
            Owner::User(id) => (&self.users, id),
            Owner::Project(id) => (&self.projects, id),
        }
    }

    /// How many waiters there are, by job and by owner (users and projects).
    pub fn waiters(&self) -> (usize, usize) {
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let owners: usize = [&self.users, &self.projects]
            .into_iter()
            .map(|senders| {
                let senders = senders.lock().unwrap_or_else(PoisonError::into_inner);
                senders
                    .values()
                    .map(broadcast::Sender::receiver_count)
                    .sum::<usize>()
            })
            .sum();
        (
            jobs.values().map(watch::Sender::receiver_count).sum(),
            owners,
        )
    }

    fn publish(&self, changes: &[JobChange]) {
        let sequence = self.sequence.fetch_add(1, Ordering::AcqRel) + 1;
        {
            let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
            if !jobs.is_empty() {
                for change in changes {
                    if let Some(sender) = jobs.get(&change.job_id) {
                        sender.send_replace(sequence);
                    }
                }
            }
        }
        tell(&self.users, changes, sequence, |change| &change.owner_id);
        tell(&self.projects, changes, sequence, |change| {
            &change.project_id
        });
    }
}

impl JobEvents for JobChanges {
    fn jobs_changed(&self, changes: &[JobChange]) {
        self.publish(changes);
    }
}

/// Tells each owner's subscribers of its jobs among `changes`; `owner_of` says whose a
/// change is.
fn tell(
    senders: &OwnerSenders,
    changes: &[JobChange],
    sequence: u64,
    owner_of: impl Fn(&JobChange) -> &String,
) {
    let senders = senders.lock().unwrap_or_else(PoisonError::into_inner);
    if senders.is_empty() {
        return;
    }
    for change in changes {
        if let Some(sender) = senders.get(owner_of(change)) {
            let _ = sender.send((Arc::from(change.job_id.as_str()), sequence));
        }
    }
}

/// Returns once the server is stopping.
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    while !*stopping.borrow_and_update() {
        if stopping.changed().await.is_err() {
            // The sender lives as long as the changes do; never reached.
            std::future::pending::<()>().await;
        }
    }
}

/// A subscription to one job's changes; it ends when dropped.
#[derive(Debug)]
pub struct JobWatch {
    /// The sequence number of the job's latest change.
    receiver: watch::Receiver<u64>,
    stopping: watch::Receiver<bool>,
    job_id: String,
    changes: Arc<JobChanges>,
}

impl JobWatch {
    /// Returns once the job changed after the last call (or after the subscription, for the
    /// first call), or the server is stopping.
    pub async fn changed(&mut self) {
        if self.stopping() {
            return;
        }
        tokio::select! {
            changed = self.receiver.changed() => {
                if changed.is_err() {
                    // The sender lives as long as a receiver does; never reached.
                    std::future::pending::<()>().await;
                }
            }
            () = stopped(&mut self.stopping) => {}
        }
    }

    /// Whether the server is stopping: the waiter should answer now.
    pub fn stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// The sequence number of the job's latest change heard (0 for none yet).
    pub fn sequence(&self) -> u64 {
        *self.receiver.borrow()
    }
}

impl Drop for JobWatch {
    fn drop(&mut self) {
        let mut jobs = self
            .changes
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // This receiver is still alive: the last one out counts 1.
        if jobs
            .get(&self.job_id)
            .is_some_and(|sender| sender.receiver_count() <= 1)
        {
            jobs.remove(&self.job_id);
        }
    }
}

/// A subscription to one owner's changes; it ends when dropped.
#[derive(Debug)]
pub struct OwnerWatch {
    receiver: broadcast::Receiver<ChangedJob>,
    stopping: watch::Receiver<bool>,
    owner: Owner,
    changes: Arc<JobChanges>,
}

/// What an owner's subscription heard.
#[derive(Debug, PartialEq, Eq)]
pub enum OwnerChange {
    /// This job changed, in the batch of changes with this sequence number.
    Job(Arc<str>, u64),
    /// Changes were missed (the subscriber fell more than [`OWNER_BACKLOG`] behind).
    Lagged,
    /// The server is stopping.
    Stopping,
}

impl OwnerWatch {
    pub async fn next(&mut self) -> OwnerChange {
        if *self.stopping.borrow() {
            return OwnerChange::Stopping;
        }
        tokio::select! {
            received = self.receiver.recv() => match received {
                Ok((job_id, sequence)) => OwnerChange::Job(job_id, sequence),
                Err(broadcast::error::RecvError::Lagged(_)) => OwnerChange::Lagged,
                // The sender lives as long as a receiver does; never reached.
                Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
            },
            () = stopped(&mut self.stopping) => OwnerChange::Stopping,
        }
    }
}

impl OwnerWatch {
    /// What was heard already, without waiting; `None` if nothing.
    pub fn try_next(&mut self) -> Option<OwnerChange> {
        if *self.stopping.borrow() {
            return Some(OwnerChange::Stopping);
        }
        match self.receiver.try_recv() {
            Ok((job_id, sequence)) => Some(OwnerChange::Job(job_id, sequence)),
            Err(broadcast::error::TryRecvError::Lagged(_)) => Some(OwnerChange::Lagged),
            Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed) => {
                None
            }
        }
    }
}

impl Drop for OwnerWatch {
    fn drop(&mut self) {
        let (senders, id) = self.changes.senders(&self.owner);
        let mut senders = senders.lock().unwrap_or_else(PoisonError::into_inner);
        if senders
            .get(id)
            .is_some_and(|sender| sender.receiver_count() <= 1)
        {
            senders.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(owner: &str, job: &str) -> JobChange {
        JobChange {
            owner_id: owner.into(),
            job_id: job.into(),
            project_id: owner.into(),
        }
    }

    fn alice() -> Owner {
        Owner::User("alice".into())
    }

    #[tokio::test]
    async fn a_change_wakes_the_job_s_and_the_owner_s_watchers_only() {
        let changes = Arc::new(JobChanges::default());
        let mut job = changes.watch_job("j1");
        let mut other_job = changes.watch_job("j2");
        let mut owner = changes.watch_owner(&alice());
        changes.jobs_changed(&[change("alice", "j1")]);
        tokio::time::timeout(std::time::Duration::from_secs(1), job.changed())
            .await
            .expect("woken");
        assert_eq!(owner.next().await, OwnerChange::Job(Arc::from("j1"), 1));
        assert_eq!(job.sequence(), 1);
        let quiet =
            tokio::time::timeout(std::time::Duration::from_millis(50), other_job.changed()).await;
        assert!(quiet.is_err(), "another job's watcher was woken");
    }

    #[tokio::test]
    async fn a_project_s_watchers_hear_its_jobs_whoever_launched_them() {
        let changes = Arc::new(JobChanges::default());
        let mut team = changes.watch_owner(&Owner::Project("team".into()));
        let mut bob = changes.watch_owner(&Owner::User("bob".into()));
        let mut teammate = change("alice", "j1");
        teammate.project_id = "team".into();
        changes.jobs_changed(&[change("alice", "j0"), teammate]);
        assert_eq!(team.next().await, OwnerChange::Job(Arc::from("j1"), 1));
        assert_eq!(team.try_next(), None, "a personal job reached the project");
        assert_eq!(bob.try_next(), None, "another user heard alice's jobs");
        drop(team);
        assert!(changes.projects.lock().expect("unpoisoned").is_empty());
    }

    #[tokio::test]
    async fn a_change_before_the_wait_is_not_missed() {
        let changes = Arc::new(JobChanges::default());
        let mut job = changes.watch_job("j1");
        changes.jobs_changed(&[change("alice", "j1")]);
        tokio::time::timeout(std::time::Duration::from_secs(1), job.changed())
            .await
            .expect("the change made before the wait is seen");
    }

    #[tokio::test]
    async fn stopping_wakes_every_waiter() {
        let changes = Arc::new(JobChanges::default());
        let mut job = changes.watch_job("j1");
        let mut owner = changes.watch_owner(&alice());
        changes.stop();
        tokio::time::timeout(std::time::Duration::from_secs(1), job.changed())
            .await
            .expect("woken");
        assert!(job.stopping());
        assert_eq!(owner.next().await, OwnerChange::Stopping);
    }

    #[test]
    fn the_last_watcher_to_go_takes_the_entry_with_it() {
        let changes = Arc::new(JobChanges::default());
        let first = changes.watch_job("j1");
        let second = changes.watch_job("j1");
        let owner = changes.watch_owner(&alice());
        assert_eq!(changes.waiters(), (2, 1));
        drop(first);
        assert_eq!(changes.jobs.lock().expect("unpoisoned").len(), 1);
        drop(second);
        drop(owner);
        assert!(changes.jobs.lock().expect("unpoisoned").is_empty());
        assert!(changes.users.lock().expect("unpoisoned").is_empty());
    }
}
