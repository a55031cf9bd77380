//! `GET /webhook_secret` and `POST /webhook_secret`: the secret for verifying the signatures
//! of the caller's jobs' callbacks, or with `?project=` (or a key bound to one) of a shared
//! project's jobs, whoever launched them; made on first use, a new one on `POST`. A
//! project's secret is its members' (viewers neither read nor rotate it).

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::routing::get;
use serde::Serialize;
use serde_json::json;

use crate::api::{ApiError, AppState, Json};
use crate::auth::AuthUser;
use crate::domain::audit::record_by;
use crate::domain::projects::default_project;
use crate::domain::projects::{named_project, project_role};
use crate::store::{Role, SecretHolder};
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
    RawQuery(query): RawQuery,
) -> Result<Json<WebhookSecret>, ApiError> {
    secret(&state, &user, query.as_deref(), false).await
}

/// A new secret: the old one stops signing at once.
async fn rotate(
    State(state): State<AppState>,
    user: AuthUser,
    RawQuery(query): RawQuery,
) -> Result<Json<WebhookSecret>, ApiError> {
    secret(&state, &user, query.as_deref(), true).await
}

async fn secret(
    state: &AppState,
    user: &AuthUser,
    query: Option<&str>,
    rotate: bool,
) -> Result<Json<WebhookSecret>, ApiError> {
    let named = named_project(query);
    let project = named.as_deref().or(default_project(user));
    let holder = match project.filter(|project| *project != user.id) {
        None => SecretHolder::User(&user.id),
        Some(project) => {
            if project_role(state, user, project).await? == Role::Viewer {
                return Err(ApiError::Forbidden(format!(
                    "{} is a viewer of project {project:?}, and its webhook secret is its \
                     members'",
                    user.username
                )));
            }
            SecretHolder::Project(project)
        }
    };
    let secret = state
        .store
        .webhook_secret(holder, &new_secret(), rotate)
        .await?
        .ok_or(ApiError::InvalidToken("the token's user no longer exists"))?;
    if rotate {
        // The secret itself is never logged, only that it changed and whose it is.
        let target = match project.filter(|project| *project != user.id) {
            None => format!("user {}", user.username),
            Some(project) => format!("project {project}"),
        };
        record_by(state, user, "webhook_secret.rotated", &target, json!({})).await?;
    }
    Ok(Json(WebhookSecret { secret }))
}
