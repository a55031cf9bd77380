//! The shared store: PostgreSQL, for any number of replicas behind a load balancer. Claims
//! skip rows other replicas hold locked (`FOR UPDATE SKIP LOCKED`), idle workers wake through
//! `LISTEN/NOTIFY`, and migrations run under an advisory lock so replicas may start together.

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Postgres;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgPoolOptions, PgQueryResult};
use tokio::sync::Notify;

use super::backend::{Backend, FINISH_PREFIX, apply};
use super::batch::{self, BatchWriter, Batcher, Outcome, Write};
use super::commit_gate::CommitGate;
use super::jobs::NewJob;
use super::launch_quotas::LaunchQuotas;
use super::outcome::ReapedEnds;
use super::postgres_allowances::{self, launched};
use super::postgres_ends::{self, End};
use super::postgres_launches::{self, Launches};
use super::postgres_notices::{self, Notices};
use super::rows::Columns;
use super::schema::{self, Migrations};
use super::service::REPLICA_LIVE_MILLIS;
use super::statement::{SqlxConnection, Statement, WriteConnection};
use super::{ClaimFilter, JobChange, JobEvents, StoreError, now_millis, sql};

/// The schema, one script per version, applied in order at start; numbered as SQLite's.
pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        include_str!("../../migrations/postgres/0001_initial.sql"),
    ),
    (
        2,
        include_str!("../../migrations/postgres/0002_leases_idempotency.sql"),
    ),
    (
        3,
        include_str!("../../migrations/postgres/0003_datasets.sql"),
    ),
    (4, include_str!("../../migrations/postgres/0004_cancel.sql")),
    (
        5,
        include_str!("../../migrations/postgres/0005_user_access.sql"),
    ),
    (
        6,
        include_str!("../../migrations/postgres/0006_fair_share.sql"),
    ),
    (7, include_str!("../../migrations/postgres/0007_quotas.sql")),
    (
        8,
        include_str!("../../migrations/postgres/0008_user_quotas.sql"),
    ),
    (
        9,
        include_str!("../../migrations/postgres/0009_output_quota.sql"),
    ),
    (
        10,
        include_str!("../../migrations/postgres/0010_priority.sql"),
    ),
    (
        11,
        include_str!("../../migrations/postgres/0011_labels.sql"),
    ),
    (
        12,
        include_str!("../../migrations/postgres/0012_webhooks.sql"),
    ),
    (
        13,
        include_str!("../../migrations/postgres/0013_replicas.sql"),
    ),
    (
        14,
        include_str!("../../migrations/postgres/0014_pending_count.sql"),
    ),
    (
        15,
        include_str!("../../migrations/postgres/0015_kept_bytes.sql"),
    ),
    (
        16,
        include_str!("../../migrations/postgres/0016_webhook_claims.sql"),
    ),
    (
        17,
        include_str!("../../migrations/postgres/0017_admins.sql"),
    ),
    (
        18,
        include_str!("../../migrations/postgres/0018_plugin_registry.sql"),
    ),
    (
        19,
        include_str!("../../migrations/postgres/0019_objectives.sql"),
    ),
    (
        20,
        include_str!("../../migrations/postgres/0020_finish.sql"),
    ),
    (
        21,
        include_str!("../../migrations/postgres/0021_warm_start.sql"),
    ),
    (
        22,
        include_str!("../../migrations/postgres/0022_time_to_best.sql"),
    ),
    (
        23,
        include_str!("../../migrations/postgres/0023_experiments.sql"),
    ),
    (24, include_str!("../../migrations/postgres/0024_races.sql")),
    (
        25,
        include_str!("../../migrations/postgres/0025_incumbents.sql"),
    ),
    (
        26,
        include_str!("../../migrations/postgres/0026_api_keys.sql"),
    ),
    (27, include_str!("../../migrations/postgres/0027_roles.sql")),
    (28, include_str!("../../migrations/postgres/0028_audit.sql")),
    (
        29,
        include_str!("../../migrations/postgres/0029_projects.sql"),
    ),
    (
        30,
        include_str!("../../migrations/postgres/0030_api_key_projects.sql"),
    ),
    (
        31,
        include_str!("../../migrations/postgres/0031_replica_pools.sql"),
    ),
    (
        32,
        include_str!("../../migrations/postgres/0032_project_quotas.sql"),
    ),
    (
        33,
        include_str!("../../migrations/postgres/0033_project_webhook_secrets.sql"),
    ),
    (
        34,
        include_str!("../../migrations/postgres/0034_project_experiments.sql"),
    ),
    (
        35,
        include_str!("../../migrations/postgres/0035_user_counts.sql"),
    ),
    (
        36,
        include_str!("../../migrations/postgres/0036_quota_allowances.sql"),
    ),
    (
        37,
        include_str!("../../migrations/postgres/0037_job_indexes.sql"),
    ),
    (
        38,
        include_str!("../../migrations/postgres/0038_output_counts_per_statement.sql"),
    ),
    (
        39,
        include_str!("../../migrations/postgres/0039_claims_counted_once.sql"),
    ),
    (
        40,
        include_str!("../../migrations/postgres/0040_launches_counted_per_statement.sql"),
    ),
    (
        41,
        include_str!("../../migrations/postgres/0041_replica_stops.sql"),
    ),
    (
        42,
        include_str!("../../migrations/postgres/0042_shared_inputs.sql"),
    ),
    (
        43,
        include_str!("../../migrations/postgres/0043_waiting_jobs.sql"),
    ),
];

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

