//! What the two backends share, written once over [`Backend`]: the writes a group-commit
//! batch carries ([`apply`]) and the [`JobStore`] methods both implement alike. The
//! statements are in [`super::sql`]; what differs (the claim, the reaper, cancellation
//! notices, recovery at start, wake-ups from other processes) is each backend's, in its own
//! file.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use super::batch::{Batcher, Outcome, Write};
use super::service::{fill_minutes, first_job_id_since};
use super::{
    CancelOutcome, ClaimedJob, DataFile, ExecutionEnd, Inserted, JobChange, JobDataset, JobEvents,
    JobFilter, JobInput, JobOutput, JobRecord, JobStatus, JobStore, JobSummary, Lease, LiveUpdate,
    Millis, NewJob, PluginRef, QueueDepth, QueuedWrite, Quotas, Refusal, ReplicaReport,
    ServiceStats, StoreError, Usage, User, UserAccess, UserChange, UserQuotas, WebhookClaim,
    WebhookDelivery, WebhookOutcome, claim_from_row, data_file_from_row, execution_from_row,
    now_millis, sql, summary_from_row, user_conflict,
};

/// A SQL backend: its database, its pools and batcher, and the few things it does its own
/// way. sqlx has no common trait for a statement's rows-affected count, hence
/// [`Backend::rows_affected`].
#[async_trait::async_trait]
pub(super) trait Backend: Send + Sync + 'static {
    type Db: Database;

    /// Claims up to `$2` of the oldest pending jobs with lease expiry `$1`, returning the
    /// columns [`claim_from_row`] reads.
    const CLAIM: &'static str;

    fn rows_affected(result: &<Self::Db as Database>::QueryResult) -> u64;

    /// The pool for writes (group commit, upkeep).
    fn writer(&self) -> &Pool<Self::Db>;

    /// The pool for reads.
    fn readers(&self) -> &Pool<Self::Db>;

    fn batcher(&self) -> &Batcher;

    /// Requeues (or fails, after `max_attempts`) `RUNNING` jobs whose lease expired, or every
    /// `RUNNING` job with `every_running`. Returns how many.
    async fn reap(&self, max_attempts: u32, every_running: bool) -> Result<u64, StoreError>;

    /// Tells, at commit, every process that may run the job that its cancellation was asked
    /// for.
    async fn announce_cancel(
        transaction: &mut sqlx::Transaction<'_, Self::Db>,
        job_id: &str,
    ) -> Result<(), StoreError>;

    /// Tells, at commit, every process that the jobs changed as clients see them.
    async fn announce_changes(
        transaction: &mut sqlx::Transaction<'_, Self::Db>,
        changes: &[JobChange],
    ) -> Result<(), StoreError>;

    /// After a commit that changed jobs: tells this process, where no announcement does.
    fn changes_committed(&self, changes: &[JobChange]);

    /// Locks user `$1`'s row until the transaction ends, where other writers could
    /// otherwise change what a quota check reads meanwhile (`None` where the transaction
    /// excludes every other writer already).
    const LOCK_USER: Option<&'static str>;

    /// A statement that makes the transaction's webhook claim the only one until it commits,
    /// where the claim statement alone is not.
    const LOCK_WEBHOOK_CLAIMS: Option<&'static str>;

    /// A condition that the job's labels hold the key `$key` with the value `$value`, where
    /// `key` and `value` are the numbers of those parameters.
    fn label_condition(key: usize, value: usize) -> String;

    /// [`JobStore::recover_interrupted`], the backend's way.
    async fn recover(&self, max_attempts: u32) -> Result<u64, StoreError>;

    /// [`JobStore::watch_new_jobs`], the backend's way.
    async fn watch(&self, events: Arc<dyn JobEvents>);
}

