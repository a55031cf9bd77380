//! The user a single sign-on token acts for: made on its first request (a member, unless the
//! role claim says otherwise), its role kept to the claim's on each request, and its
//! projects to the projects claim's where the server reads one. A name that
//! belongs to a local user (one with a password) is not taken over.

use std::sync::Arc;

use serde_json::json;

use crate::api::accounts::oidc_projects::follow_projects_claim;
use crate::api::{ApiError, AppState};
use crate::auth::AuthUser;
use crate::domain::audit::record;
use crate::oidc::{NO_PASSWORD, OidcVerifier};
use crate::store::{Role, StoreError, UserChange};

pub async fn oidc_user(
    state: &AppState,
    verifier: &Arc<OidcVerifier>,
    token: &str,
) -> Result<AuthUser, ApiError> {
    let identity = verifier
        .verify(token)
        .await
        .map_err(|refused| ApiError::InvalidToken(refused.0))?;
    let role = identity.role.as_deref().and_then(|claimed| {
        let role = Role::parse(claimed);
        if role.is_none() {
            tracing::warn!(user = %identity.username, claimed, "the role claim names no role; ignored");
        }
        role
    });
    let name = identity.username.as_str();
    let user = match state.store.user_by_name(name).await? {
        Some(user) if user.password_hash != NO_PASSWORD => {
            return Err(ApiError::InvalidToken(
                "the token's user name belongs to a local user of this server",
            ));
        }
        Some(user) => {
            if let Some(role) = role {
                let current = state
                    .store
                    .user_access(&user.id)
                    .await?
                    .map(|access| access.role);
                if current != Some(role) {
                    change_role(state, name, role).await?;
                    state.user_access.forget(&user.id);
                }
            }
            user
        }
        None => match state.store.create_user(name, NO_PASSWORD).await {
            Ok(user) => {
                let role = role.unwrap_or(Role::Member);
                if role != Role::Member {
                    change_role(state, name, role).await?;
                }
                let detail = json!({"role": role.as_str(), "via": "oidc"});
                record(state, "oidc", "user.created", name, detail).await?;
                user
            }
            // Its first two requests came together: the other made it.
            Err(StoreError::Conflict(_)) => state
                .store
                .user_by_name(name)
                .await?
                .ok_or(ApiError::InvalidToken("the token's user cannot be made"))?,
            Err(error) => return Err(error.into()),
        },
    };
    if let Some(entries) = &identity.projects {
        follow_projects_claim(state, verifier, &user, entries).await?;
    }
    Ok(AuthUser {
        id: user.id,
        username: user.username,
        issued_ms: identity.issued_ms,
        expires_ms: Some(identity.expires_ms),
        admin: false,
        role: Role::Viewer,
        key: None,
    })
}

async fn change_role(state: &AppState, name: &str, role: Role) -> Result<(), ApiError> {
    match state.store.update_user(name, &UserChange::Role(role)).await {
        Ok(_) => {
            record(
                state,
                "oidc",
                "user.changed",
                name,
                json!({"role": role.as_str()}),
            )
            .await
        }
        // The last administrator keeps its role whatever the claim says.
        Err(StoreError::Conflict(_)) => Ok(()),
        Err(error) => Err(error.into()),
    }
}
