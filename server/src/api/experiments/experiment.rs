//! Experiments over HTTP: `POST /experiments` launches one ([`crate::domain::experiments`]
//! says what it is); `GET /experiments/<id>` sums it up; `GET /experiments` lists them;
//! `DELETE` cancels what has not run.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::wire::{ExperimentItem, ExperimentView, VersionRefView};
use crate::api::{ApiError, AppState, INLINE_BODY_LIMIT, Json, Path};
use crate::auth::AuthUser;
use crate::domain::experiments::{
    self, Definition, Summarized, definition, launch, not_found, parse_request,
};
use crate::domain::projects::{default_project, launch_project, named_project, project_role};
use crate::store::now_millis;

/// The most experiments `GET /experiments` lists at once.
const MAX_PAGE: u32 = 200;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/experiments", get(list).post(create))
        .route("/experiments/{experiment_id}", get(show).delete(cancel))
}

async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    let project = launch_project(&state, &user, named_project(query.as_deref()).as_deref()).await?;
    if body.len() >= INLINE_BODY_LIMIT {
        return Err(ApiError::PayloadTooLarge(INLINE_BODY_LIMIT));
    }
    let request = parse_request(&body)?;
    let record = launch(&state, &user, &request, None, project).await?;
    let definition: Definition = serde_json::from_str(&record.definition)
        .map_err(|error| ApiError::Internal(error.to_string()))?;
    let location = format!("/experiments/{}", record.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(json!({
            "detail": format!(
                "authorized as {}; experiment of {} jobs accepted and queued",
                user.username, definition.jobs
            ),
            "experiment": record.id,
            "jobs": definition.jobs,
        })),
    )
        .into_response())
}

async fn show(
    State(state): State<AppState>,
    user: AuthUser,
    Path(experiment_id): Path<String>,
) -> Result<Json<ExperimentView>, ApiError> {
    Ok(Json(view(&state, &user, &experiment_id).await?))
}

/// The experiment and its summary so far, if it is the caller's.
async fn view(
    state: &AppState,
    user: &AuthUser,
    experiment_id: &str,
) -> Result<ExperimentView, ApiError> {
    let Summarized {
        record,
        definition,
        summary,
    } = experiments::summary(state, user, experiment_id).await?;
    Ok(ExperimentView {
        id: record.id,
        problem: record.problem,
        created_at: crate::api::wire::format_rfc3339(record.created_at),
        cancelled_at: record.cancelled_at.map(crate::api::wire::format_rfc3339),
        project: record.project_id,
        versions: definition
            .versions
            .into_iter()
            .map(|version| VersionRefView {
                version: version.version,
                digest: version.digest,
            })
            .collect(),
        inputs: definition.inputs,
        seeds: definition.seeds,
        options: definition.options,
        progress: summary.progress,
        summary: summary.versions,
        results: summary.inputs,
    })
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    before: Option<String>,
    limit: Option<u32>,
    project: Option<String>,
}

async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = match query.limit {
        None => 50,
        Some(limit) if (1..=MAX_PAGE).contains(&limit) => limit,
        Some(_) => {
            return Err(ApiError::BadRequest(format!(
                "limit must be a whole number from 1 to {MAX_PAGE}"
            )));
        }
    };
    // A project's experiments for anyone in it (404 for anyone else); the caller's own
    // otherwise (a key bound to a project: the project's).
    let project = query
        .project
        .as_deref()
        .or(default_project(&user))
        .filter(|project| *project != user.id);
    if let Some(project) = project {
        project_role(&state, &user, project).await?;
    }
    let records = state
        .store
        .experiments(&user.id, project, query.before.as_deref(), limit)
        .await?;
    let items = records
        .iter()
        .map(|record| {
            let definition = definition(record)?;
            Ok(ExperimentItem {
                id: record.id.clone(),
                problem: record.problem.clone(),
                created_at: crate::api::wire::format_rfc3339(record.created_at),
                cancelled_at: record.cancelled_at.map(crate::api::wire::format_rfc3339),
                project: record.project_id.clone(),
                versions: definition
                    .versions
                    .into_iter()
                    .map(|version| version.version)
                    .collect(),
                inputs: definition.inputs.len(),
                seeds: definition.seeds.len(),
                jobs: definition.jobs,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let next = (items.len() == limit as usize)
        .then(|| items.last().map(|item| item.id.clone()))
        .flatten();
    Ok(Json(json!({"experiments": items, "next_before": next})))
}

/// Cancels the experiment's jobs that have not run; those running finish. Its launcher and
/// its project's members may.
async fn cancel(
    State(state): State<AppState>,
    user: AuthUser,
    Path(experiment_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let Some(runs) = state
        .store
        .cancel_experiment(&user.id, &experiment_id, now_millis())
        .await?
    else {
        // One it may read is a project's it only views: told why, not that none exists.
        return Err(
            match state.store.experiment(&user.id, &experiment_id).await? {
                Some(record) => ApiError::Forbidden(format!(
                    "{} is a viewer of project {:?}, and cancelling its experiments needs a member",
                    user.username,
                    record.project_id.unwrap_or_default()
                )),
                None => not_found(&experiment_id),
            },
        );
    };
    // Claimed here and not started: stopped before they start (other replicas were told).
    for job_id in &runs.claimed {
        state.local_jobs.cancel(job_id);
    }
    let cancelled = runs.cancelled.len() + runs.claimed.len();
    tracing::info!(experiment = %experiment_id, cancelled, user = %user.username, "experiment cancelled");
    Ok(Json(json!({
        "detail": format!("{cancelled} jobs that had not run are cancelled; running jobs finish"),
        "experiment": experiment_id,
        "cancelled": cancelled,
    })))
}
