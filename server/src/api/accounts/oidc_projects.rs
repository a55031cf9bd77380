//! The projects a single sign-on user is in, kept to its token's projects claim
//! (`--oidc-projects-claim`): where the server reads one, the identity provider says who is
//! in which project, and the memberships follow it. An entry is a project's name, or
//! `name:member` / `name:viewer` (a member by default); a name no project has is skipped,
//! since projects are made by administrators. Applied when a token's claim differs from the
//! one last applied for the user on this replica.

use serde_json::json;

use crate::api::{ApiError, AppState};
use crate::domain::audit::record;
use crate::oidc::OidcVerifier;
use crate::store::{Role, User};

/// Makes the user's memberships those `entries` name.
pub async fn follow_projects_claim(
    state: &AppState,
    verifier: &OidcVerifier,
    user: &User,
    entries: &[String],
) -> Result<(), ApiError> {
    if !verifier.projects_changed(&user.id, entries) {
        return Ok(());
    }
    let projects = state.store.projects().await?;
    let mut wanted: Vec<(String, Role)> = Vec::new();
    for entry in entries {
        let (name, role) = match entry.rsplit_once(':') {
            Some((name, "viewer")) => (name, Role::Viewer),
            Some((name, "member")) => (name, Role::Member),
            _ => (entry.as_str(), Role::Member),
        };
        match projects.iter().find(|project| project.name == name) {
            Some(project) => wanted.push((project.id.clone(), role)),
            None => tracing::warn!(
                user = %user.username,
                project = name,
                "the token's projects claim names no project; skipped"
            ),
        }
    }
    let current = state.store.user_projects(&user.id).await?;
    for (project_id, role) in &wanted {
        let same = current
            .iter()
            .any(|(project, held)| project.id == *project_id && held == role);
        if !same
            && state
                .store
                .set_project_member(project_id, &user.id, *role)
                .await?
        {
            let detail = json!({"username": user.username, "role": role.as_str(), "via": "oidc"});
            record(state, "oidc", "project.member_set", project_id, detail).await?;
        }
    }
    for (project, _) in &current {
        let kept = wanted
            .iter()
            .any(|(project_id, _)| *project_id == project.id);
        if !kept
            && state
                .store
                .remove_project_member(&project.id, &user.id)
                .await?
        {
            let detail = json!({"project": project.name, "username": user.username, "via": "oidc"});
            record(state, "oidc", "project.member_removed", &project.id, detail).await?;
        }
    }
    verifier.projects_applied(&user.id, entries);
    Ok(())
}