pub(super) async fn apply<B>(
    connection: &mut <B::Db as Database>::Connection,
    write: &Write,
) -> Result<Outcome, StoreError>
where
    B: Backend,
    for<'c> &'c mut <B::Db as Database>::Connection: Executor<'c, Database = B::Db>,
    <B::Db as Database>::Arguments: IntoArguments<B::Db>,
    for<'q> i64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> f64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> bool: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> String: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q str: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q [u8]: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Vec<u8>: Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<i64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<f64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<bool>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<String>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q str>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q String>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q String: Encode<'q, B::Db> + Type<B::Db>,
    for<'a> &'a str: ColumnIndex<<B::Db as Database>::Row>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    Ok(match write {
        Write::InsertJob(job) => {
            let jobs = std::slice::from_ref(job);
            Outcome::Inserted(match check_job_quotas::<B>(connection, jobs).await? {
                Some(refusal) => Inserted::Refused(refusal),
                None => insert_job::<B>(connection, job).await?,
            })
        }
        Write::InsertJobs(jobs) => {
            if let Some(refusal) = check_job_quotas::<B>(connection, jobs).await? {
                return Ok(Outcome::InsertedAll(vec![
                    Inserted::Refused(refusal);
                    jobs.len()
                ]));
            }
            let mut inserted = Vec::with_capacity(jobs.len());
            for job in jobs {
                inserted.push(insert_job::<B>(connection, job).await?);
            }
            Outcome::InsertedAll(inserted)
        }
        Write::Claim {
            lease_expires_at,
            limit,
        } => {
            let mut claimed = sqlx::query(B::CLAIM)
                .bind(lease_expires_at)
                .bind(i64::from(*limit))
                .fetch_all(&mut *connection)
                .await?
                .iter()
                .map(claim_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            // RETURNING has no order: oldest first, as the queue promises.
            claimed.sort_by(|a, b| {
                (a.created_at, &a.lease.job_id).cmp(&(b.created_at, &b.lease.job_id))
            });
            Outcome::Claimed(claimed)
        }
        Write::Release { lease } => {
            let released = sqlx::query(sql::RELEASE_UNSTARTED)
                .bind(&lease.job_id)
                .bind(lease.token)
                .bind(now_millis())
                .execute(&mut *connection)
                .await?;
            Outcome::Held(B::rows_affected(&released) == 1)
        }
        Write::Start {
            lease,
            execution_id,
            attempt,
            plugin,
            started_at,
        } => {
            let inserted = sqlx::query(sql::START_EXECUTION)
                .bind(execution_id)
                .bind(i64::from(*attempt))
                .bind(&plugin.name)
                .bind(&plugin.version)
                .bind(&plugin.digest)
                .bind(started_at)
                .bind(&lease.job_id)
                .bind(lease.token)
                .execute(&mut *connection)
                .await?;
            Outcome::Held(B::rows_affected(&inserted) == 1)
        }
        Write::Progress {
            lease,
            execution_id,
            update,
        } => {
            let progress = update.progress.as_ref();
            let log = update.log.as_ref();
            let updated = sqlx::query(sql::RECORD_PROGRESS)
                .bind(progress.map(|progress| progress.fraction))
                .bind(progress.map(|progress| progress.message.as_str()))
                .bind(execution_id)
                .bind(&lease.job_id)
                .bind(lease.token)
                .bind(log.map(|(tail, _)| tail.as_str()))
                .bind(log.map(|(_, truncated)| *truncated))
                .execute(&mut *connection)
                .await?;
            Outcome::Held(B::rows_affected(&updated) == 1)
        }
        Write::Heartbeat {
            leases,
            lease_expires_at,
        } => {
            let mut lost = Vec::new();
            for lease in leases {
                let updated = sqlx::query(sql::HEARTBEAT)
                    .bind(lease_expires_at)
                    .bind(&lease.job_id)
                    .bind(lease.token)
                    .execute(&mut *connection)
                    .await?;
                if B::rows_affected(&updated) == 0 {
                    lost.push(lease.clone());
                }
            }
            Outcome::Lost(lost)
        }
        Write::Finish { lease, end } => Outcome::Held(finish::<B>(connection, lease, end).await?),
    })
}

/// What counts against a user's pending-jobs and dataset quotas, read with the user's row
/// locked until the transaction ends.
struct QuotaState {
    pending_jobs: u64,
    max_pending_jobs: u64,
    dataset_bytes: u64,
    max_dataset_bytes: u64,
}

async fn quota_state<B>(
    connection: &mut <B::Db as Database>::Connection,
    owner_id: &str,
    quotas: &Quotas,
) -> Result<Option<QuotaState>, StoreError>
where
    B: Backend,
    for<'c> &'c mut <B::Db as Database>::Connection: Executor<'c, Database = B::Db>,
    <B::Db as Database>::Arguments: IntoArguments<B::Db>,
    for<'q> i64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q str: Encode<'q, B::Db> + Type<B::Db>,
    for<'a> &'a str: ColumnIndex<<B::Db as Database>::Row>,
{
    if let Some(lock) = B::LOCK_USER {
        // A statement of its own: the read below then starts after every transaction that
        // held the lock committed, and sees all they wrote (one statement would read the
        // data files as they were before it waited).
        sqlx::query(lock)
            .bind(owner_id)
            .execute(&mut *connection)
            .await?;
    }
    let stored = |quota: u64| i64::try_from(quota).unwrap_or(i64::MAX);
    let row = sqlx::query(sql::QUOTA_STATE)
        .bind(owner_id)
        .bind(stored(quotas.pending_jobs))
        .bind(stored(quotas.dataset_bytes))
        .fetch_optional(&mut *connection)
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let count = |column: &str| -> Result<u64, StoreError> {
        let value: i64 = row.try_get(column)?;
        Ok(u64::try_from(value).unwrap_or(0))
    };
    Ok(Some(QuotaState {
        pending_jobs: count("pending_jobs")?,
        max_pending_jobs: count("max_pending_jobs")?,
        dataset_bytes: count("dataset_bytes")?,
        max_dataset_bytes: count("max_dataset_bytes")?,
    }))
}

/// Whether the jobs, all of one owner, fit its quotas: `None` if they do. Read in the
/// transaction that stores them, with the owner's row locked, so that concurrent launches
/// (and batches, counted whole) cannot pass one check together.
async fn check_job_quotas<B>(
    connection: &mut <B::Db as Database>::Connection,
    jobs: &[NewJob],
) -> Result<Option<Refusal>, StoreError>
where
    B: Backend,
    for<'c> &'c mut <B::Db as Database>::Connection: Executor<'c, Database = B::Db>,
    <B::Db as Database>::Arguments: IntoArguments<B::Db>,
    for<'q> i64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q str: Encode<'q, B::Db> + Type<B::Db>,
    for<'a> &'a str: ColumnIndex<<B::Db as Database>::Row>,
{
    let Some(first) = jobs.first() else {
        return Ok(None);
    };
    let Some(state) = quota_state::<B>(connection, &first.owner_id, &first.quotas).await? else {
        return Ok(Some(Refusal::NoSuchOwner));
    };
    let count = jobs.len() as u64;
    if state.pending_jobs + count > state.max_pending_jobs {
        return Ok(Some(Refusal::PendingJobs(state.max_pending_jobs)));
    }
    let bytes: u64 = jobs.iter().map(|job| job.input.len() as u64).sum();
    if state.dataset_bytes + bytes > state.max_dataset_bytes {
        return Ok(Some(Refusal::DatasetBytes(state.max_dataset_bytes)));
    }
    Ok(None)
}

