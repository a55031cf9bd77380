//! `GET /job/<id>/incumbents`: the solutions a job's plugin reported as it found them, the
//! newest few of each execution (a race's: each entrant's), oldest first. The job's event
//! stream sends the same as `incumbent` events while it runs.

use axum::Router;
use axum::extract::State;
use axum::routing::get;

use crate::api::wire::{IncumbentView, IncumbentsResponse};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::jobs::not_found;

pub fn router() -> Router<AppState> {
    Router::new().route("/job/{job_id}/incumbents", get(incumbents))
}

async fn incumbents(
    State(state): State<AppState>,
    user: AuthUser,
    Path(job_id): Path<String>,
) -> Result<Json<IncumbentsResponse>, ApiError> {
    let kept = state
        .store
        .incumbents(&user.id, &job_id)
        .await?
        .ok_or_else(|| not_found(&job_id))?;
    Ok(Json(IncumbentsResponse {
        incumbents: kept.iter().map(IncumbentView::new).collect(),
        job_id,
    }))
}
