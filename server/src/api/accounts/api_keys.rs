//! `POST /api_keys`, `GET /api_keys`, `DELETE /api_keys/<id>`: keys a script authenticates
//! with instead of a person's password. The key's text is answered once, at creation; the
//! store keeps a hash of its secret. A key's scopes never go above its owner's role.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use serde::Deserialize;

use serde_json::json;

use crate::api::wire::{ApiKeyCreated, ApiKeyList, ApiKeyView};
use crate::api::{ApiError, AppState, Json, Path};
use crate::api_key::{self, Scope};
use crate::auth::AuthUser;
use crate::domain::audit::record_by;
use crate::domain::projects::default_project;
use crate::domain::projects::project_role;
use crate::store::{Role, now_millis};
use crate::violation::Violation;

/// The longest name a key may have.
const MAX_NAME_CHARS: usize = 100;

/// The most keys one user may hold.
const MAX_KEYS_PER_USER: usize = 100;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api_keys", get(list).post(create))
        .route("/api_keys/{key_id}", delete(revoke))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateKey {
    name: String,
    scopes: Vec<String>,
    #[serde(default)]
    expires_at: Option<String>,
    #[serde(default)]
    project: Option<String>,
}

async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: CreateKey = crate::api::accounts::json_body::parse(
        &body,
        "{name, scopes, expires_at?, project?}",
        &[],
    )?;
    let now = now_millis();
    let (scopes, expires_at) = checked(&user, &request, now)?;
    let project = bound_project(&state, &user, request.project.as_deref(), &scopes).await?;
    let held = state.store.api_keys(Some(&user.id)).await?.len();
    if held >= MAX_KEYS_PER_USER {
        return Err(ApiError::Conflict(format!(
            "{} holds {held} API keys, the most one user may; revoke one first",
            user.username
        )));
    }
    let mut new = api_key::generate(
        &user.id,
        request.name.trim(),
        &scopes,
        expires_at,
        project.as_deref(),
        now,
    );
    state.store.create_api_key(&new.record).await?;
    new.record.owner_name = user.username.clone();
    let prefix = format!("cl_{}", new.record.id);
    let detail = json!({
        "owner": user.username,
        "name": new.record.name,
        "scopes": new.record.scopes,
        "project": project,
    });
    record_by(&state, &user, "api_key.created", &prefix, detail).await?;
    tracing::info!(key = %format!("cl_{}", new.record.id), user = %user.username, "API key created");
    Ok((
        StatusCode::CREATED,
        Json(ApiKeyCreated {
            key: new.text,
            view: ApiKeyView::new(&new.record),
        }),
    )
        .into_response())
}

/// The project a new key is bound to: one the caller is in (a viewer's key of it only reads),
/// and the project of the key the request came with, if that one is bound: a bound key
/// makes no key that reaches further than itself.
async fn bound_project(
    state: &AppState,
    user: &AuthUser,
    named: Option<&str>,
    scopes: &[Scope],
) -> Result<Option<String>, ApiError> {
    let inherited = default_project(user);
    let project = match (named, inherited) {
        (Some(named), Some(inherited)) if named != inherited => {
            return Err(ApiError::Forbidden(format!(
                "this API key is bound to project {inherited:?}, so the keys it makes are too"
            )));
        }
        (named, inherited) => match named.or(inherited) {
            Some(project) => project,
            None => return Ok(None),
        },
    };
    let invalid = |message: String| ApiError::Validation {
        detail: "the key request is not valid".into(),
        errors: vec![Violation::new("/project", message)],
    };
    let role = match project_role(state, user, project).await {
        Ok(role) => role,
        Err(ApiError::NotFound(_)) => {
            return Err(invalid(format!(
                "{} is in no project {project:?} (GET /projects lists its projects)",
                user.username
            )));
        }
        Err(error) => return Err(error),
    };
    if role == Role::Viewer && scopes.iter().any(|scope| *scope > Scope::Read) {
        return Err(invalid(format!(
            "{} is a viewer of project {project:?}, so a key bound to it can only read",
            user.username
        )));
    }
    Ok(Some(project.to_owned()))
}

