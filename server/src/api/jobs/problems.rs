//! Use cases: `GET /problems`, `GET /problem/<id>`, and `POST /problem/<id>` to launch a job.

use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tracing::Instrument;

use crate::api::jobs::launch_request::{
    LaunchRequest, accepted, launched, parse_object, read_launch, replay, request_hash,
};
use crate::api::wire::{ProblemDetail, ProblemSummary};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::launch::{Stored, insert_failed, prepare, resolve_synced};
use crate::domain::projects::{launch_project, named_project};
use crate::domain::races::{self, RaceLaunch, take_race};
use crate::store::{Idempotency, Inserted};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/problems", get(list))
        .route("/problem/{problem_id}", get(show).post(run_job))
}

async fn list(State(state): State<AppState>, _user: AuthUser) -> Json<Vec<ProblemSummary>> {
    Json(
        state
            .registry
            .list()
            .iter()
            .map(|plugin| ProblemSummary::new(plugin))
            .collect(),
    )
}

async fn show(
    State(state): State<AppState>,
    _user: AuthUser,
    Path(problem_id): Path<String>,
) -> Result<Json<ProblemDetail>, ApiError> {
    let plugin = resolve_synced(&state, &problem_id).await?;
    let limits = state.job_limits.of(&plugin.info.name);
    Ok(Json(ProblemDetail::new(&plugin, &limits)))
}

async fn run_job(
    State(state): State<AppState>,
    user: AuthUser,
    Path(problem_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let project = named_project(query.as_deref());
    let project = launch_project(&state, &user, project.as_deref()).await?;
    let LaunchRequest {
        plugin,
        requested,
        idempotency_key,
        room: _room,
        body,
    } = read_launch(&state, &problem_id, &headers, body).await?;
    let idempotency = idempotency_key.map(|key| Idempotency {
        key,
        request_hash: request_hash(&launched(&plugin, requested.as_deref()), &body),
    });
    if let Some(idempotency) = &idempotency
        && let Some((job_id, request_hash)) = state
            .store
            .job_by_idempotency_key(&user.id, &idempotency.key)
            .await?
    {
        return replay(&user, &plugin, idempotency, job_id, &request_hash);
    }
    let (mut fields, large) = parse_object(&state, body).await?;
    if let Some(race) = take_race(&mut fields)? {
        let launch = RaceLaunch {
            plugin,
            requested,
            idempotency,
            fields,
            large,
            race,
            project,
        };
        let plugin = launch.plugin.clone();
        let idempotency = launch.idempotency.clone();
        return match races::launch(&state, &user, launch).await? {
            Stored::Created(race_id) => Ok(accepted(&user, &plugin, race_id).into_response()),
            Stored::Existing {
                job_id,
                request_hash,
            } => {
                let idempotency = idempotency.ok_or_else(|| {
                    ApiError::Internal(
                        "an existing race reported for a request without a key".into(),
                    )
                })?;
                replay(&user, &plugin, &idempotency, job_id, &request_hash)
            }
        };
    }
    let prepared = prepare(&state, &user, &plugin, fields, large).await?;
    // Its owner's quotas are checked in the transaction that would store it.
    let mut job = prepared.into_job(&user, &plugin, requested, idempotency, state.quotas)?;
    job.project_id = project;
    // The job is committed before the client hears of it.
    let span = crate::telemetry::submission_span(&job.id, &job.problem);
    let inserted = match state.store.insert_job(&job).instrument(span).await {
        Ok(inserted) => inserted,
        Err(error) => return Err(insert_failed(&state, &user, &job, error).await),
    };
    match inserted {
        Inserted::Created => {}
        Inserted::Refused(refusal) => return Err(refusal.into()),
        // The same key, sent twice at once: the other request stored its job first.
        Inserted::Existing {
            job_id,
            request_hash,
        } => {
            let idempotency = job.idempotency.as_ref().ok_or_else(|| {
                ApiError::Internal("an existing job reported for a request without a key".into())
            })?;
            return replay(&user, &plugin, idempotency, job_id, &request_hash);
        }
    }
    state.local_jobs.job_added();
    state.metrics.job_accepted(&plugin.info.name);
    tracing::info!(job = %job.id, problem = %job.problem, user = %user.username, "job accepted");

    Ok(accepted(&user, &plugin, job.id).into_response())
}
