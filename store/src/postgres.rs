//! The shared store: PostgreSQL, for any number of replicas behind a load balancer. This
//! file opens it (migrations run under an advisory lock so replicas may start together) and
//! writes its group-commit batches; what the backend does its own way (claims that skip rows
//! other replicas hold, wake-ups through `LISTEN/NOTIFY`) is in `postgres_backend`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};

use super::apply::apply;
use super::batch::{self, BatchWriter, Batcher, Outcome, Write};
use super::launch_quotas::LaunchQuotas;
use super::postgres_allowances::{self, launched};
use super::postgres_backend::{CHANGES_CHANNEL, CHANNEL, PostgresStore};
use super::postgres_ends::{self, End};
use super::postgres_launches::{self, Launches};
use super::postgres_notices::Notices;
use super::records::NewJob;
use super::schema::{self, Migrations};
use super::statement::SqlxConnection;
use super::types::{StoreError, now_millis};

/// The advisory lock that serialises migrations across replicas starting at once.
const MIGRATION_LOCK: i64 = 0x6361_7365_6c6f_6164; // "caseload"

/// Group-commit lanes: PostgreSQL commits concurrent transactions side by side, and one
/// lane's round trips would otherwise serialise every write of the replica. Two, not more:
/// each lane's batch pays a transaction and a statement per kind of write whatever its size,
/// so more lanes split the same writes into smaller batches, and on a small machine
/// PostgreSQL's CPU goes to those statements (one, three and four lanes against two:
/// `docs/benchmarks.md`, "No usage read per launch, and two lanes").
const WRITE_LANES: usize = 2;

/// Connections for reads (status, lists, outputs, logins).
const READ_CONNECTIONS: usize = 6;

impl PostgresStore {
    /// Connects and brings the schema up to date (one replica at a time).
    pub async fn open(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::open_with(url, Migrations::Apply).await
    }

    /// Connects, and applies the migrations the database lacks or refuses it for lacking
    /// them, as `migrations` says.
    pub async fn open_with(url: &str, migrations: Migrations) -> Result<PostgresStore, StoreError> {
        first_connection(url).await?;
        let pool = |connections: usize| {
            PgPoolOptions::new()
                // Long-lived connections; a ping before every use costs a round trip per
                // transaction on the group-commit path.
                .test_before_acquire(false)
                .max_connections(connections as u32)
                .acquire_timeout(Duration::from_secs(10))
                .connect(url)
        };
        // One connection per lane, one for the reaper, one for retention.
        let writer = pool(WRITE_LANES + 2).await?;
        match migrations {
            Migrations::Apply => migrate(&writer).await?,
            Migrations::Require => require_migrations(&writer).await?,
        }
        let readers = pool(READ_CONNECTIONS).await?;
        let batcher = Batcher::start(Arc::new(PostgresWriter::new(writer.clone())), WRITE_LANES);
        Ok(PostgresStore {
            writer,
            readers,
            batcher,
        })
    }
}

/// How long opening the store tries to reach the database (the pools' acquire timeout).
const REACH_WITHIN: Duration = Duration::from_secs(10);

