//! Jobs as clients see them: stored, read, listed, counted, cancelled and purged.

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, FINISH_PREFIX, Param};
use super::batch::Batched;
use super::jobs_page::JobFilter;
use super::jobs_page::{Argument, JobsPage};
use super::plugins::PluginBinding;
use super::records::ExecutionRecord;
use super::records::RaceEntrant;
use super::records::{Inserted, JobDataset, NewJob};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::statement::{Statement, WriteConnection};
use super::types::{JobChange, JobEvents, JobStatus, Millis, StoreError, now_millis};
use crate::objective::{Objective, Sense};

/// What [`JobQueue::cancel_job`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was pending: it is `CANCELLED` and never runs.
    Cancelled,
    /// The job is running: its worker was asked to stop, and ends it `CANCELLED`.
    Requested,
    /// The job had ended already, with this status.
    Ended(JobStatus),
}

/// What [`JobQueue::finish_job`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishOutcome {
    /// The job was pending: it is cancelled, as a cancel does.
    Cancelled,
    /// The job runs: its worker was asked to have it return what it has now.
    Requested,
    /// The job was waiting in its worker's queue: its cancellation was asked for.
    CancelRequested,
    /// The job had ended already, with this status.
    Ended(JobStatus),
}

impl NewJob {
    /// The project it is stored in: its owner's personal one (the owner's id) where it names
    /// none, as the insert writes it.
    pub fn project(&self) -> &str {
        self.project_id.as_deref().unwrap_or(&self.owner_id)
    }
}

/// A job with its executions, for the status endpoint.
#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: String,
    pub problem: String,
    pub status: JobStatus,
    pub created_at: Millis,
    pub ended_at: Option<Millis>,
    pub labels: Option<String>,
    /// Its output's objective, once it completed, where its use case declares one.
    pub objective: Option<Objective>,
    /// The component it was bound to at acceptance (`None` for a job accepted before jobs
    /// were bound).
    pub binding: Option<PluginBinding>,
    /// The job it runs again, for a rerun.
    pub rerun_of: Option<String>,
    /// The job whose output it started from (`options.warm_start`).
    pub warm_start: Option<String>,
    /// It completed with what it had when a finish asked it to stop.
    pub stopped_early: bool,
    pub executions: Vec<ExecutionRecord>,
    /// For a race, its entrants.
    pub race: Option<Vec<RaceEntrant>>,
    /// The project it belongs to (its owner's id for the owner's personal project).
    pub project_id: Option<String>,
}

/// A job as `GET /jobs` lists it.
#[derive(Debug, Clone)]
pub struct JobSummary {
    pub id: String,
    pub problem: String,
    pub status: JobStatus,
    pub created_at: Millis,
    pub ended_at: Option<Millis>,
    /// A JSON object of strings, if the job has labels.
    pub labels: Option<String>,
    /// Its output's objective, once it completed, where its use case declares one.
    pub objective: Option<Objective>,
}

/// What a job was launched with.
#[derive(Debug, Clone)]
pub struct JobInput {
    /// The use case's name.
    pub problem: String,
    /// The inline input, or for a dataset job the parameters given beside it (or nothing).
    pub input: String,
    pub dataset: Option<JobDataset>,
    /// The options it ran with, every default applied (a [`crate::options::JobOptions`]).
    pub options: String,
    pub labels: Option<String>,
    pub binding: Option<PluginBinding>,
    /// The project it belongs to (its owner's id for the owner's personal project).
    pub project_id: Option<String>,
}

/// The job's output, or where the job is instead.
#[derive(Debug, Clone)]
pub enum JobOutput {
    Completed(String),
    NotCompleted(JobStatus),
}

