//! Server-Sent Events: `GET /job/<id>/events` (one job's status, progress, log and
//! incumbents as they change, then its end) and `GET /jobs/events` (the status of every job of
//! the caller, or with `?project=` of every job in a project it reads, as it changes). A stream reads the database only when the job changes, and the streams woken by
//! one change share one read; it resumes from `Last-Event-ID` with only what the client has
//! not seen. A stream is a held request ([`Hold`]): one of its user's places, ended by a
//! `reconnect` event when its connection must close, and ended when its user loses access.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use tokio::sync::broadcast;

use crate::api::jobs::held::{Connection, Hold, Interrupt};
use crate::api::jobs::owner_feed::{FeedItem, GATHER, list_entry_json, status_events};
use crate::api::wire::{IncumbentView, JobStatusResponse, LogEvent, ProgressView, StatusEvent};
use crate::api::{ApiError, AppState, Path};
use crate::auth::AuthUser;
use crate::changes::{JobWatch, Owner, SharedJob};
use crate::domain::jobs::not_found;
use crate::domain::projects::default_project;
use crate::domain::projects::{named_project, project_role};
use crate::store::{
    IncumbentRecord, JobFilter, JobRecord, JobStatus, JobSummary, Millis, Progress, now_millis,
};

/// A comment line this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How many of the caller's newest jobs a resumed `GET /jobs/events` looks through.
const RESUME_SCAN: u32 = 500;

/// How often a project's stream checks, before it sends, that its user still reads the
/// project.
const PROJECT_CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long a client told to reconnect waits before it does (the SSE `retry` field).
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// What a stream remembers of the log it sent, to find where new text starts in a tail whose
/// oldest lines may have been dropped since.
const LOG_MARK: usize = 256;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/job/{job_id}/events", get(job_events))
        .route("/jobs/events", get(owner_events))
}

fn last_event_id(headers: &HeaderMap) -> Option<&str> {
    headers.get("last-event-id")?.to_str().ok()
}

/// The last event of a stream whose connection must close: the client comes back (with its
/// `Last-Event-ID`) after the `retry` time, to this replica or another.
fn reconnect_event() -> Event {
    Event::default()
        .event("reconnect")
        .retry(RECONNECT_AFTER)
        .data(RECONNECT_DATA)
}

/// The data of a `reconnect` event.
const RECONNECT_DATA: &str =
    r#"{"reason":"the server closes this connection; reconnect with Last-Event-ID"}"#;

