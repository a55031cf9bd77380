//! Projects: `GET /projects` (the caller's, its personal one first), and for administrators
//! `/admin/projects` (make, list with members, add or change a member, remove one, set its
//! own cap on pending jobs, delete an empty project). A project's members launch in it (`POST /problem/<id>?project=`), read,
//! cancel and finish its jobs; its viewers read them (`GET /jobs?project=`, `GET /job/<id>`);
//! anyone else gets 404, as for another user's job.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use serde::Deserialize;
use serde_json::json;

use crate::api::accounts::json_body::parse;
use crate::api::wire::{
    MemberView, ProjectAccessView, ProjectDetail, ProjectList, UserProjectList, format_rfc3339,
};
use crate::api::{ApiError, AppState, Json, Path};
use crate::auth::AuthUser;
use crate::domain::audit::record_by;
use crate::store::{ProjectRecord, Role, StoreError};
use crate::violation::Violation;

/// The longest project name.
const MAX_NAME_CHARS: usize = 100;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/projects", get(mine))
        .route("/admin/projects", get(list).post(create))
        .route(
            "/admin/projects/{project_id}",
            axum::routing::delete(remove).patch(set_quota),
        )
        .route(
            "/admin/projects/{project_id}/members/{username}",
            put(set_member).delete(remove_member),
        )
}

async fn mine(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<Json<UserProjectList>, ApiError> {
    let mut projects = vec![ProjectAccessView {
        id: user.id.clone(),
        name: format!("{} (personal)", user.username),
        role: Role::Member.as_str(),
        personal: true,
    }];
    for (project, role) in state.store.user_projects(&user.id).await? {
        projects.push(ProjectAccessView {
            id: project.id,
            name: project.name,
            role: role.as_str(),
            personal: false,
        });
    }
    Ok(Json(UserProjectList { projects }))
}

async fn detail(state: &AppState, project: ProjectRecord) -> Result<ProjectDetail, ApiError> {
    let members = state.store.project_members(&project.id).await?;
    Ok(ProjectDetail {
        id: project.id,
        name: project.name,
        created_at: format_rfc3339(project.created_at),
        max_pending_jobs: project.max_pending_jobs,
        members: members
            .into_iter()
            .map(|member| MemberView {
                username: member.username,
                role: member.role.as_str(),
            })
            .collect(),
    })
}

async fn list(
    State(state): State<AppState>,
    _admin: AuthUser,
) -> Result<Json<ProjectList>, ApiError> {
    let mut projects = Vec::new();
    for project in state.store.projects().await? {
        projects.push(detail(&state, project).await?);
    }
    Ok(Json(ProjectList { projects }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewProject {
    name: String,
}

async fn create(
    State(state): State<AppState>,
    admin: AuthUser,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: NewProject = parse(&body, "{name}", &[])?;
    // Checked as sent, as the API's document states it; only then are spaces trimmed.
    let name = request.name.trim();
    if name.is_empty()
        || request.name.chars().count() > MAX_NAME_CHARS
        || request.name.chars().any(char::is_control)
    {
        return Err(invalid(
            "/name",
            format!("a project's name is 1 to {MAX_NAME_CHARS} printable characters"),
        ));
    }
    let project = match state.store.create_project(name).await {
        Ok(project) => project,
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::Conflict(format!(
                "a project is named {name:?} already"
            )));
        }
        Err(error) => return Err(error.into()),
    };
    record_by(
        &state,
        &admin,
        "project.created",
        &project.id,
        json!({"name": name}),
    )
    .await?;
    let view = detail(&state, project).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuotaChange {
    /// Absent or null: no cap of the project's own.
    #[serde(default)]
    max_pending_jobs: Option<u64>,
}

/// Sets a project's own cap on pending jobs: a launch into it must fit both its launcher's
/// quota and this one.
async fn set_quota(
    State(state): State<AppState>,
    admin: AuthUser,
    Path(project_id): Path<String>,
    body: Bytes,
) -> Result<Json<ProjectDetail>, ApiError> {
    let request: QuotaChange = parse(&body, "{max_pending_jobs: integer or null}", &[])?;
    if !state
        .store
        .set_project_quota(&project_id, request.max_pending_jobs)
        .await?
    {
        return Err(no_project(&project_id));
    }
    let project = find(&state, &project_id).await?;
    let detail_json =
        json!({"project": project.name, "max_pending_jobs": request.max_pending_jobs});
    record_by(
        &state,
        &admin,
        "project.quota_set",
        &project_id,
        detail_json,
    )
    .await?;
    Ok(Json(detail(&state, project).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Membership {
    role: String,
}

async fn set_member(
    State(state): State<AppState>,
    admin: AuthUser,
    Path((project_id, username)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<ProjectDetail>, ApiError> {
    let request: Membership = parse(&body, "{role}", &[])?;
    let role = match Role::parse(&request.role) {
        Some(role @ (Role::Member | Role::Viewer)) => role,
        _ => {
            return Err(invalid(
                "/role",
                format!(
                    "{:?} is not a role in a project: member or viewer",
                    request.role
                ),
            ));
        }
    };
    let project = find(&state, &project_id).await?;
    let user = state
        .store
        .user_by_name(&username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user {username:?}")))?;
    if !state
        .store
        .set_project_member(&project_id, &user.id, role)
        .await?
    {
        return Err(no_project(&project_id));
    }
    let detail_json = json!({"project": project.name, "username": username, "role": role.as_str()});
    record_by(
        &state,
        &admin,
        "project.member_set",
        &project_id,
        detail_json,
    )
    .await?;
    Ok(Json(detail(&state, project).await?))
}

async fn remove_member(
    State(state): State<AppState>,
    admin: AuthUser,
    Path((project_id, username)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let project = find(&state, &project_id).await?;
    let user = state
        .store
        .user_by_name(&username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user {username:?}")))?;
    if !state
        .store
        .remove_project_member(&project_id, &user.id)
        .await?
    {
        return Err(ApiError::NotFound(format!(
            "{username} is not in project {:?}",
            project.name
        )));
    }
    let detail_json = json!({"project": project.name, "username": username});
    record_by(
        &state,
        &admin,
        "project.member_removed",
        &project_id,
        detail_json,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn remove(
    State(state): State<AppState>,
    admin: AuthUser,
    Path(project_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let project = find(&state, &project_id).await?;
    match state.store.delete_project(&project_id).await {
        Ok(true) => {}
        Ok(false) => return Err(no_project(&project_id)),
        Err(StoreError::Conflict(why)) => return Err(ApiError::Conflict(why)),
        Err(error) => return Err(error.into()),
    }
    record_by(
        &state,
        &admin,
        "project.deleted",
        &project_id,
        json!({"name": project.name}),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn find(state: &AppState, project_id: &str) -> Result<ProjectRecord, ApiError> {
    state
        .store
        .projects()
        .await?
        .into_iter()
        .find(|project| project.id == project_id)
        .ok_or_else(|| no_project(project_id))
}

fn no_project(project_id: &str) -> ApiError {
    ApiError::NotFound(format!("no project {project_id:?}"))
}

fn invalid(pointer: &str, message: String) -> ApiError {
    ApiError::Validation {
        detail: "the project request is not valid".into(),
        errors: vec![Violation::new(pointer, message)],
    }
}
