//! `POST /problem/<id>/batch`: up to [`MAX_BATCH`] launch bodies in one request, checked
//! each as a single launch is, stored in one transaction (all or none), answered with every
//! job id. An `Idempotency-Key` covers the whole batch.

use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;

use crate::api::jobs::launch_request::{
    LaunchRequest, launched, parse_object, read_launch, request_hash,
};
use crate::api::wire::BatchResponse;
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::error::invalid;
use crate::domain::launch::MAX_BATCH;
use crate::domain::launch::{insert_failed, prepare};
use crate::domain::projects::{launch_project, named_project};
use crate::plugins::Plugin;
use crate::store::{Idempotency, Inserted, NewJob};
use crate::violation::Violation;

pub fn router() -> Router<AppState> {
    Router::new().route("/problem/{problem_id}/batch", post(run_batch))
}

/// The key stored with a batch's job `index`: the batch's key and the index, apart by a
/// character no `Idempotency-Key` can hold, so no single launch's key can be one of them.
fn item_key(key: &str, index: usize) -> String {
    format!("{key}\u{1f}{index}")
}

async fn run_batch(
    State(state): State<AppState>,
    user: AuthUser,
    Path(problem_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let project = launch_project(&state, &user, named_project(query.as_deref()).as_deref()).await?;
    let LaunchRequest {
        plugin,
        requested,
        idempotency_key,
        room: _room,
        body,
    } = read_launch(&state, &problem_id, &headers, body).await?;
    let idempotency = idempotency_key.map(|key| Idempotency {
        key,
        request_hash: request_hash(
            &format!("{}/batch", launched(&plugin, requested.as_deref())),
            &body,
        ),
    });
    if let Some(idempotency) = &idempotency
        && let Some(replayed) = replay(&state, &user, &plugin, idempotency).await?
    {
        return Ok(replayed);
    }
    let (mut fields, large) = parse_object(&state, body).await?;
    let items = match fields.remove("jobs") {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_BATCH => items,
        _ => {
            return Err(invalid(
                "a batch is {\"jobs\": [...]}, 1 to 100 launch bodies",
                vec![Violation::new(
                    "/jobs",
                    format!("must be an array of 1 to {MAX_BATCH} launch bodies"),
                )],
            ));
        }
    };
    if let Some(other) = fields.keys().next() {
        return Err(invalid(
            "a batch is {\"jobs\": [...]}; options and labels go in each launch body",
            vec![Violation::new(
                format!("/{other}"),
                "unknown field beside jobs",
            )],
        ));
    }

    // Every body checked, every problem reported at once under its index.
    let mut prepared = Vec::with_capacity(items.len());
    let mut errors = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let Value::Object(item) = item else {
            errors.push(Violation::new(
                format!("/jobs/{index}"),
                "must be an object",
            ));
            continue;
        };
        match prepare(&state, &user, &plugin, item, large).await {
            Ok(job) => prepared.push(job),
            Err(ApiError::Validation {
                errors: violations, ..
            }) => errors.extend(violations.into_iter().map(|violation| {
                Violation::new(
                    format!("/jobs/{index}{}", violation.pointer),
                    violation.message,
                )
            })),
            Err(error) => return Err(error),
        }
    }
    if !errors.is_empty() {
        return Err(invalid(
            "some of the batch's jobs do not match the use case's schema; none was launched",
            errors,
        ));
    }

    let jobs = prepared
        .into_iter()
        .enumerate()
        .map(|(index, prepared)| {
            let idempotency = idempotency.as_ref().map(|idempotency| Idempotency {
                key: item_key(&idempotency.key, index),
                request_hash: idempotency.request_hash.clone(),
            });
            let mut job =
                prepared.into_job(&user, &plugin, requested.clone(), idempotency, state.quotas)?;
            job.project_id = project.clone();
            Ok(job)
        })
        .collect::<Result<Vec<NewJob>, ApiError>>()?;
    // Each job's submission in its own trace, open until the batch is answered.
    let _submissions: Vec<_> = jobs
        .iter()
        .map(|job| crate::telemetry::submission_span(&job.id, &job.problem))
        .collect();
    // All committed before the client hears of any.
    let inserted = match state.store.insert_jobs(&jobs).await {
        Ok(inserted) => inserted,
        Err(error) => {
            let first = jobs
                .iter()
                .find(|job| job.dataset.is_some())
                .unwrap_or(&jobs[0]);
            return Err(insert_failed(&state, &user, first, error).await);
        }
    };
    if let Some(Inserted::Refused(refusal)) = inserted
        .iter()
        .find(|inserted| matches!(inserted, Inserted::Refused(_)))
    {
        // A batch counts whole against the quotas: none of it was stored.
        return Err((*refusal).into());
    }
    if inserted
        .iter()
        .any(|inserted| *inserted != Inserted::Created)
    {
        // The same key, sent twice at once: the other request stored its batch first.
        if let Some(idempotency) = &idempotency
            && let Some(replayed) = replay(&state, &user, &plugin, idempotency).await?
        {
            return Ok(replayed);
        }
        return Err(ApiError::Internal(
            "a batch met jobs it did not store".into(),
        ));
    }
    state.local_jobs.job_added();
    for job in &jobs {
        state.metrics.job_accepted(&plugin.info.name);
        tracing::info!(job = %job.id, problem = %job.problem, user = %user.username, "job accepted");
    }
    let ids = jobs.into_iter().map(|job| job.id).collect();
    Ok(accepted(&user, &plugin, ids).into_response())
}

/// `202 {detail, jobs}`.
fn accepted(user: &AuthUser, plugin: &Plugin, jobs: Vec<String>) -> impl IntoResponse + use<> {
    let response = BatchResponse {
        detail: format!(
            "authorized as {}; {} {} jobs accepted and queued",
            user.username,
            jobs.len(),
            plugin.info.name
        ),
        jobs,
    };
    (StatusCode::ACCEPTED, Json(response))
}

/// The answer to a batch whose key was used before: its jobs again for the same request, 422
/// for a different one; `None` if the key is new.
async fn replay(
    state: &AppState,
    user: &AuthUser,
    plugin: &Plugin,
    idempotency: &Idempotency,
) -> Result<Option<Response>, ApiError> {
    let mut ids = Vec::new();
    for index in 0..MAX_BATCH {
        let Some((job_id, stored_hash)) = state
            .store
            .job_by_idempotency_key(&user.id, &item_key(&idempotency.key, index))
            .await?
        else {
            break;
        };
        if stored_hash != idempotency.request_hash {
            return Err(ApiError::IdempotencyKeyReused(format!(
                "the Idempotency-Key {:?} was used for a different request (job {job_id}); \
                 use a new key for a new batch",
                idempotency.key
            )));
        }
        ids.push(job_id);
    }
    if ids.is_empty() {
        return Ok(None);
    }
    let mut response = accepted(user, plugin, ids).into_response();
    response.headers_mut().insert(
        "idempotent-replayed",
        header::HeaderValue::from_static("true"),
    );
    Ok(Some(response))
}
