//! Group commit: the store's frequent writes queue here, and one task writes whatever has
//! queued in one transaction, so one durable commit (one fsync) serves them all.
//!
//! A caller still waits for its own write to be committed before it hears back: a `202` is
//! sent only for a job on disk. If a batch fails, its writes are retried one transaction each,
//! so one bad write fails alone and never takes the others with it.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use super::{ClaimedJob, ExecutionEnd, Inserted, Lease, Millis, NewJob, PluginRef, Progress};
use super::{JobStatus, StoreError};

/// The most writes one transaction carries.
const MAX_BATCH: usize = 256;

/// One write a batch can carry.
#[derive(Debug)]
pub(crate) enum Write {
    InsertJob(NewJob),
    Claim {
        lease_expires_at: Millis,
        limit: u32,
    },
    Release {
        lease: Lease,
    },
    Start {
        lease: Lease,
        execution_id: String,
        attempt: u32,
        plugin: PluginRef,
        started_at: Millis,
    },
    Progress {
        lease: Lease,
        execution_id: String,
        progress: Progress,
    },
    Heartbeat {
        leases: Vec<Lease>,
        lease_expires_at: Millis,
    },
    Finish {
        lease: Lease,
        end: ExecutionEnd,
    },
}

impl Write {
    /// Whether this write can make a job pending, so that idle workers elsewhere should wake.
    pub(crate) fn may_enqueue(&self) -> bool {
        match self {
            Write::InsertJob(_) => true,
            Write::Finish { end, .. } => end.job_status == JobStatus::Pending,
            Write::Release { .. } => true,
            _ => false,
        }
    }
}

/// What a write did, in the shape of its [`Write`].
#[derive(Debug)]
pub(crate) enum Outcome {
    Inserted(Inserted),
    Claimed(Vec<ClaimedJob>),
    /// Whether the lease was still held (and so whether the write happened).
    Held(bool),
    /// The leases a heartbeat found lost.
    Lost(Vec<Lease>),
}

/// A backend's way of writing a batch in one transaction: the outcomes in the writes' order.
#[async_trait]
pub(crate) trait BatchWriter: Send + Sync + 'static {
    async fn write_batch(&self, writes: &[Write]) -> Result<Vec<Outcome>, StoreError>;
}

type Reply = oneshot::Sender<Result<Outcome, StoreError>>;

/// The queue in front of a [`BatchWriter`].
#[derive(Debug, Clone)]
pub(crate) struct Batcher {
    queue: mpsc::UnboundedSender<(Write, Reply)>,
}

impl Batcher {
    /// Starts the writing task on the current tokio runtime.
    pub(crate) fn start(writer: Arc<dyn BatchWriter>) -> Batcher {
        let (queue, receiver) = mpsc::unbounded_channel();
        tokio::spawn(write_batches(writer, receiver));
        Batcher { queue }
    }

    async fn submit(&self, write: Write) -> Result<Outcome, StoreError> {
        self.queue(write).outcome().await
    }

    /// Queues a write now, in order with every write queued after it; await it later.
    pub(crate) fn queue(&self, write: Write) -> QueuedWrite {
        let (reply, answer) = oneshot::channel();
        QueuedWrite(
            self.queue
                .send((write, reply))
                .map(|()| answer)
                .map_err(|_| StoreError::Closed),
        )
    }

    pub(crate) async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError> {
        match self.submit(Write::InsertJob(job.clone())).await? {
            Outcome::Inserted(inserted) => Ok(inserted),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn claim(
        &self,
        lease_expires_at: Millis,
        limit: u32,
    ) -> Result<Vec<ClaimedJob>, StoreError> {
        let write = Write::Claim {
            lease_expires_at,
            limit,
        };
        match self.submit(write).await? {
            Outcome::Claimed(claimed) => Ok(claimed),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn heartbeat(
        &self,
        leases: &[Lease],
        lease_expires_at: Millis,
    ) -> Result<Vec<Lease>, StoreError> {
        let write = Write::Heartbeat {
            leases: leases.to_vec(),
            lease_expires_at,
        };
        match self.submit(write).await? {
            Outcome::Lost(lost) => Ok(lost),
            other => Err(unexpected(&other)),
        }
    }
}

/// A write of a running execution, queued for the next group commit. Writes are applied in
/// the order they were queued, so a worker can queue its execution's start, run the job, queue
/// its end and claim the next job, and wait only once, for the commit that carries them all.
#[derive(Debug)]
pub struct QueuedWrite(Result<oneshot::Receiver<Result<Outcome, StoreError>>, StoreError>);

impl QueuedWrite {
    async fn outcome(self) -> Result<Outcome, StoreError> {
        self.0?.await.map_err(|_| StoreError::Closed)?
    }

    /// Waits for the commit; true if the lease was still held, so that the write happened.
    pub async fn lease_held(self) -> Result<bool, StoreError> {
        match self.outcome().await? {
            Outcome::Held(held) => Ok(held),
            other => Err(unexpected(&other)),
        }
    }
}

fn unexpected(outcome: &Outcome) -> StoreError {
    StoreError::Corrupt(format!(
        "a batch answered with the wrong outcome {outcome:?}"
    ))
}

async fn write_batches(
    writer: Arc<dyn BatchWriter>,
    mut receiver: mpsc::UnboundedReceiver<(Write, Reply)>,
) {
    let mut writes = Vec::with_capacity(MAX_BATCH);
    let mut replies = Vec::with_capacity(MAX_BATCH);
    while let Some((write, reply)) = receiver.recv().await {
        writes.push(write);
        replies.push(reply);
        while writes.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok((write, reply)) => {
                    writes.push(write);
                    replies.push(reply);
                }
                Err(_) => break,
            }
        }
        match writer.write_batch(&writes).await {
            Ok(outcomes) => {
                for (reply, outcome) in replies.drain(..).zip(outcomes) {
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(error) if writes.len() == 1 => {
                if let Some(reply) = replies.pop() {
                    let _ = reply.send(Err(error));
                }
            }
            Err(error) => {
                tracing::warn!(%error, writes = writes.len(), "a batch failed; writing its writes one by one");
                for (write, reply) in writes.iter().zip(replies.drain(..)) {
                    let outcome = writer
                        .write_batch(std::slice::from_ref(write))
                        .await
                        .and_then(|mut outcomes| {
                            outcomes.pop().ok_or_else(|| {
                                StoreError::Corrupt("a batch of one answered nothing".into())
                            })
                        });
                    let _ = reply.send(outcome);
                }
            }
        }
        writes.clear();
        replies.clear();
    }
}
