//! `GET /webhook_secret` and `POST /webhook_secret`: the caller's secret for verifying the
//! signatures of its jobs' callbacks; made on first use, a new one on `POST`.

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde::Serialize;

use super::{ApiError, AppState, Json};
use crate::auth::AuthUser;
use crate::webhooks::sign::new_secret;

pub fn router() -> Router<AppState> {
    Router::new().route("/webhook_secret", get(show).post(rotate))
}

#[derive(Debug, Serialize)]
struct WebhookSecret {
    /// `whsec_` and base64 of 32 bytes, as Standard Webhooks libraries take it.
    secret: String,
}

async fn show(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<Json<WebhookSecret>, ApiError> {
    secret(&state, &user, false).await
}

/// A new secret: the old one stops signing at once.
async fn rotate(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<Json<WebhookSecret>, ApiError> {
    secret(&state, &user, true).await
}

async fn secret(
    state: &AppState,
    user: &AuthUser,
    rotate: bool,
) -> Result<Json<WebhookSecret>, ApiError> {
    let secret = state
        .store
        .webhook_secret(&user.id, &new_secret(), rotate)
        .await?
        .ok_or(ApiError::InvalidToken("the token's user no longer exists"))?;
    Ok(Json(WebhookSecret { secret }))
}
