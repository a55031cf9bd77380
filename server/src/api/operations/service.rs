//! The service as operators watch it: `GET /service` (replicas, their workers and pools, the
//! queue per use case with its pools and why it waits if no worker may claim it, jobs
//! accepted and ended per minute) and `GET /plugin_events` (the plugin
//! registry's changes, and each replica's loads, replacements, removals and refusals). Counts only, no job of anyone's and,
//! but for administrators, nothing of the machines (a replica is named by its place in the
//! list, not by its host name and process id): any signed-in user may read them.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use serde::{Deserialize, Serialize};

use crate::api::wire::format_rfc3339;
use crate::api::{ApiError, AppState, Json};
use crate::auth::AuthUser;
use crate::config::JobLimits;
use crate::store::{ServiceStats, now_millis};

/// The per-minute counts cover this many minutes up to the current one.
const MINUTES: i64 = 60;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/service", get(service))
        .route("/plugin_events", get(plugin_events))
}

#[derive(Debug, Serialize)]
struct ServiceView {
    replicas: Vec<ReplicaView>,
    queue: Vec<QueueView>,
    per_minute: Vec<MinuteView>,
}

#[derive(Debug, Serialize)]
struct ReplicaView {
    id: String,
    /// `replica N`, by when it started: what a host is called stays with its operators.
    /// An administrator sees the host's name and the process id instead.
    name: String,
    /// Whether it runs: it reported lately and did not say it stopped.
    live: bool,
    workers: u32,
    busy: u32,
    /// Workers free to take a job: none on a replica that is not live.
    idle: u32,
    accepted_total: u64,
    ended_total: u64,
    started_at: String,
    seen_at: String,
    /// When it stopped, if it stopped cleanly; null while it runs, and after a crash.
    stopped_at: Option<String>,
    /// The worker pool its workers are in.
    pool: String,
}

#[derive(Debug, Serialize)]
struct QueueView {
    problem: String,
    pending: u64,
    running: u64,
    /// The pools whose workers run its jobs.
    pools: Vec<String>,
    /// Why its pending jobs are claimed by no worker, if they are not: no live replica has
    /// workers in any of its pools.
    waiting: Option<String>,
}

#[derive(Debug, Serialize)]
struct MinuteView {
    minute: String,
    accepted: u64,
    ended: u64,
}

impl ServiceView {
    /// The view for a user; `admin` also sees each replica's host and process.
    fn new(stats: ServiceStats, limits: &JobLimits, now: i64, admin: bool) -> ServiceView {
        let running_pools: Vec<&str> = stats
            .replicas
            .iter()
            .filter(|replica| replica.live_at(now) && replica.workers > 0)
            .map(|replica| replica.pool.as_str())
            .collect();
        let queue = stats
            .queue
            .iter()
            .map(|depth| {
                let pools = limits.pools_of(&depth.problem);
                let served = pools
                    .iter()
                    .any(|pool| running_pools.contains(&pool.as_str()));
                QueueView {
                    waiting: (depth.pending > 0 && !served).then(|| {
                        format!(
                            "no live replica runs workers in pool {}: start one with --pool",
                            pools.join(" or ")
                        )
                    }),
                    problem: depth.problem.clone(),
                    pending: depth.pending,
                    running: depth.running,
                    pools,
                }
            })
            .collect();
        ServiceView {
            replicas: stats
                .replicas
                .into_iter()
                .enumerate()
                .map(|(index, replica)| {
                    let live = replica.live_at(now);
                    ReplicaView {
                        live,
                        idle: if live {
                            replica.workers.saturating_sub(replica.busy)
                        } else {
                            0
                        },
                        id: replica.id,
                        name: if admin {
                            replica.name
                        } else {
                            format!("replica {}", index + 1)
                        },
                        workers: replica.workers,
                        busy: replica.busy,
                        accepted_total: replica.accepted,
                        ended_total: replica.ended,
                        started_at: format_rfc3339(replica.started_at),
                        seen_at: format_rfc3339(replica.seen_at),
                        stopped_at: replica.stopped_at.map(format_rfc3339),
                        pool: replica.pool,
                    }
                })
                .collect(),
            queue,
            per_minute: stats
                .minutes
                .into_iter()
                .map(|minute| MinuteView {
                    minute: format_rfc3339(minute.minute),
                    accepted: minute.accepted,
                    ended: minute.ended,
                })
                .collect(),
        }
    }
}

async fn service(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<Json<ServiceView>, ApiError> {
    let now = now_millis();
    let since = (now.div_euclid(60_000) - (MINUTES - 1)) * 60_000;
    let stats = state.store.service_stats(since).await?;
    Ok(Json(ServiceView::new(
        stats,
        &state.job_limits,
        now,
        user.admin,
    )))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsQuery {
    #[serde(default)]
    after: u64,
}

/// The most events one answer holds; `?after=` the last one for more.
const EVENTS_PAGE: u32 = 500;

#[derive(Debug, Serialize)]
struct PluginEventView {
    seq: i64,
    at: String,
    kind: String,
    name: Option<String>,
    version: Option<String>,
    previous: Option<String>,
    digest: Option<String>,
    actor: Option<String>,
    replica: Option<String>,
    file: Option<String>,
    reason: Option<String>,
}

/// The plugin events after `?after=` (a `seq`), oldest first, service-wide: the registry's
/// changes and every replica's own. This replica's latest are written first.
async fn plugin_events(
    State(state): State<AppState>,
    _user: AuthUser,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Json<Vec<PluginEventView>>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    state.plugins.flush_events().await;
    let after = i64::try_from(query.after).unwrap_or(i64::MAX);
    let events = state.store.plugin_events(after, EVENTS_PAGE).await?;
    Ok(Json(
        events
            .into_iter()
            .map(|event| PluginEventView {
                seq: event.seq,
                at: format_rfc3339(event.at),
                kind: event.kind,
                name: event.name,
                version: event.version,
                previous: event.previous,
                digest: event.digest,
                actor: event.actor,
                replica: event.replica,
                file: event.file,
                reason: event.reason,
            })
            .collect(),
    ))
}
