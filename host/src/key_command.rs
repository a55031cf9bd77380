//! `caseload key create | list | revoke`: API keys managed on the host, as `/api_keys` does
//! over HTTP, for an operator without a token (or a user the server has no password for).

use anyhow::bail;
use serde_json::json;

use crate::cli::KeyCommand;
use crate::user_command::HOST;
use caseload::api_key::{self, Scope};
use caseload::config::StorageArgs;
use caseload::open_existing_store;
use caseload::store::{AuditEvent, Role, now_millis};

pub async fn manage_keys(storage: &StorageArgs, command: &KeyCommand) -> anyhow::Result<()> {
    let store = open_existing_store(storage).await?;
    match command {
        KeyCommand::Create {
            user,
            name,
            scopes,
            expires_in_days,
            project,
        } => {
            let Some(owner) = store.user_by_name(user).await? else {
                bail!("no user {user:?}");
            };
            let Some(access) = store.user_access(&owner.id).await? else {
                bail!("no user {user:?}");
            };
            let mut granted = Vec::new();
            for text in scopes {
                match Scope::parse(text.trim()) {
                    None => {
                        bail!("unknown scope {text:?}; scopes are read, launch, publish, admin")
                    }
                    Some(scope) if scope > Scope::highest_for(access.role) => bail!(
                        "{user} is a {}, so its keys cannot have {text}",
                        access.role.as_str()
                    ),
                    Some(scope) => granted.push(scope),
                }
            }
            granted.sort_unstable();
            granted.dedup();
            let name = name.trim();
            if name.is_empty() || name.chars().count() > 100 {
                bail!("a key's name is 1 to 100 characters");
            }
            let now = now_millis();
            let expires_at =
                expires_in_days.map(|days| now + i64::from(days) * 24 * 60 * 60 * 1000);
            if let Some(project) = project.as_deref().filter(|project| *project != owner.id) {
                let projects = store.user_projects(&owner.id).await?;
                match projects.iter().find(|(found, _)| found.id == project) {
                    None => bail!("{user} is in no project {project:?}"),
                    Some((_, Role::Viewer)) if granted.iter().any(|scope| *scope > Scope::Read) => {
                        bail!("{user} is a viewer of project {project:?}, so its key can only read")
                    }
                    Some(_) => {}
                }
            }
            let new = api_key::generate(
                &owner.id,
                name,
                &granted,
                expires_at,
                project.as_deref(),
                now,
            );
            store.create_api_key(&new.record).await?;
            let prefix = format!("cl_{}", new.record.id);
            let detail = json!({
                "owner": user,
                "name": name,
                "scopes": new.record.scopes,
                "project": project,
            });
            let event = AuditEvent::now(HOST, "api_key.created", &prefix, detail);
            store.record_audit(&event).await?;
            eprintln!(
                "created key cl_{} for {user} ({}); it is shown this once:",
                new.record.id,
                new.record.scopes.join(", ")
            );
            println!("{}", new.text);
        }
        KeyCommand::List { user } => {
            let owner = match user {
                None => None,
                Some(user) => match store.user_by_name(user).await? {
                    Some(owner) => Some(owner.id),
                    None => bail!("no user {user:?}"),
                },
            };
            for key in store.api_keys(owner.as_deref()).await? {
                let when = |millis: Option<i64>| {
                    millis
                        .and_then(chrono::DateTime::from_timestamp_millis)
                        .map_or_else(|| "-".to_owned(), |at| at.to_rfc3339())
                };
                println!(
                    "cl_{}\t{}\t{}\t{}\tproject {}\tcreated {}\texpires {}\tlast used {}",
                    key.id,
                    key.owner_name,
                    key.name,
                    key.scopes.join(","),
                    key.project_id.as_deref().unwrap_or("-"),
                    when(Some(key.created_at)),
                    when(key.expires_at),
                    when(key.last_used_at)
                );
            }
        }
        KeyCommand::Revoke { id } => {
            let bare = id.strip_prefix(api_key::KEY_PREFIX).unwrap_or(id);
            if !store.revoke_api_key(bare, None).await? {
                bail!("no API key {id:?}");
            }
            let event = AuditEvent::now(HOST, "api_key.revoked", &format!("cl_{bare}"), json!({}));
            store.record_audit(&event).await?;
            println!("revoked key cl_{bare}; it stops within seconds on every replica");
        }
    }
    Ok(())
}