/// Reaches the database once before the pools are made, trying again for [`REACH_WITHIN`]
/// (a database starting beside the server), so that a server that cannot start says where
/// it looked and why it failed: a pool only says it timed out.
async fn first_connection(url: &str) -> Result<(), StoreError> {
    use sqlx::Connection;
    let deadline = tokio::time::Instant::now() + REACH_WITHIN;
    loop {
        let attempt = tokio::time::timeout_at(deadline, PgConnection::connect(url)).await;
        let cause = match attempt {
            Ok(Ok(connection)) => {
                let _ = connection.close().await;
                return Ok(());
            }
            Ok(Err(error)) => error,
            Err(_) => sqlx::Error::PoolTimedOut,
        };
        // A refused login or a malformed URL does not mend itself; an unreachable or
        // starting server may.
        let lasting = matches!(&cause, sqlx::Error::Configuration(_))
            || matches!(&cause, sqlx::Error::Database(error)
                if error.code().is_some_and(|code| code.starts_with("28") || code.starts_with("3D")));
        if lasting || tokio::time::Instant::now() + Duration::from_millis(250) >= deadline {
            return Err(StoreError::Unreachable {
                address: without_password(url),
                cause: match cause {
                    sqlx::Error::PoolTimedOut => {
                        format!("no answer within {} s", REACH_WITHIN.as_secs())
                    }
                    other => other.to_string(),
                },
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A database URL fit for a message: its password left out, and its query (which may
/// hold one) too.
fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.to_string()
        }
        Err(_) => "(a URL that does not parse)".to_owned(),
    }
}

/// Refuses a database that lacks a migration of this build, applying none.
async fn require_migrations(pool: &PgPool) -> Result<(), StoreError> {
    let present: bool = sqlx::query_scalar("SELECT to_regclass('caseload_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await?;
    let applied: Vec<i64> = if present {
        sqlx::query_scalar("SELECT version FROM caseload_migrations")
            .fetch_all(pool)
            .await?
    } else {
        Vec::new()
    };
    schema::require(&applied)
}

async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let mut connection = pool.acquire().await?;
    // Replicas starting together take turns; the lock ends with the session if one dies.
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *connection)
        .await?;
    let result = apply_migrations(&mut connection).await;
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *connection)
        .await?;
    result
}

/// Makes `caseload_migrations`, the applied versions in the numbering both backends share.
/// A database made before PostgreSQL took SQLite's numbering recorded its versions in
/// `schema_migrations` as 1 initial, 2 datasets, 3 cancel; they are carried over once, as 1
/// (with 2, which PostgreSQL's initial script covers), 3 and 4.
async fn carry_over_versions(connection: &mut PgConnection) -> Result<(), StoreError> {
    let present: bool = sqlx::query_scalar("SELECT to_regclass('caseload_migrations') IS NOT NULL")
        .fetch_one(&mut *connection)
        .await?;
    if present {
        return Ok(());
    }
    let mut transaction = sqlx::Connection::begin(&mut *connection).await?;
    sqlx::query(
        "CREATE TABLE caseload_migrations (
             version BIGINT PRIMARY KEY,
             applied_at BIGINT NOT NULL
         )",
    )
    .execute(&mut *transaction)
    .await?;
    let old: bool = sqlx::query_scalar("SELECT to_regclass('schema_migrations') IS NOT NULL")
        .fetch_one(&mut *transaction)
        .await?;
    if old {
        let carried = sqlx::query(
            "INSERT INTO caseload_migrations (version, applied_at)
             SELECT new_version, applied_at FROM schema_migrations
             JOIN (VALUES (1, 1), (1, 2), (2, 3), (3, 4)) AS renumbered (old_version, new_version)
               ON schema_migrations.version = renumbered.old_version",
        )
        .execute(&mut *transaction)
        .await?;
        tracing::info!(
            versions = carried.rows_affected(),
            "carried the applied migrations over to caseload_migrations"
        );
    }
    transaction.commit().await?;
    Ok(())
}

async fn apply_migrations(connection: &mut PgConnection) -> Result<(), StoreError> {
    carry_over_versions(&mut *connection).await?;
    let mut applied_now = Vec::new();
    for &(version, script) in schema::POSTGRES_MIGRATIONS {
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT version FROM caseload_migrations WHERE version = $1")
                .bind(version)
                .fetch_optional(&mut *connection)
                .await?;
        if applied.is_some() {
            continue;
        }
        let mut transaction = sqlx::Connection::begin(&mut *connection).await?;
        sqlx::raw_sql(script)
            .execute(&mut *transaction)
            .await
            .map_err(|source| StoreError::Migration { version, source })?;
        sqlx::query("INSERT INTO caseload_migrations (version, applied_at) VALUES ($1, $2)")
            .bind(version)
            .bind(now_millis())
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        tracing::debug!(version, "applied database migration");
        applied_now.push(version);
    }
    schema::log_applied(&applied_now);
    Ok(())
}

/// Writes each batch in one transaction on one pooled connection, and has its notices sent
/// once it committed.
pub(super) struct PostgresWriter {
    pool: PgPool,
    notices: Notices,
}

impl PostgresWriter {
    /// A writer of batches on `pool`'s connections, with the task that sends its notices.
    pub(super) fn new(pool: PgPool) -> PostgresWriter {
        let notices = Notices::start(pool.clone(), CHANNEL, CHANGES_CHANNEL);
        PostgresWriter { pool, notices }
    }
}

