//! The bearer token on a request, checked: handlers that take an [`AuthUser`] run only for a
//! valid token (or API key, within its scopes) whose user may still use it; every other
//! request gets a 401, or a 403 naming the scope a key lacks.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::api::accounts::key_project::confine;
use crate::api::accounts::oidc_user::oidc_user;
use crate::api::{ApiError, AppState};
use crate::api_key::{KEY_PREFIX, Scope};
use crate::auth::AuthUser;
use crate::oidc::OidcVerifier;
use crate::store::Role;

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
        let mut user = if token.starts_with(KEY_PREFIX) {
            state.api_keys.check(&state.store, token).await?
        } else if let Some(verifier) = &state.oidc
            && OidcVerifier::claims_token(token)
        {
            oidc_user(state, verifier, token).await?
        } else {
            state
                .tokens
                .verify(token)
                .ok_or(ApiError::InvalidToken("the token is invalid or expired"))?
        };
        let access = state.user_access.check(state.store.as_ref(), &user).await?;
        user.role = access.role;
        user.admin = access.role == Role::Admin;
        let needed = Scope::needed_for(&parts.method, parts.uri.path());
        if !needed.permitted_to(access.role, parts.uri.path()) {
            let holders = if needed.needs_admin() {
                "an administrator"
            } else {
                "a member or an administrator"
            };
            return Err(ApiError::Forbidden(format!(
                "this request needs the {} right, which {holders} has; {} is a {}",
                needed.as_str(),
                user.username,
                access.role.as_str()
            )));
        }
        if let Some(key) = &user.key {
            if !needed.granted_by(&key.scopes) {
                let has: Vec<&str> = key.scopes.iter().map(|scope| scope.as_str()).collect();
                return Err(ApiError::Forbidden(format!(
                    "this API key (cl_{}) lacks the {} scope this request needs; it has {}",
                    key.id,
                    needed.as_str(),
                    has.join(", ")
                )));
            }
            // A key acts as an administrator only with a scope that needs one.
            user.admin &= key.scopes.iter().any(|scope| scope.needs_admin());
        }
        confine(state, &user, parts).await?;
        tracing::Span::current().record("user", user.username.as_str());
        Ok(user)
    }
}
