//! Group commit: the store's frequent writes queue here, and one task writes whatever has
//! queued in one transaction, so one durable commit (one fsync) serves them all.
//!
//! A caller still waits for its own write to be committed before it hears back: a `202` is
//! sent only for a job on disk. If a batch fails, its writes are retried one transaction each,
//! so one bad write fails alone and never takes the others with it.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use super::backend::ClaimFilter;
use super::commit_gate::CommitGate;
use super::records::ExperimentRecord;
use super::records::{ClaimedJob, ExecutionEnd, ExecutionStart, LiveUpdate};
use super::records::{Inserted, NewJob};
use super::types::{JobChange, Lease, Millis};
use super::types::{JobStatus, StoreError};

/// The most writes one transaction carries.
const MAX_BATCH: usize = 256;

/// One write a batch can carry.
#[derive(Debug)]
pub(crate) enum Write {
    InsertJob(Box<NewJob>),
    /// Jobs stored together or not at all, with the experiment they are the runs of, if
    /// they are.
    InsertJobs {
        jobs: Vec<NewJob>,
        experiment: Option<Box<ExperimentRecord>>,
    },
    Claim {
        lease_expires_at: Millis,
        limit: u32,
        filter: Arc<ClaimFilter>,
    },
    Release {
        lease: Lease,
    },
    Start {
        lease: Lease,
        start: ExecutionStart,
    },
    Progress {
        lease: Lease,
        execution_id: String,
        update: LiveUpdate,
    },
    Heartbeat {
        leases: Vec<Lease>,
        lease_expires_at: Millis,
    },
    /// An execution's end, and its start if that was not written before.
    Finish {
        lease: Lease,
        start: Option<Box<ExecutionStart>>,
        end: ExecutionEnd,
    },
}

impl Write {
    /// Whether this write can make a job pending, so that idle workers elsewhere should wake.
    pub(crate) fn may_enqueue(&self) -> bool {
        match self {
            Write::InsertJob(_) | Write::InsertJobs { .. } => true,
            Write::Finish { end, .. } => end.job_ends().otherwise.status == JobStatus::Pending,
            Write::Release { .. } => true,
            _ => false,
        }
    }

    /// The job this write changed as clients see it, given what it did: a claim or a
    /// heartbeat changes nothing they see, a write whose lease was lost changes nothing.
    fn change(&self, outcome: &Outcome) -> Option<JobChange> {
        let lease = match (self, outcome) {
            (Write::InsertJob(job), Outcome::Inserted(Inserted::Created)) => {
                return Some(JobChange {
                    owner_id: job.owner_id.clone(),
                    job_id: job.id.clone(),
                    project_id: job.project().to_owned(),
                });
            }
            (
                Write::Start { lease, .. }
                | Write::Progress { lease, .. }
                | Write::Finish { lease, .. }
                | Write::Release { lease },
                Outcome::Held(true),
            ) => lease,
            _ => return None,
        };
        Some(JobChange {
            owner_id: lease.owner_id.clone(),
            job_id: lease.job_id.clone(),
            project_id: lease.project_id.clone(),
        })
    }
}

/// What a batch changed as clients see it, each job once.
pub(crate) fn changes(writes: &[Write], outcomes: &[Outcome]) -> Vec<JobChange> {
    let mut changes: Vec<JobChange> = Vec::new();
    for (write, outcome) in writes.iter().zip(outcomes) {
        if let (Write::InsertJobs { jobs, .. }, Outcome::InsertedAll(inserted)) = (write, outcome) {
            changes.extend(
                jobs.iter()
                    .zip(inserted)
                    .filter(|(_, inserted)| **inserted == Inserted::Created)
                    .map(|(job, _)| JobChange {
                        owner_id: job.owner_id.clone(),
                        job_id: job.id.clone(),
                        project_id: job.project().to_owned(),
                    }),
            );
        } else {
            changes.extend(write.change(outcome));
        }
    }
    changes.sort_unstable_by(|a, b| a.job_id.cmp(&b.job_id));
    changes.dedup();
    changes
}

