//! `POST /problem/<id>/check`: every check a launch makes (the use case's schema, its
//! `validate`, the options and labels; for a race, its versions and entrants, and the input
//! against each version raced), without launching. An editor calls it as its user types, and
//! shows the use case's own messages; a 200 means the same body would be accepted (quotas
//! aside), and a body a launch accepts is never refused here.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use serde::Serialize;

use crate::api::jobs::launch_request::{LaunchRequest, parse_object, read_launch};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::launch::prepare;
use crate::domain::races::{prepare_race, take_race};

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
    let (mut fields, large) = parse_object(&state, body).await?;
    let detail = match take_race(&mut fields)? {
        Some(race) => {
            let versions = prepare_race(&state, &user, &plugin, &race, &fields, large).await?;
            format!(
                "the race is valid for {}: {} entrants",
                plugin.info.name,
                versions.len() as u64 * race.seeds
            )
        }
        None => {
            prepare(&state, &user, &plugin, fields, large).await?;
            format!("the input is valid for {}", plugin.info.name)
        }
    };
    Ok(Json(CheckResponse {
        detail,
        problem: plugin.info.name.clone(),
        valid: true,
    }))
}
