//! `POST /problem/<id>/evaluate`: a given solution scored for an input by the use case's
//! `evaluate`, without a job (`domain::evaluate`). The body is read as a launch's is, within
//! the same body budget; a plugin without `evaluate` answers 501.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use serde::Serialize;
use serde_json::Value;

use crate::api::jobs::launch_request::{LaunchRequest, parse_object, read_launch};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::evaluate::{Scored, evaluate};
use crate::violation::Violation;

pub fn router() -> Router<AppState> {
    Router::new().route("/problem/{problem_id}/evaluate", post(evaluate_solution))
}

/// The answer, as `schemas/api/evaluation.schema.json` describes it.
#[derive(Debug, Serialize)]
struct EvaluationResponse {
    problem: String,
    version: String,
    objective: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    sense: Option<&'static str>,
    feasible: bool,
    violations: Vec<Violation>,
    details: Value,
}

async fn evaluate_solution(
    State(state): State<AppState>,
    user: AuthUser,
    Path(problem_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<EvaluationResponse>, ApiError> {
    let LaunchRequest {
        plugin,
        room: _room,
        body,
        ..
    } = read_launch(&state, &problem_id, &headers, body).await?;
    let (fields, _large) = parse_object(&state, body).await?;
    let Scored {
        evaluation,
        details,
        sense,
    } = evaluate(&state, &user, &plugin, fields).await?;
    Ok(Json(EvaluationResponse {
        problem: plugin.info.name.clone(),
        version: plugin.info.version.clone(),
        objective: evaluation.objective,
        sense: sense.map(|sense| sense.as_str()),
        feasible: evaluation.feasible,
        violations: evaluation.violations,
        details,
    }))
}
