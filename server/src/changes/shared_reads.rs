//! One read of a job per change, shared by every waiter the change wakes. Two thousand event
//! streams on one user's jobs would otherwise read each changed job two thousand times.
//!
//! A waiter woken by the change with sequence number `s` asks for the job as read at or
//! after `s`. The first such waiter starts a read and the rest wait for it; a read started
//! for a later change serves them as well, since it began after theirs was published.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use crate::store::{JobRecord, JobStore, StoreError};

/// Reads remembered at most; beyond, those older than [`KEEP_FOR`] are dropped.
const MAX_ENTRIES: usize = 4096;

/// How long a read is remembered once the map is full. Waiters woken by one change ask
/// within milliseconds of each other; a read this old serves nobody.
const KEEP_FOR: Duration = Duration::from_secs(2);

type Read = Arc<OnceCell<Option<Arc<SharedJob>>>>;

/// A job as one read found it, for every waiter that read serves, with a rendering of it that
/// they share too (what a stream sends of it is the same for every stream of its owner).
#[derive(Debug)]
pub struct SharedJob {
    pub record: JobRecord,
    rendered: OnceLock<Arc<str>>,
}

impl SharedJob {
    pub fn new(record: JobRecord) -> SharedJob {
        SharedJob {
            record,
            rendered: OnceLock::new(),
        }
    }

    /// `render` of the job, made by the first waiter that asks and shared by the rest.
    pub fn rendered(&self, render: impl FnOnce(&JobRecord) -> String) -> Arc<str> {
        self.rendered
            .get_or_init(|| Arc::from(render(&self.record)))
            .clone()
    }
}

#[derive(Debug)]
struct Entry {
    /// The change the read was started for.
    sequence: u64,
    started: Instant,
    read: Read,
}

/// The latest read of each recently changed job, by owner and job id.
#[derive(Debug, Default)]
pub struct SharedReads {
    entries: Mutex<HashMap<(String, String), Entry>>,
}

impl SharedReads {
    /// The owner's job as read after the change `sequence` (0: read it now, alone). `None`
    /// if there is no such job of this owner.
    pub async fn job(
        &self,
        store: &dyn JobStore,
        owner_id: &str,
        job_id: &str,
        sequence: u64,
    ) -> Result<Option<Arc<SharedJob>>, StoreError> {
        let shared = |record: JobRecord| Arc::new(SharedJob::new(record));
        if sequence == 0 {
            return Ok(store.job(owner_id, job_id).await?.map(shared));
        }
        let read = self.read_for(owner_id, job_id, sequence);
        read.get_or_try_init(|| async {
            Ok::<_, StoreError>(store.job(owner_id, job_id).await?.map(shared))
        })
        .await
        .cloned()
    }

    /// The read that serves a waiter of change `sequence`: the latest one if it was started
    /// for this change or a later one, else a new one.
    fn read_for(&self, owner_id: &str, job_id: &str, sequence: u64) -> Read {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (owner_id.to_owned(), job_id.to_owned());
        if let Some(entry) = entries.get(&key)
            && entry.sequence >= sequence
        {
            return entry.read.clone();
        }
        if entries.len() >= MAX_ENTRIES {
            let now = Instant::now();
            entries.retain(|_, entry| now.duration_since(entry.started) < KEEP_FOR);
        }
        let read = Read::default();
        entries.insert(
            key,
            Entry {
                sequence,
                started: Instant::now(),
                read: read.clone(),
            },
        );
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_of_one_change_share_a_read_and_a_later_change_starts_another() {
        let reads = SharedReads::default();
        let first = reads.read_for("alice", "j1", 3);
        let same = reads.read_for("alice", "j1", 3);
        assert!(Arc::ptr_eq(&first, &same));
        // A waiter that heard an older change is served by the newer read.
        let older = reads.read_for("alice", "j1", 2);
        assert!(Arc::ptr_eq(&first, &older));
        let later = reads.read_for("alice", "j1", 4);
        assert!(!Arc::ptr_eq(&first, &later));
        // Another owner never shares alice's read.
        let other = reads.read_for("bob", "j1", 4);
        assert!(!Arc::ptr_eq(&later, &other));
    }
}