/// The channel a replica notifies when it makes a job pending.
const CHANNEL: &str = "caseload_jobs";

/// The channel that carries the id of a running job whose cancellation was asked for, or
/// [`FINISH_PREFIX`] and the id of one asked to finish now.
const CANCEL_CHANNEL: &str = "caseload_cancel";

/// The channel that carries the jobs that changed as clients see them: `owner_id job_id`
/// lines, at most [`postgres_notices::CHANGES_PAYLOAD`] bytes per notification.
const CHANGES_CHANNEL: &str = "caseload_job_changes";

/// The channel every change to the plugins the store lists is announced on.
const PLUGINS_CHANNEL: &str = "caseload_plugins";

/// The channel every replica's report is announced on.
const REPLICAS_CHANNEL: &str = "caseload_replicas";

/// How many replicas reported in the last `$1` milliseconds and did not say they stopped,
/// by the database's clock, so that every replica counting gets the same answer whatever
/// its own clock says.
const REPLICAS_LIVE: &str = "SELECT COUNT(*) FROM replicas
     WHERE stopped_at IS NULL
         AND seen_at >= (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint - $1";

/// Claims the oldest pending jobs no other transaction holds, of the use cases `condition`
/// lets through. The selection is a CTE, which runs once: as an `IN (subquery)` the planner
/// may run it again and claim more than `$2`. The claimed jobs stay on their owners'
/// pending counts until they start (migration 0043), so the claim counts nothing. It
/// returns the columns of a [`super::ClaimedJob`].
fn claim(condition: &str) -> String {
    format!(
        "WITH picked AS (
             SELECT id AS picked_id FROM jobs WHERE status = 'PENDING' AND race IS NULL {condition}
             ORDER BY fair_key, id
             LIMIT $2 FOR UPDATE SKIP LOCKED)
         UPDATE jobs
         SET status = 'RUNNING', attempts = attempts + 1, lease_token = lease_token + 1,
             lease_expires_at = $1, started = FALSE
         FROM picked WHERE jobs.id = picked.picked_id
         RETURNING id, owner_id, COALESCE(project_id, owner_id) AS project_id, problem, input, options, attempts, lease_token, created_at, data_file_id, data_blob_id, data_media_type, plugin_version, plugin_digest, version_requested, race_of"
    )
}

static CLAIM: LazyLock<String> = LazyLock::new(|| claim(""));
static CLAIM_ONLY: LazyLock<String> =
    LazyLock::new(|| claim("AND problem IN (SELECT jsonb_array_elements_text($3::jsonb))"));
static CLAIM_EXCEPT: LazyLock<String> =
    LazyLock::new(|| claim("AND problem NOT IN (SELECT jsonb_array_elements_text($3::jsonb))"));

/// Serialises webhook claims across replicas, so that each counts the deliveries in flight
/// that the others claimed ("webhooks" in ASCII).
const LOCK_WEBHOOK_CLAIMS: &str = "SELECT pg_advisory_xact_lock(x'776562686f6f6b73'::bigint)";

