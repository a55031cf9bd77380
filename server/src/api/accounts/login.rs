//! `POST /login`: credentials in, a bearer token out.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::routing::post;

use serde_json::json;

use crate::api::wire::{LoginRequest, TokenResponse};
use crate::api::{ApiError, AppState, Json};
use crate::auth::verify_password;
use crate::domain::audit::record_later;
use crate::user_name;

/// The longest a throttled login waits for its 429.
const THROTTLED_ANSWER_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

pub fn router() -> Router<AppState> {
    Router::new().route("/login", post(login))
}

async fn login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Json(request): Json<LoginRequest>,
) -> Result<Json<TokenResponse>, ApiError> {
    let address = state.trusted_proxies.client(peer.ip(), &headers);
    // A name no user can have is refused before anything is looked up or kept: the throttle
    // and the audit log hold it only in its capped form.
    let logged = user_name::for_log(&request.username);
    let username = if user_name::may_exist(&request.username) {
        request.username
    } else {
        logged.clone()
    };
    if let Err(wait) = state.login_throttle.admit(address, &username) {
        state.metrics.login_throttled();
        // Answered late, up to a second: a guesser that ignores Retry-After gets one answer
        // a second per connection, not tens of thousands, and a waiting task costs nothing.
        let delay = wait.min(THROTTLED_ANSWER_DELAY);
        tokio::time::sleep(delay).await;
        return Err(ApiError::TooManyAttempts(wait - delay));
    }
    let user = if user_name::may_exist(&username) {
        state.store.user_by_name(&username).await?
    } else {
        None
    };
    // An unknown user is checked against a decoy hash, so that both failures take the time
    // of one argon2 verification and answer alike.
    let hash = match &user {
        Some(user) => user.password_hash.clone(),
        None => state.tokens.decoy_hash().to_owned(),
    };
    let password = request.password;
    let matches = state
        .run_login_work(move || verify_password(&hash, &password))
        .await?;
    // A disabled user answers like a wrong password: the answer says nothing of the account.
    let user = match user {
        Some(user) if matches && !user.disabled => user,
        _ => {
            if let Some(failures) = state.login_throttle.failed(address, &username) {
                let detail = json!({"address": address.to_string(), "failures": failures});
                record_later(
                    &state,
                    &address.to_string(),
                    "login.failures",
                    &logged,
                    detail,
                );
            }
            state.metrics.login_failed();
            return Err(ApiError::InvalidCredentials);
        }
    };
    state.login_throttle.succeeded(address, &username);
    // A user enabled a moment ago may have been read as disabled: its new token must work.
    state.user_access.forget(&user.id);
    // Said to the client, so that it offers only what the user may do; every request is
    // still checked against the role it has then.
    let access = state
        .store
        .user_access(&user.id)
        .await?
        .ok_or(ApiError::InvalidCredentials)?;
    Ok(Json(TokenResponse {
        access_token: state.tokens.issue(&user.id, &user.username),
        token_type: "Bearer",
        expires_in: state.tokens.ttl().as_secs(),
        role: access.role.as_str(),
    }))
}