async fn job_events(
    State(state): State<AppState>,
    user: AuthUser,
    connection: Connection,
    Path(job_id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let hold = Hold::begin(&state, &user, connection)?;
    // Subscribed before the first read: no change falls between them.
    let watch = state.changes.watch_job(&job_id);
    let job = state
        .store
        .job(&user.id, &job_id)
        .await?
        .ok_or_else(|| not_found(&job_id))?;
    let sent = last_event_id(&headers)
        .and_then(Sent::parse)
        .unwrap_or_default();
    let stream = JobStream {
        state,
        user,
        hold,
        job_id,
        watch,
        sent,
        first: Some(Arc::new(SharedJob::new(job))),
        ended: false,
    };
    let events = stream::unfold(stream, |mut stream| async move {
        let events = stream.next_events().await?;
        Some((events, stream))
    })
    .flat_map(|events| stream::iter(events.into_iter().map(Ok)));
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// What a job's stream has sent: the state its last event id names.
#[derive(Debug, Default)]
struct Sent {
    status: Option<JobStatus>,
    attempt: u32,
    progress: Option<Progress>,
    /// Bytes of the attempt's log tail sent, and the last of them.
    log_len: usize,
    log_mark: String,
    /// The number of the attempt's newest incumbent sent.
    incumbent: u32,
}

impl Sent {
    /// Reads an event id: `attempt:log_len:STATUS:incumbent` (the last part may be missing).
    fn parse(id: &str) -> Option<Sent> {
        let mut parts = id.splitn(4, ':');
        let attempt = parts.next()?.parse().ok()?;
        let log_len = parts.next()?.parse().ok()?;
        let status = JobStatus::parse(parts.next()?).ok()?;
        let incumbent = match parts.next() {
            Some(part) => part.parse().ok()?,
            None => 0,
        };
        Some(Sent {
            status: Some(status),
            attempt,
            log_len,
            incumbent,
            ..Sent::default()
        })
    }

    fn id(&self) -> String {
        let status = self.status.map_or("", JobStatus::as_str);
        format!(
            "{}:{}:{status}:{}",
            self.attempt, self.log_len, self.incumbent
        )
    }
}

struct JobStream {
    state: AppState,
    user: AuthUser,
    hold: Hold,
    job_id: String,
    watch: JobWatch,
    sent: Sent,
    /// The read made before the stream started.
    first: Option<Arc<SharedJob>>,
    ended: bool,
}

impl JobStream {
    /// The next events, once there are some; `None` once the stream is over.
    async fn next_events(&mut self) -> Option<Vec<Event>> {
        loop {
            if self.ended {
                return None;
            }
            let job = match self.first.take() {
                Some(job) => job,
                None => {
                    tokio::select! {
                        () = self.watch.changed() => {}
                        interrupt = self.hold.interrupted() => {
                            self.ended = true;
                            return match interrupt {
                                Interrupt::Closing => Some(vec![reconnect_event()]),
                                Interrupt::AccessLost(_) => None,
                            };
                        }
                    }
                    if self.watch.stopping() {
                        // The client resumes from its last event on another replica, or here
                        // once the server is back.
                        self.ended = true;
                        return Some(vec![reconnect_event()]);
                    }
                    let read = self.state.changes.reads().job(
                        self.state.store.as_ref(),
                        &self.user.id,
                        &self.job_id,
                        self.watch.sequence(),
                    );
                    match read.await {
                        Ok(Some(job)) => job,
                        // Deleted meanwhile (its user, or retention): nothing more to say.
                        Ok(None) => return None,
                        Err(error) => {
                            tracing::warn!(%error, job = %self.job_id, "event stream read failed");
                            return None;
                        }
                    }
                }
            };
            let incumbents = self.new_incumbents(&job.record).await;
            let events = self.events(&job.record, &incumbents);
            if !events.is_empty() {
                return Some(events);
            }
        }
    }

    /// The incumbents of the job's current attempt the stream has not sent. A race's own
    /// stream has none: its entrants' streams carry theirs.
    async fn new_incumbents(&self, job: &JobRecord) -> Vec<IncumbentRecord> {
        let Some(execution) = job.executions.last() else {
            return Vec::new();
        };
        let after = if execution.attempt == self.sent.attempt {
            self.sent.incumbent
        } else {
            0
        };
        if execution.incumbents <= after {
            return Vec::new();
        }
        let read =
            self.state
                .store
                .incumbents_after(&self.user.id, &self.job_id, &execution.id, after);
        read.await.unwrap_or_else(|error| {
            tracing::warn!(%error, job = %self.job_id, "event stream read failed");
            Vec::new()
        })
    }

    /// What changed since the last events; the last event carries the new id.
    fn events(&mut self, job: &JobRecord, incumbents: &[IncumbentRecord]) -> Vec<Event> {
        let mut events = Vec::new();
        let execution = job.executions.last();
        let attempt = execution.map_or(0, |execution| execution.attempt);
        if attempt != self.sent.attempt {
            self.sent = Sent {
                status: None,
                attempt,
                ..Sent::default()
            };
        }
        let ended = !matches!(job.status, JobStatus::Pending | JobStatus::Running);
        // A new status comes before what the attempt did since, unless it is the end, which
        // comes after the last progress and log.
        let status = (self.sent.status != Some(job.status)).then(|| {
            self.sent.status = Some(job.status);
            json_event("status", &StatusEvent::new(job))
        });
        if !ended {
            events.extend(status.clone());
        }
        if let Some(execution) = execution {
            if execution.progress.is_some() && execution.progress != self.sent.progress {
                self.sent.progress.clone_from(&execution.progress);
                if let Some(progress) = &execution.progress {
                    let view = ProgressView {
                        fraction: progress.fraction,
                        message: progress.message.clone(),
                    };
                    events.push(json_event("progress", &view));
                }
            }
            if let Some((text, gap)) = self.new_log(&execution.log_tail, execution.log_truncated) {
                events.push(json_event("log", &LogEvent { text, gap }));
            }
            for incumbent in incumbents {
                self.sent.incumbent = self.sent.incumbent.max(incumbent.seq);
                events.push(json_event("incumbent", &IncumbentView::new(incumbent)));
            }
        }
        if ended {
            events.extend(status);
            self.ended = true;
            events.push(json_event(
                "end",
                &JobStatusResponse::new(job.clone(), now_millis()),
            ));
        }
        if let Some(last) = events.pop() {
            events.push(last.id(self.sent.id()));
        }
        events
    }

    /// The text of `tail` not sent yet, and whether some was lost between (the tail dropped
    /// lines the stream never sent).
    fn new_log(&mut self, tail: &str, truncated: bool) -> Option<(String, bool)> {
        let (start, gap) = if !truncated && tail.len() >= self.sent.log_len {
            (self.sent.log_len, false)
        } else if !self.sent.log_mark.is_empty()
            && let Some(at) = tail.rfind(self.sent.log_mark.as_str())
        {
            (at + self.sent.log_mark.len(), false)
        } else {
            (0, self.sent.log_len > 0)
        };
        let new = tail.get(start..).unwrap_or(tail);
        if new.is_empty() {
            return None;
        }
        self.sent.log_len = tail.len();
        let mark_from = tail.len().saturating_sub(LOG_MARK);
        let mark_from = (mark_from..tail.len())
            .find(|&index| tail.is_char_boundary(index))
            .unwrap_or(tail.len());
        self.sent.log_mark = tail[mark_from..].to_owned();
        Some((new.to_owned(), gap))
    }
}

fn json_event(name: &str, data: &impl serde::Serialize) -> Event {
    Event::default()
        .event(name)
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event(name))
}

/// The caller's jobs, or with `?project=` (or a key bound to a project) every job of the
/// project: 404 for a project the caller is not in, as for one that does not exist.
async fn owner_events(
    State(state): State<AppState>,
    user: AuthUser,
    connection: Connection,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let project = named_project(query.as_deref()).or(default_project(&user).map(str::to_owned));
    let owner = match project {
        Some(project_id) => {
            project_role(&state, &user, &project_id).await?;
            Owner::Project(project_id)
        }
        None => Owner::User(user.id.clone()),
    };
    let hold = Hold::begin(&state, &user, connection)?;
    let feed = state.owner_feeds.subscribe(&state, &owner);
    let resume_from = last_event_id(&headers).and_then(|id| id.parse::<Millis>().ok());
    let stream = OwnerStream {
        state,
        user,
        owner,
        project_checked: Instant::now(),
        hold,
        ended: false,
        feed,
        resume_from,
        // Its own moment within the feed's gathering window: the streams woken by one change
        // write spread over the window, not all in one instant that stalls other requests.
        delay: Duration::from_micros(rand::random::<u64>() % GATHER.as_micros() as u64),
    };
    let body = stream::unfold(stream, |mut stream| async move {
        let bytes = stream.next_bytes().await?;
        Some((Ok::<_, Infallible>(bytes), stream))
    });
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

/// A `GET /jobs/events` stream: its owner's feed, sent as it comes.
struct OwnerStream {
    state: AppState,
    user: AuthUser,
    /// The user itself, or a project the user reads.
    owner: Owner,
    /// When the user was last found in the project.
    project_checked: Instant,
    hold: Hold,
    ended: bool,
    feed: broadcast::Receiver<Arc<FeedItem>>,
    /// Send what changed since this time first (a resumed stream, or one that lagged).
    resume_from: Option<Millis>,
    /// How long after a burst was made this stream sends it.
    delay: Duration,
}

impl OwnerStream {
    /// The next bytes to send, once there are some; `None` once the stream is over.
    async fn next_bytes(&mut self) -> Option<Bytes> {
        loop {
            if self.ended {
                return None;
            }
            if let Some(since) = self.resume_from.take() {
                let jobs = self.changed_since(since).await;
                let json: Vec<String> = jobs.iter().map(list_entry_json).collect();
                match status_events(json.iter().map(String::as_str), now_millis()) {
                    Some(bytes) => return self.still_reads_project().await.then_some(bytes),
                    None => continue,
                }
            }
            let item = tokio::select! {
                item = self.feed.recv() => item,
                interrupt = self.hold.interrupted() => {
                    self.ended = true;
                    return match interrupt {
                        Interrupt::Closing => Some(reconnect_bytes()),
                        Interrupt::AccessLost(_) => None,
                    };
                }
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    let keep_alive = Bytes::from_static(b":\n\n");
                    return self.still_reads_project().await.then_some(keep_alive);
                }
            };
            match item.as_deref() {
                Ok(FeedItem::Burst { made, bytes }) => {
                    let due =
                        Duration::from_millis(now_millis().saturating_sub(*made).max(0) as u64);
                    if let Some(wait) = self.delay.checked_sub(due) {
                        tokio::time::sleep(wait).await;
                    }
                    return self.still_reads_project().await.then(|| bytes.clone());
                }
                Ok(FeedItem::Resync { since }) => self.resume_from = Some(*since),
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.resume_from = Some(now_millis().saturating_sub(60_000));
                }
                Ok(FeedItem::Stopping) | Err(broadcast::error::RecvError::Closed) => {
                    self.ended = true;
                    return Some(reconnect_bytes());
                }
            }
        }
    }

    /// Whether the stream may go on: a project's, while its user still reads the project
    /// (looked at again at most every [`PROJECT_CHECK_EVERY`], and only when there is
    /// something to send); a user's, always (its [`Hold`] ends it when the user's access
    /// ends). A stream that may not is over.
    async fn still_reads_project(&mut self) -> bool {
        let Owner::Project(project_id) = &self.owner else {
            return true;
        };
        if self.project_checked.elapsed() < PROJECT_CHECK_EVERY {
            return true;
        }
        match project_role(&self.state, &self.user, project_id).await {
            Ok(_) => {
                self.project_checked = Instant::now();
                true
            }
            Err(_) => {
                tracing::debug!(user = %self.user.username, project = %project_id,
                    "a project's event stream ended: its user no longer reads the project");
                self.ended = true;
                false
            }
        }
    }

    /// The owner's jobs created or ended after `since`, or not ended yet, oldest first.
    async fn changed_since(&self, since: Millis) -> Vec<JobSummary> {
        let filter = match &self.owner {
            Owner::User(_) => JobFilter::default(),
            Owner::Project(project_id) => JobFilter {
                project: Some(project_id.clone()),
                ..JobFilter::default()
            },
        };
        let mut jobs = match self
            .state
            .store
            .jobs(&self.user.id, &filter, None, RESUME_SCAN)
            .await
        {
            Ok(jobs) => jobs,
            Err(error) => {
                tracing::warn!(%error, "event stream read failed");
                return Vec::new();
            }
        };
        jobs.retain(|job| {
            job.created_at > since || job.ended_at.is_none_or(|ended_at| ended_at > since)
        });
        jobs.reverse();
        jobs
    }
}

/// [`reconnect_event`] as the bytes of a raw stream.
fn reconnect_bytes() -> Bytes {
    Bytes::from(format!(
        "event: reconnect\nretry: {}\ndata: {}\n\n",
        RECONNECT_AFTER.as_millis(),
        RECONNECT_DATA
    ))
}
