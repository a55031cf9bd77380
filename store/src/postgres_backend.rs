//! The shared store's side of [`Backend`]: what PostgreSQL does its own way (claims, the
//! reaper, cancellation and change notices, wake-ups from other replicas), below the
//! writes that need it (`postgres_ends`, `postgres_launches`, `postgres_allowances`) and
//! the opening of the store and its group commit (`postgres`).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Postgres;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgQueryResult};
use tokio::sync::Notify;

use super::backend::ClaimFilter;
use super::backend::{Backend, FINISH_PREFIX};
use super::batch::{Batched, Batcher};
use super::commit_gate::CommitGate;
use super::outcome::ReapedEnds;
use super::postgres_notices;
use super::rows::Columns;
use super::service::REPLICA_LIVE_MILLIS;
use super::sql;
use super::statement::{SqlxConnection, Statement, WriteConnection};
use super::types::{JobChange, JobEvents, StoreError, now_millis};

/// The channel a replica notifies when it makes a job pending.
pub(super) const CHANNEL: &str = "caseload_jobs";

/// The channel that carries the id of a running job whose cancellation was asked for, or
/// [`FINISH_PREFIX`] and the id of one asked to finish now.
const CANCEL_CHANNEL: &str = "caseload_cancel";

/// The channel that carries the jobs that changed as clients see them: `owner_id job_id`
/// lines, at most [`postgres_notices::CHANGES_PAYLOAD`] bytes per notification.
pub(super) const CHANGES_CHANNEL: &str = "caseload_job_changes";

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
    pub(super) writer: PgPool,
    pub(super) readers: PgPool,
    pub(super) batcher: Batcher,
}

/// Tells every replica's idle workers that a job is pending. Delivered at commit, and only
/// if the transaction commits.
pub(super) async fn notify(connection: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(CHANNEL)
        .execute(connection)
        .await?;
    Ok(())
}

/// Tells every replica, at commit, which jobs changed.
pub(super) async fn notify_changes(
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

/// Locks user `$1`'s row for a quota check. Not `FOR UPDATE`: the key share every job stored
/// for the user takes of the row (its foreign key) goes on beside it.
const LOCK_USER: &str = "SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE";

/// See [`Backend::RECLAIM_ALLOWANCES`]. It locks only the slots that hold an allowance: the
/// others stay free for the counts of other transactions.
const RECLAIM_ALLOWANCES: &str = "UPDATE user_counts SET pending_allowance = 0, bytes_allowance = 0
     WHERE user_id = $1 AND (pending_allowance <> 0 OR bytes_allowance <> 0)";

/// One array of a statement that writes many rows at once: `value` of each of `items`.
pub(super) fn column<I, T>(items: &[I], value: impl Fn(&I) -> T) -> Vec<T> {
    items.iter().map(value).collect()
}

impl Batched for PostgresStore {
    fn batcher(&self) -> &Batcher {
        &self.batcher
    }
}

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
