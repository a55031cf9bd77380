//! A replica's notices of its group commits on PostgreSQL, sent just after each commit
//! instead of inside it.
//!
//! A transaction that sends `NOTIFY` holds one lock of the whole cluster from the start of
//! its commit to its end, the flush to disk included: lanes that notified committed one at a
//! time, in every replica, and the flushes of concurrent commits no longer overlapped. Here
//! one task per replica sends them on a connection of its own, whose transactions do not wait
//! for their flush (`synchronous_commit = off`: they write nothing but the notices), so the
//! lock is held for microseconds, and notices queued meanwhile go out together.
//!
//! A notice is a wake-up, not a record: the tables hold what happened. One lost (the replica
//! dies between a commit and its notice) costs what a lost listening connection already
//! costs: idle workers find the job at their next poll, and a waiter reads the job again when
//! its wait ends.

use sqlx::postgres::{PgConnection, PgPool};
use tokio::sync::mpsc;

use super::types::JobChange;

/// Below PostgreSQL's 8,000-byte limit on a notification's payload.
pub(super) const CHANGES_PAYLOAD: usize = 7_000;

/// The sending side: cheap to clone, never waits.
#[derive(Debug, Clone)]
pub(super) struct Notices {
    queue: mpsc::UnboundedSender<Notice>,
}

#[derive(Debug)]
enum Notice {
    /// A job became pending: idle workers should look.
    Pending,
    /// Jobs changed as clients see them.
    Changed(Vec<JobChange>),
}

impl Notices {
    /// Starts the sending task on the current tokio runtime; it holds one of `pool`'s
    /// connections.
    pub(super) fn start(
        pool: PgPool,
        jobs_channel: &'static str,
        changes_channel: &'static str,
    ) -> Notices {
        let (queue, receiver) = mpsc::unbounded_channel();
        let sender = Sender {
            pool,
            connection: None,
            jobs_channel,
            changes_channel,
        };
        tokio::spawn(sender.run(receiver));
        Notices { queue }
    }

    pub(super) fn jobs_pending(&self) {
        // The task ends only with the runtime.
        let _ = self.queue.send(Notice::Pending);
    }

    pub(super) fn jobs_changed(&self, changes: Vec<JobChange>) {
        if !changes.is_empty() {
            let _ = self.queue.send(Notice::Changed(changes));
        }
    }
}

/// `changes` as notification payloads of `owner_id job_id` lines, each below
/// [`CHANGES_PAYLOAD`] bytes. A job in a shared project has a second line, `@project_id
/// job_id`, after its own: a replica of a release before project feeds reads it as a change
/// of a job of owner `@project_id`, whom nobody follows, and reads the line before as it
/// always did, so that replicas of both releases share one database during an upgrade.
pub(super) fn payloads(changes: &[JobChange]) -> Vec<String> {
    let mut payloads = Vec::new();
    let mut payload = String::new();
    for change in changes {
        payload.push_str(&change.owner_id);
        payload.push(' ');
        payload.push_str(&change.job_id);
        payload.push('\n');
        if change.project_id != change.owner_id {
            payload.push('@');
            payload.push_str(&change.project_id);
            payload.push(' ');
            payload.push_str(&change.job_id);
            payload.push('\n');
        }
        if payload.len() >= CHANGES_PAYLOAD {
            payloads.push(std::mem::take(&mut payload));
        }
    }
    if !payload.is_empty() {
        payloads.push(payload);
    }
    payloads
}

/// The changes a payload of [`payloads`] names (a job's project is its owner's personal one
/// unless a `@project_id` line follows it).
pub(super) fn parse_payload(payload: &str) -> Vec<JobChange> {
    let mut changes: Vec<JobChange> = Vec::new();
    for line in payload.lines() {
        let Some((first, job_id)) = line.split_once(' ') else {
            continue;
        };
        match first.strip_prefix('@') {
            Some(project_id) => {
                if let Some(change) = changes.last_mut()
                    && change.job_id == job_id
                {
                    project_id.clone_into(&mut change.project_id);
                }
            }
            None => changes.push(JobChange {
                owner_id: first.to_owned(),
                job_id: job_id.to_owned(),
                project_id: first.to_owned(),
            }),
        }
    }
    changes
}

struct Sender {
    pool: PgPool,
    /// Taken out of the pool for good (its session does not wait for flushes, which no
    /// other user of the pool may inherit), held between sends, closed after a failure.
    connection: Option<PgConnection>,
    jobs_channel: &'static str,
    changes_channel: &'static str,
}

impl Sender {
    async fn run(mut self, mut receiver: mpsc::UnboundedReceiver<Notice>) {
        let mut pending = false;
        let mut changes = Vec::new();
        while let Some(notice) = receiver.recv().await {
            let mut take = |notice| match notice {
                Notice::Pending => pending = true,
                Notice::Changed(more) => changes.extend(more),
            };
            take(notice);
            while let Ok(notice) = receiver.try_recv() {
                take(notice);
            }
            changes.sort_unstable_by(|a: &JobChange, b| a.job_id.cmp(&b.job_id));
            changes.dedup();
            if let Err(error) = self.send(pending, &changes).await {
                tracing::warn!(%error, changes = changes.len(), "could not send job notices");
                self.connection = None;
            }
            pending = false;
            changes.clear();
        }
    }

    async fn send(&mut self, pending: bool, changes: &[JobChange]) -> Result<(), sqlx::Error> {
        let mut channels = Vec::new();
        let mut payloads = Vec::new();
        if pending {
            channels.push(self.jobs_channel);
            payloads.push(String::new());
        }
        for payload in self::payloads(changes) {
            channels.push(self.changes_channel);
            payloads.push(payload);
        }
        let connection = match &mut self.connection {
            Some(connection) => connection,
            empty => {
                let mut connection = self.pool.acquire().await?.detach();
                sqlx::query("SET synchronous_commit = off")
                    .execute(&mut connection)
                    .await?;
                empty.insert(connection)
            }
        };
        sqlx::query(
            "SELECT COUNT(pg_notify(channel, payload))
             FROM unnest($1::text[], $2::text[]) AS notices (channel, payload)",
        )
        .bind(&channels)
        .bind(&payloads)
        .execute(&mut *connection)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(owner_id: &str, job_id: &str, project_id: &str) -> JobChange {
        JobChange {
            owner_id: owner_id.into(),
            job_id: job_id.into(),
            project_id: project_id.into(),
        }
    }

    #[test]
    fn a_payload_names_each_job_s_owner_and_project() {
        let changes = [
            change("alice", "j1", "alice"),
            change("bob", "j2", "team"),
            change("carol", "j3", "carol"),
        ];
        let payloads = payloads(&changes);
        assert_eq!(payloads, ["alice j1\nbob j2\n@team j2\ncarol j3\n"]);
        assert_eq!(parse_payload(&payloads[0]), changes);
        // A payload of the release before: every job in its owner's personal project.
        assert_eq!(parse_payload("bob j2\n"), [change("bob", "j2", "bob")]);
    }
}
