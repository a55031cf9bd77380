//! Keys bound to a project: such a key launches, uploads and lists in its project (the
//! default where a request names none, a 403 where it names another), and reaches no job,
//! data file or experiment of another project, whether a path or a launch's body names it
//! (404, as for anyone's: [`within_key_project`]). A key bound to a shared project goes only
//! where projects are understood: the routes of jobs (their counts too), data files,
//! experiments, use cases, keys and webhook secrets, and the project's job feed. The plugin
//! registry is the server's: not a project's.

use axum::http::request::Parts;

use crate::api::{ApiError, AppState};
use crate::api_key::Scope;
use crate::auth::AuthUser;
use crate::domain::projects::{default_project, named_project, within_key_project};
use crate::store::ProjectOwned;

/// The routes a key bound to a shared project may take, by path prefix; `/jobs` and
/// `/jobs/events` and `/jobs/counts` exactly.
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
    let Some(project) = default_project(user) else {
        return Ok(());
    };
    let path = parts.uri.path();
    let shared = project != user.id;
    let routed = path == "/jobs"
        || path == "/jobs/events"
        || path == "/jobs/counts"
        || SHARED_PROJECT_ROUTES
            .iter()
            .any(|prefix| path.starts_with(prefix));
    if shared && (!routed || Scope::needed_for(&parts.method, path) == Scope::Publish) {
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
    let (kind, id) = if let Some(rest) = path.strip_prefix("/job/") {
        (ProjectOwned::Job, rest)
    } else if let Some(rest) = path.strip_prefix("/data_file/") {
        (ProjectOwned::DataFile, rest)
    } else if let Some(rest) = path.strip_prefix("/experiments/") {
        (ProjectOwned::Experiment, rest)
    } else {
        return Ok(());
    };
    // As the handler's `Path` will read it: percent-decoded.
    let id = id.split('/').next().unwrap_or_default();
    let id = percent_encoding::percent_decode_str(id).decode_utf8_lossy();
    within_key_project(state, user, kind, &id).await
}
