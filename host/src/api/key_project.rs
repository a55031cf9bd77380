//! Keys bound to a project: such a key launches, uploads and lists in its project (the
//! default where a request names none, a 403 where it names another), and reads no job or
//! data file of another project (404, as for anyone's). A key bound to a shared project
//! goes only where projects are understood: the routes of jobs, data files, experiments, use
//! cases, keys and webhook secrets; a user's job feed and counts are its own, not a
//! project's.

use axum::http::request::Parts;

use super::projects::named_project;
use super::{ApiError, AppState};
use crate::auth::AuthUser;
use crate::store::ProjectOwned;

/// The routes a key bound to a shared project may take, by path prefix; `/jobs` exactly.
const SHARED_PROJECT_ROUTES: [&str; 9] = [
    "/experiments",
    "/problem/",
    "/problems",
    "/data_file",
    "/job/",
    "/projects",
    "/api_keys",
    "/service",
    "/webhook_secret",
];

/// Refuses what a request's project-bound key may not do; nothing for other requests.
pub async fn confine(state: &AppState, user: &AuthUser, parts: &Parts) -> Result<(), ApiError> {
    let Some(project) = user.key.as_ref().and_then(|key| key.project.as_deref()) else {
        return Ok(());
    };
    let path = parts.uri.path();
    if project != user.id
        && path != "/jobs"
        && !SHARED_PROJECT_ROUTES
            .iter()
            .any(|prefix| path.starts_with(prefix))
    {
        return Err(ApiError::Forbidden(format!(
            "this API key is bound to project {project:?}, and {path} is not a project's; \
             use a key that is not bound to one"
        )));
    }
    if let Some(named) = named_project(parts.uri.query())
        && named != project
    {
        return Err(ApiError::Forbidden(format!(
            "this API key is bound to project {project:?}, not {named:?}"
        )));
    }
    let (kind, id, what) = if let Some(rest) = path.strip_prefix("/job/") {
        (ProjectOwned::Job, rest, "job")
    } else if let Some(rest) = path.strip_prefix("/data_file/") {
        (ProjectOwned::DataFile, rest, "data file")
    } else if let Some(rest) = path.strip_prefix("/experiments/") {
        (ProjectOwned::Experiment, rest, "experiment")
    } else {
        return Ok(());
    };
    let id = id.split('/').next().unwrap_or_default();
    match state.store.project_of(kind, id).await? {
        // Jobs from before projects are their owner's: in the personal project.
        Some(found) if found.as_deref().unwrap_or(user.id.as_str()) != project => {
            Err(ApiError::NotFound(format!("no {what} {id:?}")))
        }
        _ => Ok(()),
    }
}

/// The project a key launches and lists in where the request names none.
pub fn default_project(user: &AuthUser) -> Option<&str> {
    user.key.as_ref()?.project.as_deref()
}