/// The key's scopes and expiry, or every problem with the request.
fn checked(
    user: &AuthUser,
    request: &CreateKey,
    now: i64,
) -> Result<(Vec<Scope>, Option<i64>), ApiError> {
    let mut errors = Vec::new();
    // Checked as sent, as the API's document states it; only then are spaces trimmed.
    let name = request.name.trim();
    if name.is_empty()
        || request.name.chars().count() > MAX_NAME_CHARS
        || request.name.chars().any(char::is_control)
    {
        errors.push(Violation::new(
            "/name",
            format!("a key's name is 1 to {MAX_NAME_CHARS} printable characters"),
        ));
    }
    if request.scopes.is_empty() {
        errors.push(Violation::new(
            "/scopes",
            "name at least one of read, launch, publish, admin",
        ));
    }
    let mut scopes = Vec::new();
    for (index, text) in request.scopes.iter().enumerate() {
        match Scope::parse(text) {
            None => errors.push(Violation::new(
                format!("/scopes/{index}"),
                format!("unknown scope {text:?}; scopes are read, launch, publish, admin"),
            )),
            Some(scope) if scope > Scope::highest_for(user.role) => errors.push(Violation::new(
                format!("/scopes/{index}"),
                format!(
                    "{} is a {}, so its keys cannot have the {text} scope",
                    user.username,
                    user.role.as_str()
                ),
            )),
            Some(scope)
                if user
                    .key
                    .as_ref()
                    .is_some_and(|key| !scope.granted_by(&key.scopes)) =>
            {
                errors.push(Violation::new(
                    format!("/scopes/{index}"),
                    format!("the key this request came with does not have the {text} scope"),
                ));
            }
            Some(scope) => scopes.push(scope),
        }
    }
    scopes.sort_unstable();
    scopes.dedup();
    // A key made with a key that expires expires no later: a key cannot outlive itself by
    // minting one without an end.
    let minting_expiry = user
        .key
        .as_ref()
        .and(user.expires_ms)
        .map(|expires_ms| i64::try_from(expires_ms).unwrap_or(i64::MAX));
    let expires_at = match &request.expires_at {
        None => minting_expiry,
        Some(text) => match chrono::DateTime::parse_from_rfc3339(text) {
            Ok(at) if minting_expiry.is_some_and(|limit| at.timestamp_millis() > limit) => {
                errors.push(Violation::new(
                    "/expires_at",
                    format!(
                        "the key this request came with expires at {}; a key it makes expires \
                         no later",
                        chrono::DateTime::from_timestamp_millis(minting_expiry.unwrap_or(0))
                            .map(|at| at.to_rfc3339())
                            .unwrap_or_default()
                    ),
                ));
                None
            }
            Ok(at) if at.timestamp_millis() > now => Some(at.timestamp_millis()),
            Ok(_) => {
                errors.push(Violation::new("/expires_at", "the time has passed"));
                None
            }
            Err(error) => {
                errors.push(Violation::new(
                    "/expires_at",
                    format!("not an RFC 3339 time ({error}), e.g. 2027-01-31T00:00:00Z"),
                ));
                None
            }
        },
    };
    if errors.is_empty() {
        Ok((scopes, expires_at))
    } else {
        Err(ApiError::Validation {
            detail: "the key request is not valid".into(),
            errors,
        })
    }
}

async fn list(State(state): State<AppState>, user: AuthUser) -> Result<Json<ApiKeyList>, ApiError> {
    let keys = state.store.api_keys(Some(&user.id)).await?;
    Ok(Json(ApiKeyList {
        api_keys: keys.iter().map(ApiKeyView::new).collect(),
    }))
}

/// The owner revokes its key; an administrator any key. A key bound to a project acts within
/// it: it revokes only its own user's keys bound to the same project, whatever its scopes.
async fn revoke(
    State(state): State<AppState>,
    user: AuthUser,
    Path(key_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = key_id.strip_prefix(api_key::KEY_PREFIX).unwrap_or(&key_id);
    let not_found = || ApiError::NotFound(format!("no API key {key_id:?}"));
    let bound = default_project(&user);
    if let Some(project) = bound {
        let record = state.store.api_key(id).await?.ok_or_else(not_found)?;
        if record.owner_id != user.id || record.project_id.as_deref() != Some(project) {
            return Err(not_found());
        }
    }
    let owner = (!user.admin || bound.is_some()).then_some(user.id.as_str());
    if state.store.revoke_api_key(id, owner).await? {
        state.api_keys.forget(id);
        record_by(
            &state,
            &user,
            "api_key.revoked",
            &format!("cl_{id}"),
            json!({}),
        )
        .await?;
        tracing::info!(key = %format!("cl_{id}"), user = %user.username, "API key revoked");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found())
    }
}
