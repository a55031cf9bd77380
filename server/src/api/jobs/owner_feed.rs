//! One feed per owner for all of its `GET /jobs/events` streams: a user's (the jobs it
//! launched) or a project's (every job in it, for everyone who reads the project). The feed
//! hears the owner's changes, gathers them for [`GATHER`], reads each changed job once, and
//! writes the events once, as the bytes every stream then sends as they are: two thousand
//! streams of one owner cost one read and one rendering per change, and a write each. Each stream sends a burst
//! at its own moment within the next [`GATHER`] (drawn when it opens), so that the streams a
//! change wakes do not all write in the one instant, which would hold up every other
//! request behind them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::broadcast;

use crate::api::AppState;
use crate::api::wire::JobListEntry;
use crate::changes::{Owner, OwnerChange, OwnerWatch};
use crate::store::{JobFilter, JobRecord, JobStatus, JobSummary, Millis, now_millis};

/// How long the feed gathers changes after the first before it reads and sends them.
pub const GATHER: Duration = Duration::from_millis(100);

/// Bursts a stream may fall behind by before it catches up with a read of its own.
const BACKLOG: usize = 64;

/// The most changed jobs of a project read in one statement.
const PROJECT_READ: usize = 200;

/// How often an idle feed looks whether any stream still listens.
const IDLE_CHECK: Duration = Duration::from_secs(5);

/// What a feed sends its streams.
#[derive(Debug)]
pub enum FeedItem {
    /// Events, as the bytes of the response: `status` events, the last with the id `made`.
    Burst { made: Millis, bytes: Bytes },
    /// The feed missed changes: each stream reads what changed since then itself.
    Resync { since: Millis },
    /// The server is stopping.
    Stopping,
}

/// The feeds of the owners with streams open.
#[derive(Debug, Default)]
pub struct OwnerFeeds {
    feeds: Mutex<HashMap<Owner, broadcast::Sender<Arc<FeedItem>>>>,
}

impl OwnerFeeds {
    /// The owner's feed from now on; started if the owner has none. Whether the caller may
    /// read the owner's jobs is checked before.
    pub fn subscribe(
        self: &Arc<Self>,
        state: &AppState,
        owner: &Owner,
    ) -> broadcast::Receiver<Arc<FeedItem>> {
        let mut feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = feeds.get(owner) {
            return sender.subscribe();
        }
        let (sender, receiver) = broadcast::channel(BACKLOG);
        feeds.insert(owner.clone(), sender.clone());
        let feed = Feed {
            state: state.clone(),
            owner: owner.clone(),
            watch: state.changes.watch_owner(owner),
            sender,
            sent: HashMap::new(),
            feeds: self.clone(),
        };
        tokio::spawn(feed.run());
        receiver
    }
}

struct Feed {
    state: AppState,
    owner: Owner,
    watch: OwnerWatch,
    sender: broadcast::Sender<Arc<FeedItem>>,
    /// The status last sent of each job not ended yet.
    sent: HashMap<String, JobStatus>,
    feeds: Arc<OwnerFeeds>,
}

impl Feed {
    async fn run(mut self) {
        loop {
            let change = tokio::select! {
                change = self.watch.next() => change,
                () = tokio::time::sleep(IDLE_CHECK) => {
                    if self.nobody_listens() {
                        return;
                    }
                    continue;
                }
            };
            let first = match change {
                OwnerChange::Job(job_id, sequence) => (job_id, sequence),
                OwnerChange::Lagged => {
                    self.send(FeedItem::Resync {
                        since: now_millis().saturating_sub(60_000),
                    });
                    continue;
                }
                OwnerChange::Stopping => {
                    self.send(FeedItem::Stopping);
                    return;
                }
            };
            // Whatever else changes in the next moment goes out with it.
            tokio::time::sleep(GATHER).await;
            let made = now_millis();
            let mut changed = vec![first];
            let mut places: HashMap<Arc<str>, usize> = HashMap::from([(changed[0].0.clone(), 0)]);
            let mut lagged = false;
            while let Some(change) = self.watch.try_next() {
                match change {
                    OwnerChange::Job(job_id, sequence) => match places.get(&job_id) {
                        Some(&place) => changed[place].1 = changed[place].1.max(sequence),
                        None => {
                            places.insert(job_id.clone(), changed.len());
                            changed.push((job_id, sequence));
                        }
                    },
                    OwnerChange::Lagged => {
                        lagged = true;
                        break;
                    }
                    OwnerChange::Stopping => break,
                }
            }
            if lagged {
                self.send(FeedItem::Resync {
                    since: made.saturating_sub(60_000),
                });
                continue;
            }
            let jobs = match &self.owner {
                Owner::User(user_id) => self.read_users_jobs(user_id.clone(), changed).await,
                Owner::Project(project_id) => {
                    self.read_projects_jobs(project_id.clone(), changed).await
                }
            };
            if let Some(bytes) = status_events(jobs.iter().map(|json| &**json), made) {
                self.send(FeedItem::Burst { made, bytes });
            }
            if self.nobody_listens() {
                return;
            }
        }
    }