async fn insert_job<B>(
    connection: &mut <B::Db as Database>::Connection,
    job: &NewJob,
) -> Result<Inserted, StoreError>
where
    B: Backend,
    for<'c> &'c mut <B::Db as Database>::Connection: Executor<'c, Database = B::Db>,
    <B::Db as Database>::Arguments: IntoArguments<B::Db>,
    for<'q> i64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> f64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> bool: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> String: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q str: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q [u8]: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Vec<u8>: Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<i64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<f64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<bool>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<String>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q str>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q String>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q String: Encode<'q, B::Db> + Type<B::Db>,
    for<'a> &'a str: ColumnIndex<<B::Db as Database>::Row>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    let inserted = sqlx::query(sql::INSERT_JOB)
        .bind(&job.id)
        .bind(&job.owner_id)
        .bind(&job.problem)
        .bind(&job.input)
        .bind(&job.options)
        .bind(job.created_at)
        .bind(job.idempotency.as_ref().map(|idempotency| &idempotency.key))
        .bind(
            job.idempotency
                .as_ref()
                .map(|idempotency| &idempotency.request_hash),
        )
        .bind(job.dataset.as_ref().map(|dataset| &dataset.data_file_id))
        .bind(job.dataset.as_ref().map(|dataset| &dataset.blob_id))
        .bind(job.dataset.as_ref().map(|dataset| &dataset.media_type))
        .bind(sql::FAIR_SHARE_SPACING_MS)
        .bind(i64::from(job.priority))
        .bind(job.labels.as_deref())
        .bind(job.callback_url.as_deref())
        .execute(&mut *connection)
        .await?;
    if B::rows_affected(&inserted) == 1 {
        if job.priority > 0 {
            sqlx::query(sql::MAKE_ROOM)
                .bind(&job.owner_id)
                .bind(&job.id)
                .bind(i64::from(job.priority))
                .bind(sql::FAIR_SHARE_SPACING_MS)
                .execute(&mut *connection)
                .await?;
        }
        return Ok(Inserted::Created);
    }
    // A batch retried after a commit whose answer was lost finds its own job.
    let own: Option<String> = sqlx::query_scalar(sql::JOB_OWNER)
        .bind(&job.id)
        .fetch_optional(&mut *connection)
        .await?;
    if own.as_deref() == Some(job.owner_id.as_str()) {
        return Ok(Inserted::Created);
    }
    let existing = match &job.idempotency {
        Some(idempotency) => {
            sqlx::query(sql::JOB_BY_IDEMPOTENCY_KEY)
                .bind(&job.owner_id)
                .bind(&idempotency.key)
                .fetch_optional(&mut *connection)
                .await?
        }
        None => None,
    };
    match existing {
        Some(row) => Ok(Inserted::Existing {
            job_id: row.try_get("id")?,
            request_hash: row.try_get("request_hash")?,
        }),
        None => Err(StoreError::Conflict(format!("job {}", job.id))),
    }
}

async fn finish<B>(
    connection: &mut <B::Db as Database>::Connection,
    lease: &Lease,
    end: &ExecutionEnd,
) -> Result<bool, StoreError>
where
    B: Backend,
    for<'c> &'c mut <B::Db as Database>::Connection: Executor<'c, Database = B::Db>,
    <B::Db as Database>::Arguments: IntoArguments<B::Db>,
    for<'q> i64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> f64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> bool: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> String: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q str: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q [u8]: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Vec<u8>: Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<i64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<f64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<bool>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<String>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q str>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q String>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q String: Encode<'q, B::Db> + Type<B::Db>,
    for<'a> &'a str: ColumnIndex<<B::Db as Database>::Row>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    let job = sqlx::query(sql::FINISH_JOB)
        .bind(end.job_status.as_str())
        .bind(end.job_ended_at())
        .bind(&lease.job_id)
        .bind(lease.token)
        .bind(end.ended_at)
        .execute(&mut *connection)
        .await?;
    if B::rows_affected(&job) != 1 {
        // The lease was lost: someone else owns the job now. Change nothing.
        return Ok(false);
    }
    sqlx::query(sql::FINISH_EXECUTION)
        .bind(end.status.as_str())
        .bind(end.ended_at)
        .bind(end.error.as_ref().map(|error| error.code.as_str()))
        .bind(end.error.as_ref().map(|error| error.message.as_str()))
        .bind(&end.log_tail)
        .bind(end.log_truncated)
        .bind(&end.execution_id)
        .bind(&lease.job_id)
        .execute(&mut *connection)
        .await?;
    if let Some(output) = &end.output {
        let bytes = i64::try_from(output.len()).unwrap_or(i64::MAX);
        sqlx::query(sql::INSERT_OUTPUT)
            .bind(&lease.job_id)
            .bind(output)
            .bind(bytes)
            .execute(&mut *connection)
            .await?;
    }
    Ok(true)
}

