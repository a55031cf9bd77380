//! The schema's version: whether a server applies the migrations it lacks when it opens the
//! store, or requires them applied already (`serve --no-migrate`, after `caseload migrate`).

use super::types::StoreError;

/// What opening the store does about migrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migrations {
    /// Applies those not applied yet (one replica at a time).
    Apply,
    /// Applies none, and refuses a database that lacks some.
    Require,
}

/// The newest migration this build knows (both backends number theirs alike).
pub fn latest_migration() -> i64 {
    SQLITE_MIGRATIONS.last().map_or(0, |(version, _)| *version)
}

/// The migrations of this build that `applied` lacks, oldest first.
pub fn missing_migrations(applied: &[i64]) -> Vec<i64> {
    SQLITE_MIGRATIONS
        .iter()
        .map(|(version, _)| *version)
        .filter(|version| !applied.contains(version))
        .collect()
}

/// One line for the migrations a start applied (each is logged at debug level): a first
/// start applies them all, and says so once.
pub(super) fn log_applied(applied: &[i64]) {
    match (applied.first(), applied.last()) {
        (Some(first), Some(last)) if first == last => {
            tracing::info!(version = first, "applied database migration {first}");
        }
        (Some(first), Some(last)) => tracing::info!(
            count = applied.len(),
            "applied {} database migrations ({first} to {last})",
            applied.len()
        ),
        _ => {}
    }
}

/// Refuses a database that has not applied every migration of this build.
pub(super) fn require(applied: &[i64]) -> Result<(), StoreError> {
    let missing = missing_migrations(applied);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(StoreError::SchemaBehind {
            message: behind(&missing),
            missing,
        })
    }
}

/// What a server started with `--no-migrate` says of a database that lacks `missing`.
pub(super) fn behind(missing: &[i64]) -> String {
    let (Some(first), Some(last)) = (missing.first(), missing.last()) else {
        return "the database's schema is current".to_owned();
    };
    let which = if first == last {
        format!("migration {first}")
    } else {
        format!("{} migrations ({first} to {last})", missing.len())
    };
    format!(
        "the database lacks {which} of the {} this build needs: run `caseload migrate` \
         (or start one replica without --no-migrate) first",
        latest_migration()
    )
}

/// The schema, one script per version, applied in order at start; numbered as PostgreSQL's.
pub(super) const SQLITE_MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/sqlite/0001_initial.sql")),
    (
        2,
        include_str!("../migrations/sqlite/0002_leases_idempotency.sql"),
    ),
    (3, include_str!("../migrations/sqlite/0003_datasets.sql")),
    (4, include_str!("../migrations/sqlite/0004_cancel.sql")),
    (5, include_str!("../migrations/sqlite/0005_user_access.sql")),
    (6, include_str!("../migrations/sqlite/0006_fair_share.sql")),
    (7, include_str!("../migrations/sqlite/0007_quotas.sql")),
    (8, include_str!("../migrations/sqlite/0008_user_quotas.sql")),
    (
        9,
        include_str!("../migrations/sqlite/0009_output_quota.sql"),
    ),
    (10, include_str!("../migrations/sqlite/0010_priority.sql")),
    (11, include_str!("../migrations/sqlite/0011_labels.sql")),
    (12, include_str!("../migrations/sqlite/0012_webhooks.sql")),
    (13, include_str!("../migrations/sqlite/0013_replicas.sql")),
    (
        14,
        include_str!("../migrations/sqlite/0014_pending_count.sql"),
    ),
    (15, include_str!("../migrations/sqlite/0015_kept_bytes.sql")),
    (
        16,
        include_str!("../migrations/sqlite/0016_webhook_claims.sql"),
    ),
    (17, include_str!("../migrations/sqlite/0017_admins.sql")),
    (
        18,
        include_str!("../migrations/sqlite/0018_plugin_registry.sql"),
    ),
    (19, include_str!("../migrations/sqlite/0019_objectives.sql")),
    (20, include_str!("../migrations/sqlite/0020_finish.sql")),
    (21, include_str!("../migrations/sqlite/0021_warm_start.sql")),
    (
        22,
        include_str!("../migrations/sqlite/0022_time_to_best.sql"),
    ),
    (
        23,
        include_str!("../migrations/sqlite/0023_experiments.sql"),
    ),
    (24, include_str!("../migrations/sqlite/0024_races.sql")),
    (25, include_str!("../migrations/sqlite/0025_incumbents.sql")),
    (26, include_str!("../migrations/sqlite/0026_api_keys.sql")),
    (27, include_str!("../migrations/sqlite/0027_roles.sql")),
    (28, include_str!("../migrations/sqlite/0028_audit.sql")),
    (29, include_str!("../migrations/sqlite/0029_projects.sql")),
    (
        30,
        include_str!("../migrations/sqlite/0030_api_key_projects.sql"),
    ),
    (
        31,
        include_str!("../migrations/sqlite/0031_replica_pools.sql"),
    ),
    (
        32,
        include_str!("../migrations/sqlite/0032_project_quotas.sql"),
    ),
    (
        33,
        include_str!("../migrations/sqlite/0033_project_webhook_secrets.sql"),
    ),
    (
        34,
        include_str!("../migrations/sqlite/0034_project_experiments.sql"),
    ),
    (
        35,
        include_str!("../migrations/sqlite/0035_user_counts.sql"),
    ),
    (
        36,
        include_str!("../migrations/sqlite/0036_quota_allowances.sql"),
    ),
    (
        37,
        include_str!("../migrations/sqlite/0037_job_indexes.sql"),
    ),
    (
        38,
        include_str!("../migrations/sqlite/0038_output_counts_per_statement.sql"),
    ),
    (
        39,
        include_str!("../migrations/sqlite/0039_claims_counted_once.sql"),
    ),
    (
        40,
        include_str!("../migrations/sqlite/0040_launches_counted_per_statement.sql"),
    ),
    (
        41,
        include_str!("../migrations/sqlite/0041_replica_stops.sql"),
    ),
    (
        42,
        include_str!("../migrations/sqlite/0042_shared_inputs.sql"),
    ),
    (
        43,
        include_str!("../migrations/sqlite/0043_waiting_jobs.sql"),
    ),
];

