//! `POST /problem/<id>/check`: every check a launch makes (the use case's schema, its
//! `validate`, the options and labels), without launching. An editor calls it as its user
//! types, and shows the use case's own messages; a 200 means the same body would be
//! accepted (quotas aside).

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use serde::Serialize;

use super::problems::{LaunchRequest, parse_object, prepare, read_launch};
use super::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;

pub fn router() -> Router<AppState> {
    Router::new().route("/problem/{problem_id}/check", post(check))
}

#[derive(Debug, Serialize)]
struct CheckResponse {
    detail: String,
    problem: String,
    valid: bool,
}

async fn check(
    State(state): State<AppState>,
    user: AuthUser,
    Path(problem_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<CheckResponse>, ApiError> {
    let LaunchRequest {
        plugin,
        room: _room,
        body,
        ..
    } = read_launch(&state, &problem_id, &headers, body).await?;
    let (fields, large) = parse_object(&state, body).await?;
    prepare(&state, &user, &plugin, fields, large).await?;
    Ok(Json(CheckResponse {
        detail: format!("the input is valid for {}", plugin.info.name),
        problem: plugin.info.name.clone(),
        valid: true,
    }))
}