#[async_trait::async_trait]
impl<B> JobStore for B
where
    B: Backend,
    for<'c> &'c mut <B::Db as Database>::Connection: Executor<'c, Database = B::Db>,
    <B::Db as Database>::Arguments: IntoArguments<B::Db>,
    for<'q> i64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> f64: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> bool: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> String: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q str: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q [u8]: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Vec<u8>: Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<i64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<f64>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<bool>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<String>: Encode<'q, B::Db> + Decode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q str>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> Option<&'q String>: Encode<'q, B::Db> + Type<B::Db>,
    for<'q> &'q String: Encode<'q, B::Db> + Type<B::Db>,
    for<'a> &'a str: ColumnIndex<<B::Db as Database>::Row>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    async fn create_user(&self, username: &str, password_hash: &str) -> Result<User, StoreError> {
        let user = User::new(username, password_hash);
        sqlx::query(sql::INSERT_USER)
            .bind(&user.id)
            .bind(&user.username)
            .bind(&user.password_hash)
            .bind(now_millis())
            .execute(self.writer())
            .await
            .map_err(|error| user_conflict(error, username))?;
        Ok(user)
    }

    async fn user_by_name(&self, username: &str) -> Result<Option<User>, StoreError> {
        let row = sqlx::query(sql::USER_BY_NAME)
            .bind(username)
            .fetch_optional(self.readers())
            .await?;
        row.map(|row| {
            Ok(User {
                id: row.try_get("id")?,
                username: row.try_get("username")?,
                password_hash: row.try_get("password_hash")?,
                disabled: row.try_get("disabled")?,
            })
        })
        .transpose()
    }

    async fn user_access(&self, user_id: &str) -> Result<Option<UserAccess>, StoreError> {
        let row = sqlx::query(sql::USER_ACCESS)
            .bind(user_id)
            .fetch_optional(self.readers())
            .await?;
        row.map(|row| {
            Ok(UserAccess {
                disabled: row.try_get("disabled")?,
                tokens_valid_after: row.try_get("tokens_valid_after")?,
                admin: row.try_get("admin")?,
            })
        })
        .transpose()
    }

    async fn usage(&self, user_id: &str) -> Result<Option<Usage>, StoreError> {
        let row = sqlx::query(sql::USAGE)
            .bind(user_id)
            .fetch_optional(self.readers())
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let count = |column: &str| -> Result<u64, StoreError> {
            let value: i64 = row.try_get(column)?;
            Ok(u64::try_from(value).unwrap_or(0))
        };
        let quota = |column: &str| -> Result<Option<u64>, StoreError> {
            let value: Option<i64> = row.try_get(column)?;
            Ok(value.map(|value| u64::try_from(value).unwrap_or(0)))
        };
        Ok(Some(Usage {
            pending_jobs: count("pending_jobs")?,
            dataset_bytes: count("dataset_bytes")?,
            output_bytes: count("output_bytes")?,
            quotas: UserQuotas {
                pending_jobs: quota("max_pending_jobs")?,
                dataset_bytes: quota("max_dataset_bytes")?,
                output_bytes: quota("max_output_bytes")?,
            },
        }))
    }

    async fn update_user(&self, username: &str, change: &UserChange) -> Result<bool, StoreError> {
        let query = match change {
            UserChange::Disable => sqlx::query(sql::DISABLE_USER)
                .bind(username)
                .bind(true)
                .bind(now_millis()),
            UserChange::Enable => sqlx::query(sql::ENABLE_USER).bind(username).bind(false),
            UserChange::RevokeTokens => sqlx::query(sql::REVOKE_TOKENS)
                .bind(username)
                .bind(now_millis()),
            UserChange::Password(hash) => sqlx::query(sql::SET_PASSWORD)
                .bind(username)
                .bind(hash.as_str())
                .bind(now_millis()),
            UserChange::Admin(true) => sqlx::query(sql::MAKE_ADMIN).bind(username),
            UserChange::Admin(false) => {
                let result = sqlx::query(sql::UNMAKE_ADMIN)
                    .bind(username)
                    .execute(self.writer())
                    .await?;
                if B::rows_affected(&result) > 0 {
                    return Ok(true);
                }
                let exists: i64 = sqlx::query_scalar(sql::USER_EXISTS)
                    .bind(username)
                    .fetch_one(self.writer())
                    .await?;
                if exists == 0 {
                    return Ok(false);
                }
                return Err(StoreError::Conflict(format!(
                    "user {username:?} is the last administrator; make another one first"
                )));
            }
            UserChange::Quotas(quotas) => {
                let stored =
                    |quota: Option<u64>| quota.map(|quota| quota.min(i64::MAX as u64) as i64);
                sqlx::query(sql::SET_USER_QUOTAS)
                    .bind(username)
                    .bind(stored(quotas.pending_jobs))
                    .bind(stored(quotas.dataset_bytes))
                    .bind(stored(quotas.output_bytes))
            }
        };
        let result = query.execute(self.writer()).await?;
        Ok(B::rows_affected(&result) > 0)
    }

    async fn delete_user(&self, username: &str) -> Result<bool, StoreError> {
        let mut transaction = self.writer().begin().await?;
        let live: i64 = sqlx::query_scalar(sql::USER_LIVE_JOBS)
            .bind(username)
            .fetch_one(&mut *transaction)
            .await?;
        if live > 0 {
            return Err(StoreError::Conflict(format!(
                "user {username:?} has {live} jobs pending or running; cancel them, or disable \
                 the user and wait for them to end"
            )));
        }
        for statement in [
            sql::DELETE_USER_WEBHOOKS,
            sql::DELETE_USER_JOBS,
            sql::DELETE_USER_DATA_FILES,
        ] {
            sqlx::query(statement)
                .bind(username)
                .execute(&mut *transaction)
                .await?;
        }
        let deleted = sqlx::query(sql::DELETE_USER)
            .bind(username)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(B::rows_affected(&deleted) > 0)
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(sql::USER_COUNT)
            .fetch_one(self.writer())
            .await?;
        Ok(count as u64)
    }

    async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError> {
        self.batcher().insert_job(job).await
    }

    async fn insert_jobs(&self, jobs: &[NewJob]) -> Result<Vec<Inserted>, StoreError> {
        self.batcher().insert_jobs(jobs).await
    }

    async fn job_by_idempotency_key(
        &self,
        owner_id: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let row = sqlx::query(sql::JOB_BY_IDEMPOTENCY_KEY)
            .bind(owner_id)
            .bind(key)
            .fetch_optional(self.readers())
            .await?;
        row.map(|row| Ok((row.try_get("id")?, row.try_get("request_hash")?)))
            .transpose()
    }

    async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
        // One read transaction: on SQLite one snapshot of the job and its executions; on
        // PostgreSQL (read committed) each statement has its own, so a read that crosses
        // an execution's end may show the job `RUNNING` and the execution ended.
        let mut transaction = self.readers().begin().await?;
        let Some(row) = sqlx::query(sql::JOB)
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(&mut *transaction)
            .await?
        else {
            return Ok(None);
        };
        let executions = sqlx::query(sql::EXECUTIONS)
            .bind(job_id)
            .fetch_all(&mut *transaction)
            .await?
            .iter()
            .map(execution_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        transaction.commit().await?;
        Ok(Some(JobRecord::new(summary_from_row(&row)?, executions)))
    }

    async fn jobs(
        &self,
        owner_id: &str,
        filter: &JobFilter,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<JobSummary>, StoreError> {
        let page = JobsPage::new::<B>(owner_id, filter, before, limit);
        // Only constants and parameter numbers are spliced in; every value is bound.
        let mut query = sqlx::query(sqlx::AssertSqlSafe(page.sql));
        for argument in page.arguments {
            query = match argument {
                Argument::Text(text) => query.bind(text),
                Argument::Number(number) => query.bind(number),
            };
        }
        query
            .fetch_all(self.readers())
            .await?
            .iter()
            .map(summary_from_row)
            .collect()
    }

    async fn job_output(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobOutput>, StoreError> {
        let row = sqlx::query(sql::JOB_OUTPUT)
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(self.readers())
            .await?;
        row.map(|row| {
            Ok(JobOutput::from_parts(
                JobStatus::parse(&row.try_get::<String, _>("status")?)?,
                row.try_get("output")?,
            ))
        })
        .transpose()
    }

    async fn job_counts(&self, owner_id: &str) -> Result<Vec<(JobStatus, u64)>, StoreError> {
        sqlx::query(sql::JOB_COUNTS)
            .bind(owner_id)
            .fetch_all(self.readers())
            .await?
            .iter()
            .map(|row| {
                Ok((
                    JobStatus::parse(&row.try_get::<String, _>("status")?)?,
                    row.try_get::<i64, _>("jobs")?.max(0) as u64,
                ))
            })
            .collect()
    }

    async fn job_input(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobInput>, StoreError> {
        let row = sqlx::query(sql::JOB_INPUT)
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(self.readers())
            .await?;
        row.map(|row| {
            let data_file_id: Option<String> = row.try_get("data_file_id")?;
            let blob_id: Option<String> = row.try_get("data_blob_id")?;
            let media_type: Option<String> = row.try_get("data_media_type")?;
            Ok(JobInput {
                input: row.try_get("input")?,
                dataset: match (data_file_id, blob_id, media_type) {
                    (Some(data_file_id), Some(blob_id), Some(media_type)) => Some(JobDataset {
                        data_file_id,
                        blob_id,
                        media_type,
                    }),
                    _ => None,
                },
            })
        })
        .transpose()
    }

    async fn report_replica(
        &self,
        report: &ReplicaReport,
        forget_before: Millis,
    ) -> Result<(), StoreError> {
        sqlx::query(sql::REPORT_REPLICA)
            .bind(&report.id)
            .bind(&report.name)
            .bind(i64::from(report.workers))
            .bind(i64::from(report.busy))
            .bind(report.accepted as i64)
            .bind(report.ended as i64)
            .bind(report.started_at)
            .bind(report.seen_at)
            .execute(self.writer())
            .await?;
        sqlx::query(sql::FORGET_REPLICAS)
            .bind(forget_before)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    async fn queue_depth(&self) -> Result<Vec<QueueDepth>, StoreError> {
        sqlx::query(sql::QUEUE_DEPTH)
            .fetch_all(self.readers())
            .await?
            .iter()
            .map(|row| {
                Ok(QueueDepth {
                    problem: row.try_get("problem")?,
                    pending: row.try_get::<i64, _>("pending")?.max(0) as u64,
                    running: row.try_get::<i64, _>("running")?.max(0) as u64,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()
    }

    async fn service_stats(&self, since: Millis) -> Result<ServiceStats, StoreError> {
        let replicas = sqlx::query(sql::REPLICAS)
            .fetch_all(self.readers())
            .await?
            .iter()
            .map(|row| {
                Ok(ReplicaReport {
                    id: row.try_get("id")?,
                    name: row.try_get("name")?,
                    workers: row.try_get::<i64, _>("workers")?.max(0) as u32,
                    busy: row.try_get::<i64, _>("busy")?.max(0) as u32,
                    accepted: row.try_get::<i64, _>("accepted")?.max(0) as u64,
                    ended: row.try_get::<i64, _>("ended")?.max(0) as u64,
                    started_at: row.try_get("started_at")?,
                    seen_at: row.try_get("seen_at")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let queue = self.queue_depth().await?;
        let per_minute = |rows: Vec<<B::Db as Database>::Row>| {
            rows.iter()
                .map(|row| {
                    Ok((
                        row.try_get::<i64, _>("minute")?,
                        row.try_get::<i64, _>("jobs")?,
                    ))
                })
                .collect::<Result<Vec<_>, StoreError>>()
        };
        let accepted = per_minute(
            sqlx::query(sql::ACCEPTED_PER_MINUTE)
                .bind(first_job_id_since(since))
                .fetch_all(self.readers())
                .await?,
        )?;
        let ended = per_minute(
            sqlx::query(sql::ENDED_PER_MINUTE)
                .bind(since)
                .fetch_all(self.readers())
                .await?,
        )?;
        Ok(ServiceStats {
            replicas,
            queue,
            minutes: fill_minutes(since, now_millis(), &accepted, &ended),
        })
    }

    async fn claim_jobs(&self, lease: Duration, limit: u32) -> Result<Vec<ClaimedJob>, StoreError> {
        self.batcher()
            .claim(now_millis() + lease.as_millis() as Millis, limit)
            .await
    }

    fn release_unstarted(&self, lease: &Lease) -> QueuedWrite {
        self.batcher().queue(Write::Release {
            lease: lease.clone(),
        })
    }

    async fn heartbeat(&self, leases: &[Lease], lease: Duration) -> Result<Vec<Lease>, StoreError> {
        self.batcher()
            .heartbeat(leases, now_millis() + lease.as_millis() as Millis)
            .await
    }

    fn start_execution(
        &self,
        lease: &Lease,
        execution_id: &str,
        attempt: u32,
        plugin: &PluginRef,
        started_at: Millis,
    ) -> QueuedWrite {
        self.batcher().queue(Write::Start {
            lease: lease.clone(),
            execution_id: execution_id.to_owned(),
            attempt,
            plugin: plugin.clone(),
            started_at,
        })
    }

    async fn record_progress(
        &self,
        lease: &Lease,
        execution_id: &str,
        update: &LiveUpdate,
    ) -> Result<bool, StoreError> {
        self.batcher()
            .queue(Write::Progress {
                lease: lease.clone(),
                execution_id: execution_id.to_owned(),
                update: update.clone(),
            })
            .lease_held()
            .await
    }

    fn finish_execution(&self, lease: &Lease, end: &ExecutionEnd) -> QueuedWrite {
        self.batcher().queue(Write::Finish {
            lease: lease.clone(),
            end: end.clone(),
        })
    }

    async fn reap_expired(&self, max_attempts: u32) -> Result<u64, StoreError> {
        self.reap(max_attempts, false).await
    }

    async fn purge_finished(&self, ended_before: Millis, batch: u32) -> Result<u64, StoreError> {
        let mut transaction = self.writer().begin().await?;
        let up_to: Option<i64> = sqlx::query_scalar(sql::PURGE_UP_TO)
            .bind(ended_before)
            .bind(i64::from(batch))
            .fetch_one(&mut *transaction)
            .await?;
        let Some(up_to) = up_to else {
            return Ok(0);
        };
        sqlx::query(sql::UNCOUNT_PURGED_OUTPUTS)
            .bind(up_to)
            .execute(&mut *transaction)
            .await?;
        sqlx::query(sql::PURGE_WEBHOOKS)
            .bind(up_to)
            .execute(&mut *transaction)
            .await?;
        let deleted = sqlx::query(sql::PURGE_FINISHED)
            .bind(up_to)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(Self::rows_affected(&deleted))
    }

    async fn cancel_job(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<CancelOutcome>, StoreError> {
        let mut transaction = self.writer().begin().await?;
        let cancelled = sqlx::query(sql::CANCEL_PENDING)
            .bind(job_id)
            .bind(owner_id)
            .bind(now_millis())
            .execute(&mut *transaction)
            .await?;
        let outcome = if Self::rows_affected(&cancelled) == 1 {
            let change = JobChange {
                owner_id: owner_id.to_owned(),
                job_id: job_id.to_owned(),
            };
            Self::announce_changes(&mut transaction, std::slice::from_ref(&change)).await?;
            transaction.commit().await?;
            self.changes_committed(&[change]);
            return Ok(Some(CancelOutcome::Cancelled));
        } else {
            let requested = sqlx::query(sql::REQUEST_CANCEL)
                .bind(job_id)
                .bind(owner_id)
                .execute(&mut *transaction)
                .await?;
            if Self::rows_affected(&requested) == 1 {
                Self::announce_cancel(&mut transaction, job_id).await?;
                CancelOutcome::Requested
            } else {
                let status: Option<String> = sqlx::query_scalar(sql::JOB_STATUS)
                    .bind(job_id)
                    .bind(owner_id)
                    .fetch_optional(&mut *transaction)
                    .await?;
                match status {
                    Some(status) => CancelOutcome::Ended(JobStatus::parse(&status)?),
                    None => return Ok(None),
                }
            }
        };
        transaction.commit().await?;
        Ok(Some(outcome))
    }

    async fn claim_webhooks(
        &self,
        claim: &WebhookClaim,
    ) -> Result<Vec<WebhookDelivery>, StoreError> {
        let now = now_millis();
        let until =
            now.saturating_add(Millis::try_from(claim.hold.as_millis()).unwrap_or(Millis::MAX));
        let mut transaction = self.writer().begin().await?;
        if let Some(lock) = B::LOCK_WEBHOOK_CLAIMS {
            sqlx::query(lock).execute(&mut *transaction).await?;
        }
        let rows = sqlx::query(sql::CLAIM_WEBHOOKS)
            .bind(until)
            .bind(now)
            .bind(i64::from(claim.deliveries))
            .bind(i64::from(claim.per_destination))
            .fetch_all(&mut *transaction)
            .await?;
        transaction.commit().await?;
        rows.iter()
            .map(|row| {
                Ok(WebhookDelivery {
                    id: row.try_get("id")?,
                    job_id: row.try_get("job_id")?,
                    owner_id: row.try_get("owner_id")?,
                    url: row.try_get("url")?,
                    status: JobStatus::parse(&row.try_get::<String, _>("status")?)?,
                    attempts: u32::try_from(row.try_get::<i64, _>("attempts")?).unwrap_or(u32::MAX),
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }

    async fn settle_webhook(&self, id: &str, outcome: &WebhookOutcome) -> Result<(), StoreError> {
        let now = now_millis();
        let query = match outcome {
            WebhookOutcome::Delivered => sqlx::query(sql::WEBHOOK_DELIVERED).bind(id).bind(now),
            WebhookOutcome::RetryAt { at, error } => sqlx::query(sql::WEBHOOK_RETRY)
                .bind(id)
                .bind(*at)
                .bind(error.as_str()),
            WebhookOutcome::GiveUp { error } => sqlx::query(sql::WEBHOOK_GIVE_UP)
                .bind(id)
                .bind(now)
                .bind(error.as_str()),
        };
        query.execute(self.writer()).await?;
        Ok(())
    }

    async fn webhook_secret(
        &self,
        owner_id: &str,
        fresh: &str,
        rotate: bool,
    ) -> Result<Option<String>, StoreError> {
        let mut transaction = self.writer().begin().await?;
        sqlx::query(sql::SET_WEBHOOK_SECRET)
            .bind(owner_id)
            .bind(fresh)
            .bind(rotate)
            .execute(&mut *transaction)
            .await?;
        let secret: Option<Option<String>> = sqlx::query_scalar(sql::WEBHOOK_SECRET)
            .bind(owner_id)
            .fetch_optional(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(secret.flatten())
    }

    async fn begin_blob(&self) -> Result<String, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        sqlx::query(sql::BEGIN_BLOB)
            .bind(&id)
            .bind(now_millis())
            .execute(self.writer())
            .await?;
        Ok(id)
    }

    async fn write_blob_chunk(
        &self,
        blob_id: &str,
        seq: u32,
        data: &[u8],
    ) -> Result<(), StoreError> {
        let mut transaction = self.writer().begin().await?;
        let touched = sqlx::query(sql::TOUCH_BLOB)
            .bind(data.len() as i64)
            .bind(now_millis())
            .bind(blob_id)
            .execute(&mut *transaction)
            .await?;
        if Self::rows_affected(&touched) != 1 {
            return Err(StoreError::Conflict(format!(
                "no unfinished upload {blob_id}"
            )));
        }
        sqlx::query(sql::INSERT_CHUNK)
            .bind(blob_id)
            .bind(i64::from(seq))
            .bind(data)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(())
    }

    async fn complete_upload(
        &self,
        file: &DataFile,
        max_dataset_bytes: u64,
    ) -> Result<DataFile, StoreError> {
        // Two uploads of the same bytes completing at once race for the digest, and a
        // blob found may be swept before the data file refers to it; the loser of
        // either race fails its transaction and the retry sees the winner's state.
        let mut attempt = 1;
        loop {
            let once = async {
                let mut transaction = self.writer().begin().await?;
                // Checked here, with the owner's row locked, so that concurrent uploads cannot
                // all fit one quota.
                let quotas = Quotas {
                    dataset_bytes: max_dataset_bytes,
                    ..Quotas::default()
                };
                let Some(state) =
                    quota_state::<Self>(&mut *transaction, &file.owner_id, &quotas).await?
                else {
                    return Err(StoreError::Refused(Refusal::NoSuchOwner));
                };
                if state.dataset_bytes + file.size > state.max_dataset_bytes {
                    return Err(StoreError::Refused(Refusal::DatasetBytes(
                        state.max_dataset_bytes,
                    )));
                }
                let existing: Option<String> = sqlx::query_scalar(sql::BLOB_BY_DIGEST)
                    .bind(&file.sha256)
                    .fetch_optional(&mut *transaction)
                    .await?;
                let blob_id = match existing {
                    Some(existing) if existing != file.blob_id => {
                        sqlx::query(sql::DISCARD_BLOB)
                            .bind(&file.blob_id)
                            .execute(&mut *transaction)
                            .await?;
                        existing
                    }
                    _ => {
                        let sealed = sqlx::query(sql::SEAL_BLOB)
                            .bind(&file.sha256)
                            .bind(file.size as i64)
                            .bind(now_millis())
                            .bind(&file.blob_id)
                            .execute(&mut *transaction)
                            .await?;
                        if Self::rows_affected(&sealed) != 1 {
                            return Err(StoreError::Conflict(format!(
                                "no unfinished upload {}",
                                file.blob_id
                            )));
                        }
                        file.blob_id.clone()
                    }
                };
                sqlx::query(sql::INSERT_DATA_FILE)
                    .bind(&file.id)
                    .bind(&file.owner_id)
                    .bind(&blob_id)
                    .bind(file.size as i64)
                    .bind(&file.sha256)
                    .bind(&file.media_type)
                    .bind(&file.filename)
                    .bind(file.created_at)
                    .execute(&mut *transaction)
                    .await?;
                transaction.commit().await?;
                Ok(DataFile {
                    blob_id,
                    ..file.clone()
                })
            };
            match once.await {
                Err(StoreError::Database(error)) if attempt < 3 => {
                    tracing::debug!(%error, attempt, "completing an upload raced; retrying");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn discard_blob(&self, blob_id: &str) -> Result<(), StoreError> {
        sqlx::query(sql::DISCARD_BLOB)
            .bind(blob_id)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    async fn data_file(&self, owner_id: &str, id: &str) -> Result<Option<DataFile>, StoreError> {
        sqlx::query(sql::DATA_FILE)
            .bind(id)
            .bind(owner_id)
            .fetch_optional(self.readers())
            .await?
            .as_ref()
            .map(data_file_from_row)
            .transpose()
    }

    async fn delete_data_file(&self, owner_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut transaction = self.writer().begin().await?;
        let deleted = sqlx::query(sql::DELETE_DATA_FILE)
            .bind(id)
            .bind(owner_id)
            .fetch_optional(&mut *transaction)
            .await?;
        let Some(deleted) = deleted else {
            return Ok(false);
        };
        let blob_id: String = deleted.try_get("blob_id")?;
        let size: i64 = deleted.try_get("size")?;
        // Its owner's jobs that refer to it keep its bytes, and they stay counted.
        sqlx::query(sql::KEEP_DELETED_DATASET)
            .bind(owner_id)
            .bind(&blob_id)
            .bind(size)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        // On its own: if a job started referring to the blob meanwhile, this fails on
        // the foreign key and the blob stays, which is right; the sweep retries.
        if let Err(error) = sqlx::query(sql::DROP_UNREFERENCED_BLOB)
            .bind(&blob_id)
            .execute(self.writer())
            .await
        {
            tracing::debug!(%error, blob = %blob_id, "blob kept for now");
        }
        Ok(true)
    }

    async fn blob(&self, blob_id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        use futures_util::TryStreamExt;

        let mut transaction = self.readers().begin().await?;
        let size: Option<i64> = sqlx::query_scalar(sql::BLOB_SIZE)
            .bind(blob_id)
            .fetch_optional(&mut *transaction)
            .await?;
        let Some(size) = size else {
            return Ok(None);
        };
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut chunks = sqlx::query_scalar::<_, Vec<u8>>(sql::BLOB_CHUNKS)
            .bind(blob_id)
            .fetch(&mut *transaction);
        while let Some(chunk) = chunks.try_next().await? {
            bytes.extend_from_slice(&chunk);
        }
        drop(chunks);
        transaction.commit().await?;
        if bytes.len() as i64 != size {
            return Err(StoreError::Corrupt(format!(
                "blob {blob_id} holds {} bytes, not {size}",
                bytes.len()
            )));
        }
        Ok(Some(bytes))
    }

    async fn sweep_blobs(&self, stale_before: Millis, batch: u32) -> Result<u64, StoreError> {
        let stale = sqlx::query(sql::SWEEP_STALE_UPLOADS)
            .bind(stale_before)
            .bind(i64::from(batch))
            .execute(self.writer())
            .await?;
        let unreferenced = sqlx::query(sql::SWEEP_UNREFERENCED_BLOBS)
            .bind(i64::from(batch))
            .execute(self.writer())
            .await?;
        Ok(Self::rows_affected(&stale) + Self::rows_affected(&unreferenced))
    }

    async fn recover_interrupted(&self, max_attempts: u32) -> Result<u64, StoreError> {
        self.recover(max_attempts).await
    }

    async fn watch_new_jobs(&self, events: Arc<dyn JobEvents>) {
        self.watch(events).await
    }
}

/// One value bound to a [`JobsPage`]'s statement.
enum Argument {
    Text(String),
    Number(i64),
}

/// The statement of one page of `GET /jobs`, with its filter's conditions, and its values in
/// parameter order.
struct JobsPage {
    sql: String,
    arguments: Vec<Argument>,
}

impl JobsPage {
    fn new<B: Backend>(
        owner_id: &str,
        filter: &JobFilter,
        before: Option<&str>,
        limit: u32,
    ) -> JobsPage {
        let mut page = JobsPage {
            sql: format!(
                "SELECT id, problem, {} AS status, created_at, ended_at, labels FROM jobs
                 WHERE owner_id = $1",
                sql::CLIENT_STATUS
            ),
            arguments: vec![Argument::Text(owner_id.to_owned())],
        };
        if let Some(before) = before {
            let at = page.push(Argument::Text(before.to_owned()));
            page.sql.push_str(&format!(" AND id < ${at}"));
        }
        if !filter.statuses.is_empty() {
            let list = page.list(filter.statuses.iter().map(|status| status.as_str()));
            page.sql
                .push_str(&format!(" AND {} IN ({list})", sql::CLIENT_STATUS));
        }
        if let Some(problem) = &filter.problem {
            let at = page.push(Argument::Text(problem.clone()));
            page.sql.push_str(&format!(" AND problem = ${at}"));
        }
        for (key, value) in &filter.labels {
            let key = page.push(Argument::Text(key.clone()));
            let value = page.push(Argument::Text(value.clone()));
            page.sql
                .push_str(&format!(" AND {}", B::label_condition(key, value)));
        }
        if let Some(since) = filter.since {
            let at = page.push(Argument::Number(since));
            page.sql.push_str(&format!(" AND created_at >= ${at}"));
        }
        if let Some(until) = filter.until {
            let at = page.push(Argument::Number(until));
            page.sql.push_str(&format!(" AND created_at < ${at}"));
        }
        if !filter.ids.is_empty() {
            let list = page.list(filter.ids.iter().map(String::as_str));
            page.sql.push_str(&format!(" AND id IN ({list})"));
        }
        let at = page.push(Argument::Number(i64::from(limit)));
        page.sql.push_str(&format!(" ORDER BY id DESC LIMIT ${at}"));
        page
    }

    /// Adds a value; its parameter's number.
    fn push(&mut self, argument: Argument) -> usize {
        self.arguments.push(argument);
        self.arguments.len()
    }

    /// Adds text values; their parameters, comma-separated.
    fn list<'a>(&mut self, values: impl Iterator<Item = &'a str>) -> String {
        values
            .map(|value| format!("${}", self.push(Argument::Text(value.to_owned()))))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