/// The schema, one script per version, applied in order at start; numbered as SQLite's.
pub(super) const POSTGRES_MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/postgres/0001_initial.sql")),
    (
        2,
        include_str!("../migrations/postgres/0002_leases_idempotency.sql"),
    ),
    (3, include_str!("../migrations/postgres/0003_datasets.sql")),
    (4, include_str!("../migrations/postgres/0004_cancel.sql")),
    (
        5,
        include_str!("../migrations/postgres/0005_user_access.sql"),
    ),
    (
        6,
        include_str!("../migrations/postgres/0006_fair_share.sql"),
    ),
    (7, include_str!("../migrations/postgres/0007_quotas.sql")),
    (
        8,
        include_str!("../migrations/postgres/0008_user_quotas.sql"),
    ),
    (
        9,
        include_str!("../migrations/postgres/0009_output_quota.sql"),
    ),
    (10, include_str!("../migrations/postgres/0010_priority.sql")),
    (11, include_str!("../migrations/postgres/0011_labels.sql")),
    (12, include_str!("../migrations/postgres/0012_webhooks.sql")),
    (13, include_str!("../migrations/postgres/0013_replicas.sql")),
    (
        14,
        include_str!("../migrations/postgres/0014_pending_count.sql"),
    ),
    (
        15,
        include_str!("../migrations/postgres/0015_kept_bytes.sql"),
    ),
    (
        16,
        include_str!("../migrations/postgres/0016_webhook_claims.sql"),
    ),
    (17, include_str!("../migrations/postgres/0017_admins.sql")),
    (
        18,
        include_str!("../migrations/postgres/0018_plugin_registry.sql"),
    ),
    (
        19,
        include_str!("../migrations/postgres/0019_objectives.sql"),
    ),
    (20, include_str!("../migrations/postgres/0020_finish.sql")),
    (
        21,
        include_str!("../migrations/postgres/0021_warm_start.sql"),
    ),
    (
        22,
        include_str!("../migrations/postgres/0022_time_to_best.sql"),
    ),
    (
        23,
        include_str!("../migrations/postgres/0023_experiments.sql"),
    ),
    (24, include_str!("../migrations/postgres/0024_races.sql")),
    (
        25,
        include_str!("../migrations/postgres/0025_incumbents.sql"),
    ),
    (26, include_str!("../migrations/postgres/0026_api_keys.sql")),
    (27, include_str!("../migrations/postgres/0027_roles.sql")),
    (28, include_str!("../migrations/postgres/0028_audit.sql")),
    (29, include_str!("../migrations/postgres/0029_projects.sql")),
    (
        30,
        include_str!("../migrations/postgres/0030_api_key_projects.sql"),
    ),
    (
        31,
        include_str!("../migrations/postgres/0031_replica_pools.sql"),
    ),
    (
        32,
        include_str!("../migrations/postgres/0032_project_quotas.sql"),
    ),
    (
        33,
        include_str!("../migrations/postgres/0033_project_webhook_secrets.sql"),
    ),
    (
        34,
        include_str!("../migrations/postgres/0034_project_experiments.sql"),
    ),
    (
        35,
        include_str!("../migrations/postgres/0035_user_counts.sql"),
    ),
    (
        36,
        include_str!("../migrations/postgres/0036_quota_allowances.sql"),
    ),
    (
        37,
        include_str!("../migrations/postgres/0037_job_indexes.sql"),
    ),
    (
        38,
        include_str!("../migrations/postgres/0038_output_counts_per_statement.sql"),
    ),
    (
        39,
        include_str!("../migrations/postgres/0039_claims_counted_once.sql"),
    ),
    (
        40,
        include_str!("../migrations/postgres/0040_launches_counted_per_statement.sql"),
    ),
    (
        41,
        include_str!("../migrations/postgres/0041_replica_stops.sql"),
    ),
    (
        42,
        include_str!("../migrations/postgres/0042_shared_inputs.sql"),
    ),
    (
        43,
        include_str!("../migrations/postgres/0043_waiting_jobs.sql"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_backends_know_the_same_migrations() {
        let sqlite: Vec<i64> = SQLITE_MIGRATIONS
            .iter()
            .map(|(version, _)| *version)
            .collect();
        let postgres: Vec<i64> = POSTGRES_MIGRATIONS
            .iter()
            .map(|(version, _)| *version)
            .collect();
        assert_eq!(sqlite, postgres);
        assert_eq!(missing_migrations(&sqlite), Vec::<i64>::new());
        assert_eq!(missing_migrations(&sqlite[..3]).first(), Some(&sqlite[3]));
        assert_eq!(Some(&latest_migration()), sqlite.last());
    }
}
