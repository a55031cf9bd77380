//! How many of a replica's group-commit lanes may write at once: all of them while the
//! replica is alone on its database, a share of them once other replicas write to it too.
//!
//! Every lane's batch pays a transaction and a statement per kind of write whatever its
//! size. Replicas sharing a database each bring their own lanes, so two replicas commit in
//! twice as many, half as large batches as one, and the database's CPU goes to those
//! statements instead of rows. Sharing the lanes keeps the commits the database sees about
//! as many as one replica's: each replica's lanes still queue their writes in order, and a
//! lane waits for a turn only when the replica's share is in use.

use std::sync::Arc;

use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore, SemaphorePermit};

/// The turns of a replica's lanes.
#[derive(Debug)]
pub(crate) struct CommitGate {
    lanes: usize,
    turns: Arc<Semaphore>,
    /// Turns taken out of use while other replicas share the database.
    withheld: Mutex<Vec<OwnedSemaphorePermit>>,
}

impl CommitGate {
    /// A gate for `lanes` lanes, every one of them open.
    pub(crate) fn new(lanes: usize) -> CommitGate {
        CommitGate {
            lanes,
            turns: Arc::new(Semaphore::new(lanes)),
            withheld: Mutex::new(Vec::new()),
        }
    }

    /// Waits for a turn to write a batch; the turn ends when the permit drops.
    pub(crate) async fn turn(&self) -> SemaphorePermit<'_> {
        self.turns
            .acquire()
            .await
            .expect("the gate's semaphore is never closed")
    }

    /// How many lanes may write at once while `replicas` replicas (this one among them)
    /// write to the database: the lanes divided among them, at least one.
    fn open_for(&self, replicas: usize) -> usize {
        (self.lanes / replicas.max(1)).max(1)
    }

    /// Opens [`open_for`](Self::open_for) `replicas` lanes, waiting for those that close to
    /// end the batch they write.
    pub(crate) async fn share(&self, replicas: usize) {
        let closed = self.lanes - self.open_for(replicas);
        let mut withheld = self.withheld.lock().await;
        withheld.truncate(closed);
        while withheld.len() < closed {
            let turn = self
                .turns
                .clone()
                .acquire_owned()
                .await
                .expect("the gate's semaphore is never closed");
            withheld.push(turn);
        }
    }

    /// How many lanes may write at once now.
    #[cfg(test)]
    pub(crate) async fn open(&self) -> usize {
        self.lanes - self.withheld.lock().await.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl CommitGate {
        /// A turn if one is free now.
        fn free_turn(&self) -> Option<SemaphorePermit<'_>> {
            self.turns.try_acquire().ok()
        }
    }

    #[tokio::test]
    async fn lanes_are_shared_among_the_replicas_and_given_back() {
        let gate = CommitGate::new(2);
        assert_eq!(gate.open().await, 2);
        gate.share(2).await;
        assert_eq!(gate.open().await, 1);
        let first = gate.turn().await;
        // The one open lane writes; the other waits for its turn.
        assert!(
            gate.free_turn().is_none(),
            "a second lane wrote beside the first"
        );
        drop(first);
        drop(gate.turn().await);
        gate.share(5).await;
        assert_eq!(gate.open().await, 1, "at least one lane stays open");
        gate.share(1).await;
        assert_eq!(gate.open().await, 2);
        let _first = gate.turn().await;
        let _second = gate.turn().await;
    }

    #[tokio::test]
    async fn a_lane_closes_once_its_batch_is_written() {
        let gate = Arc::new(CommitGate::new(2));
        let first = gate.turn().await;
        let second = gate.turn().await;
        let sharing = tokio::spawn({
            let gate = gate.clone();
            async move { gate.share(2).await }
        });
        // On this test's one thread the share runs until it waits for a turn.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(
            !sharing.is_finished(),
            "closed a lane in the middle of its batch"
        );
        drop(second);
        sharing.await.expect("the share ends");
        assert_eq!(gate.open().await, 1);
        drop(first);
        drop(gate.turn().await);
    }
}