/// What a write did, in the shape of its [`Write`].
#[derive(Debug)]
pub(crate) enum Outcome {
    Inserted(Inserted),
    InsertedAll(Vec<Inserted>),
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

/// The queues in front of a [`BatchWriter`]: one writing task per lane. SQLite takes one
/// writer at a time, so it has one lane; PostgreSQL commits several transactions at once, so
/// its writes spread over a few. Every write of one job goes to the same lane, which keeps
/// them in order; claims take the lanes in turn. Every launch of one owner goes to the same
/// lane too: one transaction's launches of an owner are checked together, with one quota
/// read or one allowance taken.
/// A backend whose writes go through a [`Batcher`]: every capability's queued writes.
pub(crate) trait Batched {
    fn batcher(&self) -> &Batcher;
}

#[derive(Debug, Clone)]
pub(crate) struct Batcher {
    lanes: Vec<mpsc::UnboundedSender<(Write, Reply)>>,
    next: Arc<AtomicUsize>,
    gate: Arc<CommitGate>,
}

impl Batcher {
    /// Starts `lanes` writing tasks (at least one) on the current tokio runtime.
    pub(crate) fn start(writer: Arc<dyn BatchWriter>, lanes: usize) -> Batcher {
        let lanes = lanes.max(1);
        let gate = Arc::new(CommitGate::new(lanes));
        let lanes = (0..lanes)
            .map(|_| {
                let (queue, receiver) = mpsc::unbounded_channel();
                tokio::spawn(write_batches(writer.clone(), gate.clone(), receiver));
                queue
            })
            .collect();
        Batcher {
            lanes,
            next: Arc::new(AtomicUsize::new(0)),
            gate,
        }
    }

    /// Starts one lane on a thread of its own, named `name`, for a writer whose
    /// [`BatchWriter::write_batch`] blocks until the batch is written: the lane's writes
    /// reach it in one hand-off and wait for no runtime thread. The thread ends with the
    /// last clone of the batcher.
    pub(crate) fn on_thread(
        name: &str,
        writer: Arc<dyn BatchWriter>,
    ) -> Result<Batcher, StoreError> {
        let (queue, receiver) = mpsc::unbounded_channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(StoreError::Thread)?;
        let gate = Arc::new(CommitGate::new(1));
        let lane_gate = gate.clone();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || runtime.block_on(write_batches(writer, lane_gate, receiver)))
            .map_err(StoreError::Thread)?;
        Ok(Batcher {
            lanes: vec![queue],
            next: Arc::new(AtomicUsize::new(0)),
            gate,
        })
    }

    /// The lane of a job's writes, or of an owner's launches.
    fn lane_of(&self, id: &str) -> usize {
        let mut hasher = std::hash::DefaultHasher::new();
        id.hash(&mut hasher);
        (hasher.finish() % self.lanes.len() as u64) as usize
    }

    fn lane(&self, write: &Write) -> usize {
        match write {
            Write::Start { lease, .. }
            | Write::Progress { lease, .. }
            | Write::Finish { lease, .. }
            | Write::Release { lease } => self.lane_of(&lease.job_id),
            Write::Heartbeat { leases, .. } => leases
                .first()
                .map_or(0, |lease| self.lane_of(&lease.job_id)),
            Write::InsertJob(job) => self.lane_of(&job.owner_id),
            Write::InsertJobs { jobs, .. } => {
                jobs.first().map_or(0, |job| self.lane_of(&job.owner_id))
            }
            Write::Claim { .. } => self.next.fetch_add(1, Ordering::Relaxed) % self.lanes.len(),
        }
    }

    /// The gate its lanes take turns of, for whoever shares them with other replicas.
    pub(crate) fn gate(&self) -> Arc<CommitGate> {
        self.gate.clone()
    }

    /// How many lanes may write at once now.
    #[cfg(test)]
    pub(crate) async fn lanes_open(&self) -> usize {
        self.gate.open().await
    }

    async fn submit(&self, write: Write) -> Result<Outcome, StoreError> {
        self.queue(write).outcome().await
    }