const ABANDON_EXECUTIONS: &str = "UPDATE executions
     SET status = 'ABANDONED', ended_at = $1, error_code = 'worker_lost', error_message = $2
     WHERE status = 'RUNNING' AND job_id = ANY($3)";

#[derive(Debug, Clone)]
pub struct PostgresStore {
    /// The group-commit lanes, the reaper and retention: never starved by a burst of reads,
    /// so that heartbeats and ends always find a connection.
    writer: PgPool,
    readers: PgPool,
    batcher: Batcher,
}

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
    for &(version, script) in MIGRATIONS {
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

/// Tells every replica's idle workers that a job is pending. Delivered at commit, and only
/// if the transaction commits.
async fn notify(connection: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(CHANNEL)
        .execute(connection)
        .await?;
    Ok(())
}

/// Tells every replica, at commit, which jobs changed.
async fn notify_changes(
    connection: &mut PgConnection,
    changes: &[JobChange],
) -> Result<(), StoreError> {
    for payload in postgres_notices::payloads(changes) {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANGES_CHANNEL)
            .bind(payload)
            .execute(&mut *connection)
            .await?;
    }
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

/// One array of a statement that writes many rows at once: `value` of each of `items`.
pub(super) fn column<I, T>(items: &[I], value: impl Fn(&I) -> T) -> Vec<T> {
    items.iter().map(value).collect()
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

/// Locks user `$1`'s row for a quota check. Not `FOR UPDATE`: the key share every job stored
/// for the user takes of the row (its foreign key) goes on beside it.
const LOCK_USER: &str = "SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE";

/// See [`Backend::RECLAIM_ALLOWANCES`]. It locks only the slots that hold an allowance: the
/// others stay free for the counts of other transactions.
const RECLAIM_ALLOWANCES: &str = "UPDATE user_counts SET pending_allowance = 0, bytes_allowance = 0
     WHERE user_id = $1 AND (pending_allowance <> 0 OR bytes_allowance <> 0)";

#[async_trait]
impl Backend for PostgresStore {
    type Db = Postgres;

    fn claim_statement(filter: &ClaimFilter) -> &'static str {
        match filter {
            ClaimFilter::All => CLAIM.as_str(),
            ClaimFilter::Only(_) => CLAIM_ONLY.as_str(),
            ClaimFilter::Except(_) => CLAIM_EXCEPT.as_str(),
        }
    }

    const LOCK_WEBHOOK_CLAIMS: Option<&'static str> = Some(LOCK_WEBHOOK_CLAIMS);
    const ANNOUNCE_PLUGINS: Option<&'static str> = Some("NOTIFY caseload_plugins");
    const ANNOUNCE_REPLICAS: Option<&'static str> = Some("NOTIFY caseload_replicas");

    const LOCK_USER: Option<&'static str> = Some(LOCK_USER);
    const RECLAIM_ALLOWANCES: Option<&'static str> = Some(RECLAIM_ALLOWANCES);
    const LOCK_PROJECT: Option<&'static str> =
        Some("SELECT id FROM projects WHERE id = $1 FOR UPDATE");
    const FINISH_IN_ONE: bool = true;

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    fn writer(&self) -> &PgPool {
        &self.writer
    }

    fn readers(&self) -> &PgPool {
        &self.readers
    }

    fn batcher(&self) -> &Batcher {
        &self.batcher
    }

    async fn reap(&self, max_attempts: u32, every_running: bool) -> Result<u64, StoreError> {
        let now = now_millis();
        let mut transaction = self.writer.begin().await?;
        let ends = ReapedEnds::at(now);
        let reap = Statement::new(sql::REAP_JOBS)
            .bind(i64::from(max_attempts))
            .bind(now)
            .bind(every_running);
        let changes = SqlxConnection::<Self>(&mut transaction)
            .fetch_all(ends.bind(reap))
            .await?
            .iter()
            .map(|row| {
                Ok(JobChange {
                    owner_id: row.text("owner_id")?,
                    job_id: row.text("id")?,
                    project_id: row.text("project_id")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        if changes.is_empty() {
            return Ok(0);
        }
        let reaped: Vec<String> = changes.iter().map(|change| change.job_id.clone()).collect();
        for job_id in &reaped {
            sqlx::query(sql::ABANDON_UNSTARTED)
                .bind(uuid::Uuid::now_v7().to_string())
                .bind(now)
                .bind(sql::LOST_BEFORE_START)
                .bind(job_id)
                .execute(&mut *transaction)
                .await?;
        }
        sqlx::query(ABANDON_EXECUTIONS)
            .bind(now)
            .bind(sql::WORKER_LOST)
            .bind(&reaped)
            .execute(&mut *transaction)
            .await?;
        notify(&mut transaction).await?;
        notify_changes(&mut transaction, &changes).await?;
        transaction.commit().await?;
        Ok(reaped.len() as u64)
    }

    /// Tells every replica, at commit, to interrupt the job if it runs it.
    async fn announce_cancel(
        transaction: &mut sqlx::Transaction<'_, Postgres>,
        job_id: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CANCEL_CHANNEL)
            .bind(job_id)
            .execute(&mut **transaction)
            .await?;
        Ok(())
    }

    async fn announce_changes(
        transaction: &mut sqlx::Transaction<'_, Postgres>,
        changes: &[JobChange],
    ) -> Result<(), StoreError> {
        notify_changes(transaction, changes).await
    }

    fn label_condition(key: usize, value: usize) -> String {
        format!("(labels::jsonb ->> ${key}) = ${value}")
    }

    /// Every replica hears the announcement, this one included.
    fn changes_committed(&self, _changes: &[JobChange]) {}

    /// Other replicas may be running the `RUNNING` jobs: only expired leases are reaped.
    async fn recover(&self, max_attempts: u32) -> Result<u64, StoreError> {
        self.reap(max_attempts, false).await
    }

    async fn watch(&self, events: Arc<dyn JobEvents>) {
        let pool = self.writer.clone();
        let reported = Arc::new(Notify::new());
        tokio::spawn(share_lanes(
            pool.clone(),
            self.batcher.gate(),
            reported.clone(),
        ));
        tokio::spawn(async move {
            loop {
                if let Err(error) = listen(&pool, &reported, events.as_ref()).await {
                    tracing::warn!(%error, "lost the job notifications; listening again in 1 s");
                    // Workers still poll, slowly, in the meantime.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
    }
}

/// Wakes the local workers on every new-job notification, interrupts the local run of a
/// cancelled job, and shares the lanes anew whenever a replica reports, until the connection
/// fails.
async fn listen(
    pool: &PgPool,
    reported: &Notify,
    events: &dyn JobEvents,
) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener
        .listen_all([
            CHANNEL,
            CANCEL_CHANNEL,
            CHANGES_CHANNEL,
            PLUGINS_CHANNEL,
            REPLICAS_CHANNEL,
        ])
        .await?;
    loop {
        let notification = listener.recv().await?;
        match notification.channel() {
            CANCEL_CHANNEL => match notification.payload().strip_prefix(FINISH_PREFIX) {
                Some(job_id) => events.finish_requested(job_id),
                None => events.cancel_requested(notification.payload()),
            },
            CHANGES_CHANNEL => {
                events.jobs_changed(&postgres_notices::parse_payload(notification.payload()))
            }
            PLUGINS_CHANNEL => events.plugins_changed(),
            REPLICAS_CHANNEL => reported.notify_one(),
            _ => events.jobs_pending(),
        }
    }
}

/// Shares this replica's group-commit lanes with the live replicas ([`CommitGate::share`])
/// each time a replica reported, one count at a time, so that the last count is the one
/// that holds.
async fn share_lanes(pool: PgPool, gate: Arc<CommitGate>, reported: Arc<Notify>) {
    loop {
        reported.notified().await;
        match sqlx::query_scalar::<_, i64>(REPLICAS_LIVE)
            .bind(REPLICA_LIVE_MILLIS)
            .fetch_one(&pool)
            .await
        {
            Ok(replicas) => gate.share(usize::try_from(replicas).unwrap_or(1)).await,
            Err(error) => tracing::warn!(%error, "cannot count the live replicas"),
        }
    }
}
