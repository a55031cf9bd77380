//! `/admin/users`: an administrator manages users over HTTP as `caseload user` does on the
//! host: list, create, change (role, disable, enable, password, revoke tokens, quotas) and
//! delete. Every change goes to the audit log.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::api::accounts::json_body::parse;
use crate::api::wire::{UserList, UserView};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::{AuthUser, hash_password};
use crate::domain::audit::record_by;
use crate::store::{Role, StoreError, UserChange, UserQuotas};
use crate::user_name;
use crate::violation::Violation;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/users", get(list).post(create))
        .route(
            "/admin/users/{username}",
            axum::routing::patch(change).delete(remove),
        )
}

async fn list(State(state): State<AppState>, _admin: AuthUser) -> Result<Json<UserList>, ApiError> {
    let users = state.store.users().await?;
    Ok(Json(UserList {
        users: users.iter().map(UserView::new).collect(),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewUser {
    username: String,
    password: String,
    #[serde(default)]
    role: Option<String>,
}

async fn create(
    State(state): State<AppState>,
    admin: AuthUser,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: NewUser = parse(&body, "{username, password, role?}", &[])?;
    let mut errors = Vec::new();
    let name = user_name::normalise(&request.username)
        .map_err(|why| errors.push(Violation::new("/username", why)))
        .unwrap_or_default();
    let name = name.as_str();
    if let Some(why) = user_name::password_problem(&request.password) {
        errors.push(Violation::new("/password", why));
    }
    let role = role_of(
        request.role.as_deref().unwrap_or("member"),
        "/role",
        &mut errors,
    );
    invalid_unless_empty(errors, "the new user is not valid")?;
    let role = role.unwrap_or(Role::Member);
    let password = request.password;
    let hash = state
        .run_login_work(move || hash_password(&password))
        .await?
        .map_err(|error| ApiError::Internal(error.to_string()))?;
    match state.store.create_user(name, &hash).await {
        Ok(_) => {}
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::Conflict(format!("user {name:?} exists already")));
        }
        Err(error) => return Err(error.into()),
    }
    if role != Role::Member {
        state
            .store
            .update_user(name, &UserChange::Role(role))
            .await?;
    }
    record_by(
        &state,
        &admin,
        "user.created",
        name,
        json!({"role": role.as_str()}),
    )
    .await?;
    let view = user_view(&state, name).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Change {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    disabled: Option<bool>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    revoke_tokens: Option<bool>,
    #[serde(default)]
    quotas: Option<QuotasChange>,
}

/// Replaces all three; one left out (or null) means the server's default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuotasChange {
    #[serde(default)]
    pending_jobs: Option<u64>,
    #[serde(default)]
    dataset_bytes: Option<u64>,
    #[serde(default)]
    output_bytes: Option<u64>,
}

async fn change(
    State(state): State<AppState>,
    admin: AuthUser,
    Path(username): Path<String>,
    body: Bytes,
) -> Result<Json<UserView>, ApiError> {
    let request: Change = parse(
        &body,
        "{role?, disabled?, password?, revoke_tokens?, quotas?}",
        &["quotas"],
    )?;
    let mut errors = Vec::new();
    let role = request
        .role
        .as_deref()
        .and_then(|role| role_of(role, "/role", &mut errors));
    if let Some(why) = request
        .password
        .as_deref()
        .and_then(user_name::password_problem)
    {
        errors.push(Violation::new("/password", why));
    }
    let nothing = request.role.is_none()
        && request.disabled.is_none()
        && request.password.is_none()
        && request.revoke_tokens != Some(true)
        && request.quotas.is_none();
    if nothing {
        errors.push(Violation::new(
            "",
            "change something: role, disabled, password, revoke_tokens or quotas",
        ));
    }
    if request.disabled == Some(true) && username == admin.username {
        errors.push(Violation::new(
            "/disabled",
            "an administrator cannot disable itself",
        ));
    }
    invalid_unless_empty(errors, "the change is not valid")?;
    let mut changes: Vec<UserChange> = Vec::new();
    let mut detail = Map::new();
    if let Some(role) = role {
        changes.push(UserChange::Role(role));
        detail.insert("role".into(), json!(role.as_str()));
    }
    match request.disabled {
        Some(true) => changes.push(UserChange::Disable),
        Some(false) => changes.push(UserChange::Enable),
        None => {}
    }
    if let Some(disabled) = request.disabled {
        detail.insert("disabled".into(), json!(disabled));
    }
    if let Some(password) = request.password {
        let hash = state
            .run_login_work(move || hash_password(&password))
            .await?
            .map_err(|error| ApiError::Internal(error.to_string()))?;
        changes.push(UserChange::Password(hash));
        detail.insert("password".into(), json!("reset"));
    }
    if request.revoke_tokens == Some(true) {
        changes.push(UserChange::RevokeTokens);
        detail.insert("revoke_tokens".into(), json!(true));
    }
    if let Some(quotas) = request.quotas {
        detail.insert(
            "quotas".into(),
            json!({
                "pending_jobs": quotas.pending_jobs,
                "dataset_bytes": quotas.dataset_bytes,
                "output_bytes": quotas.output_bytes,
            }),
        );
        changes.push(UserChange::Quotas(UserQuotas {
            pending_jobs: quotas.pending_jobs,
            dataset_bytes: quotas.dataset_bytes,
            output_bytes: quotas.output_bytes,
        }));
    }
    let Some(user) = state.store.user_by_name(&username).await? else {
        return Err(no_such_user(&username));
    };
    for change in &changes {
        let changed = state.store.update_user(&username, change).await;
        state.user_access.forget(&user.id);
        match changed {
            Ok(true) => {}
            Ok(false) => return Err(no_such_user(&username)),
            Err(StoreError::Conflict(why)) => return Err(ApiError::Conflict(why)),
            Err(error) => return Err(error.into()),
        }
    }
    record_by(
        &state,
        &admin,
        "user.changed",
        &username,
        Value::Object(detail),
    )
    .await?;
    Ok(Json(user_view(&state, &username).await?))
}

async fn remove(
    State(state): State<AppState>,
    admin: AuthUser,
    Path(username): Path<String>,
) -> Result<StatusCode, ApiError> {
    if username == admin.username {
        return Err(ApiError::Conflict(
            "an administrator cannot delete itself".into(),
        ));
    }
    match state.store.delete_user(&username).await {
        Ok(true) => {}
        Ok(false) => return Err(no_such_user(&username)),
        Err(StoreError::Conflict(why)) => return Err(ApiError::Conflict(why)),
        Err(error) => return Err(error.into()),
    }
    record_by(&state, &admin, "user.deleted", &username, json!({})).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn role_of(text: &str, pointer: &str, errors: &mut Vec<Violation>) -> Option<Role> {
    let role = Role::parse(text);
    if role.is_none() {
        errors.push(Violation::new(
            pointer,
            format!("{text:?} is not a role: admin, member or viewer"),
        ));
    }
    role
}

fn invalid_unless_empty(errors: Vec<Violation>, detail: &str) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Validation {
            detail: detail.into(),
            errors,
        })
    }
}

fn no_such_user(username: &str) -> ApiError {
    ApiError::NotFound(format!("no user {username:?}"))
}

async fn user_view(state: &AppState, username: &str) -> Result<UserView, ApiError> {
    let users = state.store.users().await?;
    users
        .iter()
        .find(|user| user.username == username)
        .map(UserView::new)
        .ok_or_else(|| no_such_user(username))
}