    /// Queues a write now, in order with every write queued after it; await it later.
    pub(crate) fn queue(&self, write: Write) -> QueuedWrite {
        let (reply, answer) = oneshot::channel();
        QueuedWrite(
            self.lanes[self.lane(&write)]
                .send((write, reply))
                .map(|()| answer)
                .map_err(|_| StoreError::Closed),
        )
    }

    pub(crate) async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError> {
        match self.submit(Write::InsertJob(Box::new(job.clone()))).await? {
            Outcome::Inserted(inserted) => Ok(inserted),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn insert_jobs(
        &self,
        jobs: &[NewJob],
        experiment: Option<&ExperimentRecord>,
    ) -> Result<Vec<Inserted>, StoreError> {
        let write = Write::InsertJobs {
            jobs: jobs.to_vec(),
            experiment: experiment.map(|experiment| Box::new(experiment.clone())),
        };
        match self.submit(write).await? {
            Outcome::InsertedAll(inserted) => Ok(inserted),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn claim(
        &self,
        lease_expires_at: Millis,
        limit: u32,
        filter: Arc<ClaimFilter>,
    ) -> Result<Vec<ClaimedJob>, StoreError> {
        let write = Write::Claim {
            lease_expires_at,
            limit,
            filter,
        };
        match self.submit(write).await? {
            Outcome::Claimed(claimed) => Ok(claimed),
            other => Err(unexpected(&other)),
        }
    }

    /// Renews leases, each in its job's lane, so that a heartbeat never waits on a row another
    /// lane's open transaction holds (and never deadlocks with it).
    pub(crate) async fn heartbeat(
        &self,
        leases: &[Lease],
        lease_expires_at: Millis,
    ) -> Result<Vec<Lease>, StoreError> {
        let mut by_lane = vec![Vec::new(); self.lanes.len()];
        for lease in leases {
            by_lane[self.lane_of(&lease.job_id)].push(lease.clone());
        }
        let queued: Vec<QueuedWrite> = by_lane
            .into_iter()
            .filter(|leases| !leases.is_empty())
            .map(|leases| {
                self.queue(Write::Heartbeat {
                    leases,
                    lease_expires_at,
                })
            })
            .collect();
        let mut lost = Vec::new();
        for queued in queued {
            match queued.outcome().await? {
                Outcome::Lost(lost_here) => lost.extend(lost_here),
                other => return Err(unexpected(&other)),
            }
        }
        Ok(lost)
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
    gate: Arc<CommitGate>,
    mut receiver: mpsc::UnboundedReceiver<(Write, Reply)>,
) {
    let mut writes = Vec::with_capacity(MAX_BATCH);
    let mut replies = Vec::with_capacity(MAX_BATCH);
    while let Some((write, reply)) = receiver.recv().await {
        writes.push(write);
        replies.push(reply);
        let turn = gate.turn().await;
        // The batch takes every write queued by now, those queued while it waited included.
        take_queued(&mut receiver, &mut writes, &mut replies);
        let written = writer.write_batch(&writes).await;
        drop(turn);
        match written {
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
                // A turn per write, so that the replica's other lanes go on between them.
                for (write, reply) in writes.iter().zip(replies.drain(..)) {
                    let turn = gate.turn().await;
                    let outcome = writer
                        .write_batch(std::slice::from_ref(write))
                        .await
                        .and_then(|mut outcomes| {
                            outcomes.pop().ok_or_else(|| {
                                StoreError::Corrupt("a batch of one answered nothing".into())
                            })
                        });
                    drop(turn);
                    let _ = reply.send(outcome);
                }
            }
        }
        writes.clear();
        replies.clear();
    }
}

/// Adds the writes queued now to the batch, up to [`MAX_BATCH`].
fn take_queued(
    receiver: &mut mpsc::UnboundedReceiver<(Write, Reply)>,
    writes: &mut Vec<Write>,
    replies: &mut Vec<Reply>,
) {
    while writes.len() < MAX_BATCH {
        match receiver.try_recv() {
            Ok((write, reply)) => {
                writes.push(write);
                replies.push(reply);
            }
            Err(_) => break,
        }
    }
}
