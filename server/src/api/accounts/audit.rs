//! The audit log: `GET /admin/audit` pages through it, newest first;
//! [`crate::domain::audit`] is how changes add to it.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use serde::Deserialize;

use crate::api::wire::{AuditEventView, AuditPage};
use crate::api::{ApiError, AppState, Json};
use crate::auth::AuthUser;

/// The most entries one page holds.
const MAX_PAGE: u32 = 500;

pub fn router() -> Router<AppState> {
    Router::new().route("/admin/audit", get(page))
}

#[derive(Debug, Deserialize)]
struct PageQuery {
    /// A sequence number: 0 to 2^63 - 1.
    before: Option<u64>,
    limit: Option<u32>,
}

async fn page(
    State(state): State<AppState>,
    _admin: AuthUser,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = match query.limit {
        None => 100,
        Some(limit) if (1..=MAX_PAGE).contains(&limit) => limit,
        Some(_) => {
            return Err(ApiError::BadRequest(format!(
                "limit must be a whole number from 1 to {MAX_PAGE}"
            )));
        }
    };
    let before = query
        .before
        .map(|before| {
            i64::try_from(before).map_err(|_| {
                ApiError::BadRequest(format!(
                    "before must be a sequence number up to {}",
                    i64::MAX
                ))
            })
        })
        .transpose()?;
    let events = state.store.audit_events(before, limit).await?;
    let next_before = (events.len() == limit as usize)
        .then(|| events.last().map(|event| event.seq))
        .flatten();
    Ok(Json(AuditPage {
        events: events.iter().map(AuditEventView::new).collect(),
        next_before,
    }))
}