/// Jobs: stored, read and listed for their owners, cancelled, purged; and the notices of
/// their changes.
#[async_trait]
pub trait JobQueue: Send + Sync + 'static {
    /// Stores a new `PENDING` job durably; returns once it is committed. With an idempotency key
    /// the owner used before, stores nothing and names the job that key created.
    async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError>;

    /// Stores new `PENDING` jobs in one transaction, all or none, as [`JobQueue::insert_job`]
    /// stores one; what became of each, in order. The first job found stored before (an
    /// idempotency key used already) ends the list: none after it is stored.
    async fn insert_jobs(&self, jobs: &[NewJob]) -> Result<Vec<Inserted>, StoreError>;

    /// The job an idempotency key of this owner created, with its request digest.
    async fn job_by_idempotency_key(
        &self,
        owner_id: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, StoreError>;

    /// The job with its executions, if it exists and belongs to `owner_id`.
    async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError>;

    /// The owner's jobs that pass `filter`, newest first: at most `limit`, all older than the
    /// job `before` if given (keyset pagination on the time-ordered id).
    async fn jobs(
        &self,
        owner_id: &str,
        filter: &JobFilter,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<JobSummary>, StoreError>;

    /// The job's output, if it exists and belongs to `owner_id`.
    async fn job_output(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobOutput>, StoreError>;

    /// Cancels the owner's job: a pending one at once, a running one by marking it so that
    /// its worker (told through [`JobEvents::cancel_requested`], on
    /// every replica) stops it. `None` if the owner has no such job.
    async fn cancel_job(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<CancelOutcome>, StoreError>;

    /// Asks the owner's running job to stop and return what it has (its plugin hears
    /// `cancelled()`, and the job ends `COMPLETED` if it returns within its grace); a pending
    /// one is cancelled. Running replicas hear of it through
    /// [`JobEvents::finish_requested`]. `None` if the owner has no such job.
    async fn finish_job(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<FinishOutcome>, StoreError>;

    /// How many jobs an owner has in each status, as clients see it; statuses with none
    /// are left out.
    async fn job_counts(&self, owner_id: &str) -> Result<Vec<(JobStatus, u64)>, StoreError>;

    /// [`JobQueue::job_counts`] of a project's jobs, whoever launched them. Who may read
    /// them is the caller's to decide.
    async fn project_job_counts(
        &self,
        project_id: &str,
    ) -> Result<Vec<(JobStatus, u64)>, StoreError>;

    /// What a job was launched with, if the owner has it.
    async fn job_input(&self, owner_id: &str, job_id: &str)
    -> Result<Option<JobInput>, StoreError>;

    /// Deletes at most `batch` finished jobs (with their executions and outputs) that ended
    /// before `ended_before`, and the experiments none of whose runs is left. Returns how
    /// many jobs were deleted.
    async fn purge_finished(&self, ended_before: Millis, batch: u32) -> Result<u64, StoreError>;

    /// Tells `events` whenever a process makes a job pending or asks to cancel one (other
    /// processes only), and whenever any job changes as clients see it (every process, this
    /// one included).
    async fn watch_new_jobs(&self, events: Arc<dyn JobEvents>);
}

#[async_trait]
impl<B> JobQueue for B
where
    B: Backend + Batched,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    for<'a> &'a [u8]: Param<'a, B::Db>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    Vec<u8>: Column<B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<f64>: Param<'a, B::Db>,
    for<'a> Option<bool>: Param<'a, B::Db>,
    for<'a> Option<String>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
    for<'a> Option<&'a String>: Param<'a, B::Db>,
{
    async fn insert_job(&self, job: &NewJob) -> Result<Inserted, StoreError> {
        self.batcher().insert_job(job).await
    }

    async fn insert_jobs(&self, jobs: &[NewJob]) -> Result<Vec<Inserted>, StoreError> {
        self.batcher().insert_jobs(jobs, None).await
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
        row.map(|row| Ok((row.text("id")?, row.text("request_hash")?)))
            .transpose()
    }

    async fn job(&self, owner_id: &str, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
        // One read transaction: on SQLite one snapshot of the job and its executions; on
        // PostgreSQL (read committed) each statement has its own, so a read that crosses
        // an execution's end may show the job `RUNNING` and the execution ended.
        let mut transaction = self.readers().begin().await?;
        let Some(row) = sqlx::query(sql::JOB.as_str())
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
            .await?;
        let executions = rows::all(&executions)?;
        let race = match row.text_or_null("race")? {
            Some(_) => {
                let entrants = sqlx::query(sql::RACE_ENTRANTS.as_str())
                    .bind(job_id)
                    .bind(owner_id)
                    .fetch_all(&mut *transaction)
                    .await?;
                Some(rows::all(&entrants)?)
            }
            None => None,
        };
        transaction.commit().await?;
        let mut record = JobRecord::new(
            JobSummary::from_row(&row)?,
            Option::<PluginBinding>::from_row(&row)?,
            row.text_or_null("rerun_of")?,
            row.text_or_null("warm_start")?,
            row.flag("stopped_early")?,
            executions,
        );
        record.race = race;
        record.project_id = row.text_or_null("project_id")?;
        Ok(Some(record))
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
                Argument::Real(real) => query.bind(real),
            };
        }
        rows::all(&query.fetch_all(self.readers()).await?)
    }

    async fn job_output(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobOutput>, StoreError> {
        let row = sqlx::query(sql::JOB_OUTPUT.as_str())
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(self.readers())
            .await?;
        row.as_ref().map(JobOutput::from_row).transpose()
    }

    async fn job_counts(&self, owner_id: &str) -> Result<Vec<(JobStatus, u64)>, StoreError> {
        sqlx::query(sql::JOB_COUNTS.as_str())
            .bind(owner_id)
            .fetch_all(self.readers())
            .await?
            .iter()
            .map(|row| Ok((JobStatus::parse(&row.text("status")?)?, row.count("jobs")?)))
            .collect()
    }

    async fn project_job_counts(
        &self,
        project_id: &str,
    ) -> Result<Vec<(JobStatus, u64)>, StoreError> {
        sqlx::query(sql::PROJECT_JOB_COUNTS.as_str())
            .bind(project_id)
            .fetch_all(self.readers())
            .await?
            .iter()
            .map(|row| Ok((JobStatus::parse(&row.text("status")?)?, row.count("jobs")?)))
            .collect()
    }

    async fn job_input(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<JobInput>, StoreError> {
        let row = sqlx::query(sql::JOB_INPUT.as_str())
            .bind(job_id)
            .bind(owner_id)
            .fetch_optional(self.readers())
            .await?;
        row.as_ref().map(JobInput::from_row).transpose()
    }

    async fn purge_finished(&self, ended_before: Millis, batch: u32) -> Result<u64, StoreError> {
        let mut transaction = self.begin_write().await?;
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
        sqlx::query(sql::PURGE_EXPERIMENTS)
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
        let mut transaction = self.begin_write().await?;
        // The job's owner and project, if it was pending: a project's member may cancel
        // another's job, and the change is announced to the owner's and the project's streams.
        let cancelled = sqlx::query(sql::CANCEL_PENDING.as_str())
            .bind(job_id)
            .bind(owner_id)
            .bind(now_millis())
            .fetch_optional(&mut *transaction)
            .await?;
        let outcome = if let Some(row) = cancelled {
            let change = JobChange {
                owner_id: row.text("owner_id")?,
                job_id: job_id.to_owned(),
                project_id: row.text("project_id")?,
            };
            Self::announce_changes(&mut transaction, std::slice::from_ref(&change)).await?;
            transaction.commit().await?;
            self.changes_committed(&[change]);
            return Ok(Some(CancelOutcome::Cancelled));
        } else {
            let requested = sqlx::query(sql::REQUEST_CANCEL.as_str())
                .bind(job_id)
                .bind(owner_id)
                .execute(&mut *transaction)
                .await?;
            if Self::rows_affected(&requested) == 1 {
                Self::announce_cancel(&mut transaction, job_id).await?;
                CancelOutcome::Requested
            } else {
                let status: Option<String> = sqlx::query_scalar(sql::WRITABLE_JOB_STATUS.as_str())
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

    async fn finish_job(
        &self,
        owner_id: &str,
        job_id: &str,
    ) -> Result<Option<FinishOutcome>, StoreError> {
        let mut transaction = self.begin_write().await?;
        let requested = sqlx::query(sql::REQUEST_FINISH.as_str())
            .bind(job_id)
            .bind(owner_id)
            .execute(&mut *transaction)
            .await?;
        if Self::rows_affected(&requested) != 1 {
            // Not running: a cancel does what a finish asks of a pending job.
            drop(transaction);
            return Ok(self
                .cancel_job(owner_id, job_id)
                .await?
                .map(|outcome| match outcome {
                    CancelOutcome::Cancelled => FinishOutcome::Cancelled,
                    CancelOutcome::Requested => FinishOutcome::CancelRequested,
                    CancelOutcome::Ended(status) => FinishOutcome::Ended(status),
                }));
        }
        Self::announce_cancel(&mut transaction, &format!("{FINISH_PREFIX}{job_id}")).await?;
        transaction.commit().await?;
        Ok(Some(FinishOutcome::Requested))
    }

    async fn watch_new_jobs(&self, events: Arc<dyn JobEvents>) {
        self.watch(events).await
    }
}

pub(super) async fn insert_job<C: WriteConnection>(
    connection: &mut C,
    job: &NewJob,
) -> Result<Inserted, StoreError> {
    let place = sql::JobPlace {
        outranks: job.priority > 0,
        shared_project: job
            .project_id
            .as_ref()
            .is_some_and(|project_id| *project_id != job.owner_id),
    };
    let insert = Statement::new(sql::insert_job(place))
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
        .bind(
            job.dataset
                .as_ref()
                .and_then(|dataset| dataset.data_file_id.as_ref()),
        )
        .bind(job.dataset.as_ref().map(|dataset| &dataset.blob_id))
        .bind(job.dataset.as_ref().map(|dataset| &dataset.media_type))
        .bind(sql::FAIR_SHARE_SPACING_MS)
        .bind(i64::from(job.priority))
        .bind(job.labels.as_deref())
        .bind(job.callback_url.as_deref())
        .bind(&job.binding.version)
        .bind(&job.binding.digest)
        .bind(job.binding.requested.as_deref())
        .bind(job.rerun_of.as_deref())
        .bind(job.warm_start.as_deref())
        .bind(job.experiment_id.as_deref())
        .bind(job.race.as_deref())
        .bind(job.race_of.as_deref())
        .bind(job.project_id.as_deref());
    if connection.execute(insert).await? == 1 {
        if place.outranks {
            let make_room = Statement::new(sql::MAKE_ROOM)
                .bind(&job.owner_id)
                .bind(&job.id)
                .bind(i64::from(job.priority))
                .bind(sql::FAIR_SHARE_SPACING_MS);
            connection.execute(make_room).await?;
        }
        return Ok(Inserted::Created);
    }
    not_inserted(connection, job).await
}

/// What became of a job whose insert stored nothing: a batch retried after a commit whose
/// answer was lost finds its own job stored; a launch whose idempotency key was used before
/// finds the job that key names.
pub(super) async fn not_inserted<C: WriteConnection>(
    connection: &mut C,
    job: &NewJob,
) -> Result<Inserted, StoreError> {
    let own = connection
        .fetch_optional(Statement::new(sql::JOB_OWNER).bind(&job.id))
        .await?
        .map(|row| row.text("owner_id"))
        .transpose()?;
    if own.as_deref() == Some(job.owner_id.as_str()) {
        return Ok(Inserted::Created);
    }
    let existing = match &job.idempotency {
        Some(idempotency) => {
            let by_key = Statement::new(sql::JOB_BY_IDEMPOTENCY_KEY)
                .bind(&job.owner_id)
                .bind(&idempotency.key);
            connection.fetch_optional(by_key).await?
        }
        None => None,
    };
    match existing {
        Some(row) => Ok(Inserted::Existing {
            job_id: row.text("id")?,
            request_hash: row.text("request_hash")?,
        }),
        None => Err(StoreError::Conflict(format!("job {}", job.id))),
    }
}

/// A job's columns as clients see it: `JOB`'s and each row of `GET /jobs`, with the status
/// of [`sql::CLIENT_STATUS`].
impl FromRow for JobSummary {
    fn from_row(row: &impl Columns) -> Result<JobSummary, StoreError> {
        Ok(JobSummary {
            id: row.text("id")?,
            problem: row.text("problem")?,
            status: JobStatus::parse(&row.text("status")?)?,
            created_at: row.integer("created_at")?,
            ended_at: row.integer_or_null("ended_at")?,
            labels: row.text_or_null("labels")?,
            objective: objective_from(row)?,
        })
    }
}

/// The `objective` and `objective_sense` columns of a row, both set or none.
pub(super) fn objective_from(row: &impl Columns) -> Result<Option<Objective>, StoreError> {
    let value = row.real_or_null("objective")?;
    let sense = row.text_or_null("objective_sense")?;
    Ok(match (value, sense) {
        (Some(value), Some(sense)) => Some(Objective {
            value,
            sense: Sense::parse(&sense)
                .ok_or_else(|| StoreError::Corrupt(format!("objective sense {sense:?}")))?,
        }),
        _ => None,
    })
}

/// The dataset columns of a job row, all set or all null.
impl FromRow for Option<JobDataset> {
    fn from_row(row: &impl Columns) -> Result<Option<JobDataset>, StoreError> {
        let data_file_id = row.text_or_null("data_file_id")?;
        let blob_id = row.text_or_null("data_blob_id")?;
        let media_type = row.text_or_null("data_media_type")?;
        Ok(match (data_file_id, blob_id, media_type) {
            (data_file_id, Some(blob_id), Some(media_type)) => Some(JobDataset {
                data_file_id,
                blob_id,
                media_type,
            }),
            (None, None, None) => None,
            _ => {
                return Err(StoreError::Corrupt(
                    "a job's dataset columns are partly null".into(),
                ));
            }
        })
    }
}

/// `JOB_INPUT`'s columns.
impl FromRow for JobInput {
    fn from_row(row: &impl Columns) -> Result<JobInput, StoreError> {
        Ok(JobInput {
            problem: row.text("problem")?,
            input: row.text("input")?,
            dataset: Option::<JobDataset>::from_row(row)?,
            options: row.text("options")?,
            labels: row.text_or_null("labels")?,
            binding: Option::<PluginBinding>::from_row(row)?,
            project_id: row.text_or_null("project_id")?,
        })
    }
}

/// `JOB_OUTPUT`'s columns: the output only counts once the job completed.
impl FromRow for JobOutput {
    fn from_row(row: &impl Columns) -> Result<JobOutput, StoreError> {
        let status = JobStatus::parse(&row.text("status")?)?;
        Ok(match row.text_or_null("output")? {
            Some(output) if status == JobStatus::Completed => JobOutput::Completed(output),
            _ => JobOutput::NotCompleted(status),
        })
    }
}

impl JobRecord {
    fn new(
        summary: JobSummary,
        binding: Option<PluginBinding>,
        rerun_of: Option<String>,
        warm_start: Option<String>,
        stopped_early: bool,
        executions: Vec<ExecutionRecord>,
    ) -> JobRecord {
        JobRecord {
            id: summary.id,
            problem: summary.problem,
            status: summary.status,
            created_at: summary.created_at,
            ended_at: summary.ended_at,
            labels: summary.labels,
            objective: summary.objective,
            binding,
            rerun_of,
            warm_start,
            stopped_early,
            executions,
            race: None,
            project_id: None,
        }
    }
}