#[async_trait]
impl BatchWriter for PostgresWriter {
    /// The quotas of the batch's launches come first, owner by owner in the order of their
    /// ids: an allowance taken ([`postgres_allowances`]), or the owner's row locked for a
    /// check (and its allowances taken back where they would refuse it). Then the shared
    /// projects' rows, in the order of their ids; then every other write, the attempts' ends
    /// together ([`postgres_ends`]), and the launches last: the plain ones first, in one
    /// statement ([`postgres_launches`]), then the others in queue order.
    /// Two batches then never wait on each other in a circle: a take waits for nothing, and
    /// a batch that waits for another's slot holds no project row yet. (A launch's own check
    /// takes allowances back again only if the owner's counts grew since the batch began
    /// without an allowance paying, which a requeue does only when every slot with one is
    /// held; PostgreSQL breaks the circle that may then close, and the batch is written
    /// again write by write.) Nothing else waits on a row another lane holds (claims skip
    /// locked jobs, counts take a free slot).
    async fn write_batch(&self, writes: &[Write]) -> Result<Vec<Outcome>, StoreError> {
        let mut transaction = self.pool.begin().await?;
        let mut quotas = LaunchQuotas::default();
        let mut outcomes: Vec<Option<Outcome>> = writes.iter().map(|_| None).collect();
        let (launches, others): (Vec<_>, Vec<_>) = writes
            .iter()
            .enumerate()
            .partition(|(_, write)| !launched(write).is_empty());
        let mut connection = SqlxConnection::<PostgresStore>(&mut transaction);
        let needs = postgres_allowances::needs(launches.iter().map(|(_, write)| launched(write)));
        for (owner_id, need) in needs {
            if postgres_allowances::take(&mut connection, owner_id, need).await? {
                quotas.cover(owner_id);
            } else {
                postgres_allowances::prepare(&mut connection, owner_id, need).await?;
            }
        }
        lock_projects(connection.0, writes).await?;
        // The attempts' ends after the other writes, so that an end follows the start it
        // updates, and before the launches.
        let mut ends = Vec::new();
        for (index, write) in others {
            match End::of(write) {
                Some(end) => ends.push((index, end)),
                None => outcomes[index] = Some(apply(&mut connection, write, &mut quotas).await?),
            }
        }
        let (indexes, ends): (Vec<usize>, Vec<End<'_>>) = ends.into_iter().unzip();
        let held = postgres_ends::write(&mut connection, &ends).await?;
        for (index, held) in indexes.into_iter().zip(held) {
            outcomes[index] = Some(Outcome::Held(held));
        }
        let Launches { together, alone } = postgres_launches::split(launches, &quotas);
        let jobs: Vec<&NewJob> = together.iter().map(|(_, job)| *job).collect();
        let inserted = postgres_launches::insert_all(&mut connection, &jobs).await?;
        for ((index, job), inserted) in together.into_iter().zip(inserted) {
            quotas.add(std::slice::from_ref(job), std::slice::from_ref(&inserted));
            outcomes[index] = Some(Outcome::Inserted(inserted));
        }
        for (index, write) in alone {
            outcomes[index] = Some(apply(&mut connection, write, &mut quotas).await?);
        }
        postgres_allowances::grant(&mut connection, &quotas).await?;
        let outcomes = outcomes
            .into_iter()
            .collect::<Option<Vec<Outcome>>>()
            .ok_or_else(|| StoreError::Corrupt("a write of a batch was not applied".into()))?;
        transaction.commit().await?;
        if writes.iter().any(Write::may_enqueue) {
            self.notices.jobs_pending();
        }
        self.notices.jobs_changed(batch::changes(writes, &outcomes));
        Ok(outcomes)
    }
}

/// Locks the rows of the shared projects whose jobs the batch launches, in the order of
/// their ids, so that every lane takes them in one order. The quota checks of the launches
/// lock them again, which then waits for nothing.
async fn lock_projects(connection: &mut PgConnection, writes: &[Write]) -> Result<(), StoreError> {
    let projects: BTreeSet<&str> = writes
        .iter()
        .flat_map(launched)
        .filter_map(|job| {
            job.project_id
                .as_deref()
                .filter(|project_id| *project_id != job.owner_id)
        })
        .collect();
    // One row alone is locked in one order.
    if projects.len() <= 1 {
        return Ok(());
    }
    let projects: Vec<&str> = projects.into_iter().collect();
    sqlx::query(LOCK_PROJECTS)
        .bind(projects)
        .execute(&mut *connection)
        .await?;
    Ok(())
}

/// Locks projects `$1`, in the order of their ids.
const LOCK_PROJECTS: &str = "SELECT id FROM projects WHERE id = ANY($1) ORDER BY id FOR UPDATE";