    /// The user's changed jobs whose status is news, rendered: each read once for every
    /// waiter the change woke (the user's long-polls and job streams too).
    async fn read_users_jobs(
        &mut self,
        user_id: String,
        changed: Vec<(Arc<str>, u64)>,
    ) -> Vec<Arc<str>> {
        let mut jobs = Vec::with_capacity(changed.len());
        for (job_id, sequence) in changed {
            let read = self.state.changes.reads().job(
                self.state.store.as_ref(),
                &user_id,
                &job_id,
                sequence,
            );
            match read.await {
                Ok(Some(job)) if self.note(&job.record.id, job.record.status) => {
                    jobs.push(job.rendered(|record| list_entry_json(&summary(record))));
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "event stream read failed"),
            }
        }
        jobs
    }

    /// The project's changed jobs whose status is news, rendered: read together, a page of
    /// the project's jobs at a time, whoever launched them.
    async fn read_projects_jobs(
        &mut self,
        project_id: String,
        changed: Vec<(Arc<str>, u64)>,
    ) -> Vec<Arc<str>> {
        let mut jobs = Vec::with_capacity(changed.len());
        for page in changed.chunks(PROJECT_READ) {
            let filter = JobFilter {
                project: Some(project_id.clone()),
                ids: page.iter().map(|(job_id, _)| job_id.to_string()).collect(),
                ..JobFilter::default()
            };
            // The filter names the project: the owner given is not read.
            let read = self
                .state
                .store
                .jobs(&project_id, &filter, None, page.len() as u32);
            match read.await {
                Ok(mut found) => {
                    // Oldest first, as a user's feed sends them.
                    found.reverse();
                    for job in found {
                        if self.note(&job.id, job.status) {
                            jobs.push(Arc::from(list_entry_json(&job)));
                        }
                    }
                }
                Err(error) => tracing::warn!(%error, "event stream read failed"),
            }
        }
        jobs
    }

    fn send(&self, item: FeedItem) {
        // No receiver: the next look at the listeners ends the feed.
        let _ = self.sender.send(Arc::new(item));
    }

    /// Whether the job's status is news to the streams; remembered if so.
    fn note(&mut self, job_id: &str, status: JobStatus) -> bool {
        if self.sent.get(job_id) == Some(&status) {
            return false;
        }
        if matches!(status, JobStatus::Pending | JobStatus::Running) {
            self.sent.insert(job_id.to_owned(), status);
        } else {
            self.sent.remove(job_id);
        }
        true
    }

    /// Removes this feed if no stream listens any more (under the lock new streams subscribe
    /// under, so that none subscribes to a feed that is ending).
    fn nobody_listens(&self) -> bool {
        let mut feeds = self
            .feeds
            .feeds
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.sender.receiver_count() > 0 {
            return false;
        }
        if feeds
            .get(&self.owner)
            .is_some_and(|sender| sender.same_channel(&self.sender))
        {
            feeds.remove(&self.owner);
        }
        true
    }
}

/// `status` events for these `GET /jobs` entries (rendered JSON), the last with the id `id`:
/// the bytes of an SSE response. `None` for no entries.
pub fn status_events<'a>(entries: impl Iterator<Item = &'a str>, id: Millis) -> Option<Bytes> {
    let mut bytes = Vec::new();
    for json in entries {
        if !bytes.is_empty() {
            bytes.extend_from_slice(b"\n");
        }
        bytes.extend_from_slice(b"event: status\ndata: ");
        bytes.extend_from_slice(json.as_bytes());
        bytes.extend_from_slice(b"\n");
    }
    if bytes.is_empty() {
        return None;
    }
    bytes.extend_from_slice(format!("id: {id}\n\n").as_bytes());
    Some(Bytes::from(bytes))
}

pub fn list_entry_json(job: &JobSummary) -> String {
    serde_json::to_string(&JobListEntry::new(job.clone())).unwrap_or_default()
}

fn summary(job: &JobRecord) -> JobSummary {
    JobSummary {
        id: job.id.clone(),
        problem: job.problem.clone(),
        status: job.status,
        created_at: job.created_at,
        ended_at: job.ended_at,
        labels: job.labels.clone(),
        objective: job.objective,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_written_as_sse_with_the_id_on_the_last() {
        let bytes = status_events(["{\"a\":1}", "{\"b\":2}"].into_iter(), 42).expect("events");
        assert_eq!(
            &bytes[..],
            b"event: status\ndata: {\"a\":1}\n\nevent: status\ndata: {\"b\":2}\nid: 42\n\n"
        );
        assert!(status_events(std::iter::empty(), 1).is_none());
    }
}
