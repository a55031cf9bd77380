//! Projects' rules: the caller's role in a project, the project a launch goes to (`?project=`,
//! or the one its key is bound to, where the caller must be a member), and what a key bound
//! to a project reaches: no job, data file or experiment of another project, whether a path
//! or a launch's body names it (404, as for anyone's).

use super::ApiError;
use crate::auth::AuthUser;
use crate::state::Services;
use crate::store::{ProjectOwned, Role};

/// 404, as for anyone's, for a job, data file or experiment outside the project the
/// request's key is bound to; nothing where the key is not bound, or there is no such
/// thing (its handler says so).
pub async fn within_key_project(
    state: &Services,
    user: &AuthUser,
    kind: ProjectOwned,
    id: &str,
) -> Result<(), ApiError> {
    let Some(project) = default_project(user) else {
        return Ok(());
    };
    match state.store.project_of(kind, id).await? {
        // Things from before projects are their owner's: in the personal project.
        Some(found) if found.as_deref().unwrap_or(user.id.as_str()) != project => {
            let what = match kind {
                ProjectOwned::Job => "job",
                ProjectOwned::DataFile => "data file",
                ProjectOwned::Experiment => "experiment",
            };
            Err(ApiError::NotFound(format!("no {what} {id:?}")))
        }
        _ => Ok(()),
    }
}

/// The project a key launches and lists in where the request names none.
pub fn default_project(user: &AuthUser) -> Option<&str> {
    user.key.as_ref()?.project.as_deref()
}

/// The caller's role in a project: a member of its personal one (the project id that is its
/// own), else what the project says; 404 for a project it is not in.
pub async fn project_role(
    state: &Services,
    user: &AuthUser,
    project_id: &str,
) -> Result<Role, ApiError> {
    if project_id == user.id {
        return Ok(Role::Member);
    }
    state
        .store
        .user_projects(&user.id)
        .await?
        .into_iter()
        .find(|(project, _)| project.id == project_id)
        .map(|(_, role)| role)
        .ok_or_else(|| ApiError::NotFound(format!("no project {project_id:?}")))
}

/// `?project=`'s value, decoded, if the query has one.
pub fn named_project(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == "project")
        .map(|(_, value)| value.into_owned())
}

/// The project a launch goes to, if `?project=` (or the key's project) names one: the
/// caller must be a member.
pub async fn launch_project(
    state: &Services,
    user: &AuthUser,
    project_id: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let project_id = project_id.or(default_project(user));
    let Some(project_id) = project_id.filter(|project_id| *project_id != user.id) else {
        return Ok(None);
    };
    match project_role(state, user, project_id).await? {
        Role::Viewer => Err(ApiError::Forbidden(format!(
            "{} is a viewer of project {project_id:?}, and launching in it needs a member",
            user.username
        ))),
        _ => Ok(Some(project_id.to_owned())),
    }
}
