//! The bearer token on a request, checked: handlers that take an [`AuthUser`] run only for a
//! valid token whose user may still use it, and every other request gets a 401.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::{ApiError, AppState};
use crate::auth::AuthUser;

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or(ApiError::MissingToken)?;
        let token = header
            .to_str()
            .ok()
            .and_then(|value| {
                let (scheme, token) = value.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .ok_or(ApiError::InvalidToken(
                "the Authorization header is not 'Bearer <token>'",
            ))?;
        let mut user = state
            .tokens
            .verify(token)
            .ok_or(ApiError::InvalidToken("the token is invalid or expired"))?;
        let access = state.user_access.check(state.store.as_ref(), &user).await?;
        user.admin = access.admin;
        Ok(user)
    }
}
