//! `caseload user ...`: users managed on the host, beside a running server, as
//! `/admin/users` does over HTTP. Every change goes to the audit log, done by `host`.

use std::io::BufRead;

use anyhow::{Context, bail};
use serde_json::json;

use crate::cli::{AdminSwitch, UserCommand};
use caseload::auth::hash_password;
use caseload::config::StorageArgs;
use caseload::open_existing_store;
use caseload::store::{AuditEvent, Role, StoreError, UserChange, UserQuotas};
use caseload::user_name;

/// Who the audit log says did what a command on the host did.
pub const HOST: &str = "host";

/// `caseload user add NAME --password-stdin [--role ROLE]`.
async fn add_user(storage: &StorageArgs, name: &str, role: Role) -> anyhow::Result<()> {
    let name = &user_name::normalise(name).map_err(|why| anyhow::anyhow!(why))?;
    // The database first: a wrong --data-dir is told before a password is asked for.
    let store = open_existing_store(storage).await?;
    let password = read_password()?;
    let hash = hash_password(&password)?;
    match store.create_user(name, &hash).await {
        Ok(_) => {
            if role != Role::Member {
                store.update_user(name, &UserChange::Role(role)).await?;
            }
            let what = match role {
                Role::Admin => "an administrator",
                Role::Member => "a member",
                Role::Viewer => "a viewer",
            };
            let detail = json!({"role": role.as_str()});
            store
                .record_audit(&AuditEvent::now(HOST, "user.created", name, detail))
                .await?;
            println!("created user {name}, {what}");
            Ok(())
        }
        Err(StoreError::Conflict(_)) => bail!("user {name:?} exists already"),
        Err(error) => Err(error.into()),
    }
}

/// `caseload user list`: every user, one a line (name, role, enabled or disabled, creation
/// time), as `GET /admin/users` lists them.
async fn list_users(storage: &StorageArgs) -> anyhow::Result<()> {
    let store = open_existing_store(storage).await?;
    for user in store.users().await? {
        let created = chrono::DateTime::from_timestamp_millis(user.created_at)
            .map_or_else(|| "-".to_owned(), |at| at.to_rfc3339());
        let state = if user.disabled { "disabled" } else { "enabled" };
        println!(
            "{}\t{}\t{state}\tcreated {created}",
            user.username,
            user.role.as_str()
        );
    }
    Ok(())
}

/// `caseload user list | add | admin | role | passwd | disable | enable | revoke | quota |
/// delete`.
pub async fn change_user(storage: &StorageArgs, command: &UserCommand) -> anyhow::Result<()> {
    let (name, change, done) = match command {
        UserCommand::List => return list_users(storage).await,
        UserCommand::Add {
            name, admin, role, ..
        } => {
            let role = if *admin { Role::Admin } else { *role };
            return add_user(storage, name, role).await;
        }
        UserCommand::Admin { name, switch } => (
            name,
            UserChange::Role(match switch {
                AdminSwitch::On => Role::Admin,
                AdminSwitch::Off => Role::Member,
            }),
            match switch {
                AdminSwitch::On => "made an administrator of",
                AdminSwitch::Off => "took administration from",
            },
        ),
        UserCommand::Role { name, role } => (name, UserChange::Role(*role), "set the role of"),
        UserCommand::Delete { name } => {
            let store = open_existing_store(storage).await?;
            return match store.delete_user(name).await {
                Ok(true) => {
                    let event = AuditEvent::now(HOST, "user.deleted", name, json!({}));
                    store.record_audit(&event).await?;
                    println!("deleted user {name} with its jobs and data files");
                    Ok(())
                }
                Ok(false) => bail!("no user {name:?}"),
                Err(StoreError::Conflict(why)) => bail!("{why}"),
                Err(error) => Err(error.into()),
            };
        }
        UserCommand::Passwd { name, .. } => (
            name,
            UserChange::Password(hash_password(&read_password()?)?),
            "set the password of",
        ),
        UserCommand::Disable { name } => (name, UserChange::Disable, "disabled"),
        UserCommand::Enable { name } => (name, UserChange::Enable, "enabled"),
        UserCommand::Revoke { name } => (name, UserChange::RevokeTokens, "revoked the tokens of"),
        UserCommand::Quota {
            name,
            pending_jobs,
            dataset_bytes,
            output_bytes,
        } => (
            name,
            UserChange::Quotas(UserQuotas {
                pending_jobs: *pending_jobs,
                dataset_bytes: *dataset_bytes,
                output_bytes: *output_bytes,
            }),
            "set the quotas of",
        ),
    };
    let store = open_existing_store(storage).await?;
    match store.update_user(name, &change).await {
        Ok(true) => {}
        Ok(false) => bail!("no user {name:?}"),
        Err(StoreError::Conflict(why)) => bail!("{why}"),
        Err(error) => return Err(error.into()),
    }
    let detail = match &change {
        UserChange::Role(role) => json!({"role": role.as_str()}),
        UserChange::Disable => json!({"disabled": true}),
        UserChange::Enable => json!({"disabled": false}),
        UserChange::Password(_) => json!({"password": "reset"}),
        UserChange::RevokeTokens => json!({"revoke_tokens": true}),
        UserChange::Quotas(quotas) => json!({"quotas": {
            "pending_jobs": quotas.pending_jobs,
            "dataset_bytes": quotas.dataset_bytes,
            "output_bytes": quotas.output_bytes,
        }}),
    };
    let event = AuditEvent::now(HOST, "user.changed", name, detail);
    store.record_audit(&event).await?;
    println!("{done} user {name}");
    Ok(())
}

/// A password from the first line of standard input.
fn read_password() -> anyhow::Result<String> {
    let mut password = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut password)
        .context("cannot read the password from standard input")?;
    let password = password.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        bail!("the password read from standard input is empty");
    }
    if let Some(why) = user_name::password_problem(password) {
        bail!("{why}");
    }
    Ok(password.to_owned())
}
