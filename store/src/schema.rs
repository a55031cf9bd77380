//! The schema's version: whether a server applies the migrations it lacks when it opens the
//! store, or requires them applied already (`serve --no-migrate`, after `caseload migrate`).

use super::StoreError;
use super::sqlite::MIGRATIONS;

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
    MIGRATIONS.last().map_or(0, |(version, _)| *version)
}

/// The migrations of this build that `applied` lacks, oldest first.
pub fn missing_migrations(applied: &[i64]) -> Vec<i64> {
    MIGRATIONS
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
        Err(StoreError::SchemaBehind { missing })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_backends_know_the_same_migrations() {
        let sqlite: Vec<i64> = MIGRATIONS.iter().map(|(version, _)| *version).collect();
        let postgres: Vec<i64> = super::super::postgres::MIGRATIONS
            .iter()
            .map(|(version, _)| *version)
            .collect();
        assert_eq!(sqlite, postgres);
        assert_eq!(missing_migrations(&sqlite), Vec::<i64>::new());
        assert_eq!(missing_migrations(&sqlite[..3]).first(), Some(&sqlite[3]));
        assert_eq!(Some(&latest_migration()), sqlite.last());
    }
}
