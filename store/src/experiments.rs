//! Experiments: a definition kept for its owner, and the jobs that carry its id. The jobs are
//! ordinary jobs, each with [`super::NewJob::experiment_id`], stored with the definition in
//! one transaction (the group commit's `InsertJobs`); this file reads the runs back.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::batch::Batched;
use super::jobs::objective_from;
use super::records::ExperimentRecord;
use super::records::{Inserted, NewJob};
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{JobChange, JobStatus, Millis, StoreError};
use crate::objective::Objective;

/// What cancelling an experiment did to its jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CancelledRuns {
    /// Jobs that were in the queue: cancelled.
    pub cancelled: Vec<String>,
    /// Jobs claimed by a worker, not started: asked to stop before they run (this process's
    /// worker is told by the caller; other replicas hear of it from the store).
    pub claimed: Vec<String>,
}

/// One job of an experiment, as the summary reads it.
#[derive(Debug, Clone)]
pub struct ExperimentRun {
    pub job_id: String,
    /// As clients see it.
    pub status: JobStatus,
    /// Its labels, JSON: where it stands in the experiment.
    pub labels: Option<String>,
    pub objective: Option<Objective>,
    pub time_to_best_s: Option<f64>,
}

#[async_trait]
pub trait Experiments: Send + Sync + 'static {
    /// Stores an experiment and its jobs in one transaction, all or none, as
    /// [`super::JobQueue::insert_jobs`] stores jobs; what became of each job.
    async fn insert_experiment(
        &self,
        experiment: &ExperimentRecord,
        jobs: &[NewJob],
    ) -> Result<Vec<Inserted>, StoreError>;

    /// The experiment, if user `reader_id` may read it (its own, or its project's).
    async fn experiment(
        &self,
        reader_id: &str,
        id: &str,
    ) -> Result<Option<ExperimentRecord>, StoreError>;

    /// The experiments the owner launched (in any project), or with `project` that
    /// project's (whoever launched them; the caller checks the membership), newest first,
    /// below the id `before` if given.
    async fn experiments(
        &self,
        owner_id: &str,
        project: Option<&str>,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ExperimentRecord>, StoreError>;

    /// The jobs of the experiment that user `reader_id` may read, in the order they were
    /// launched.
    async fn experiment_runs(
        &self,
        reader_id: &str,
        id: &str,
    ) -> Result<Vec<ExperimentRun>, StoreError>;

    /// Cancels the experiment, if user `user_id` may (its own, or a project's it is a member
    /// of): marks it, cancels its jobs still in the queue at once, and asks those claimed but
    /// not started to stop before they run; running ones finish. `None` if it may not, or
    /// there is no such experiment.
    async fn cancel_experiment(
        &self,
        user_id: &str,
        id: &str,
        at: Millis,
    ) -> Result<Option<CancelledRuns>, StoreError>;
}

#[async_trait]
impl<B> Experiments for B
where
    B: Backend + Batched,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> Option<i64>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
{
    async fn insert_experiment(
        &self,
        experiment: &ExperimentRecord,
        jobs: &[NewJob],
    ) -> Result<Vec<Inserted>, StoreError> {
        self.batcher().insert_jobs(jobs, Some(experiment)).await
    }

    async fn experiment(
        &self,
        reader_id: &str,
        id: &str,
    ) -> Result<Option<ExperimentRecord>, StoreError> {
        let row = sqlx::query(sql::EXPERIMENT.as_str())
            .bind(id)
            .bind(reader_id)
            .fetch_optional(self.readers())
            .await?;
        row.map(|row| ExperimentRecord::from_row(&row)).transpose()
    }

    async fn experiments(
        &self,
        owner_id: &str,
        project: Option<&str>,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ExperimentRecord>, StoreError> {
        let rows = sqlx::query(sql::EXPERIMENTS)
            .bind(owner_id)
            .bind(before)
            .bind(i64::from(limit))
            .bind(project)
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows)
    }

    async fn experiment_runs(
        &self,
        reader_id: &str,
        id: &str,
    ) -> Result<Vec<ExperimentRun>, StoreError> {
        let rows = sqlx::query(sql::EXPERIMENT_RUNS.as_str())
            .bind(id)
            .bind(reader_id)
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows)
    }

    async fn cancel_experiment(
        &self,
        user_id: &str,
        id: &str,
        at: Millis,
    ) -> Result<Option<CancelledRuns>, StoreError> {
        let mut transaction = self.begin_write().await?;
        // Its jobs are its launcher's: the statements below name them by their owner.
        let owner: Option<String> = sqlx::query_scalar(sql::WRITABLE_EXPERIMENT_OWNER.as_str())
            .bind(id)
            .bind(user_id)
            .fetch_optional(&mut *transaction)
            .await?;
        let Some(owner_id) = owner else {
            return Ok(None);
        };
        let owner_id = owner_id.as_str();
        sqlx::query(sql::CANCEL_EXPERIMENT)
            .bind(id)
            .bind(owner_id)
            .bind(at)
            .execute(&mut *transaction)
            .await?;
        let cancelled = sqlx::query(sql::CANCEL_EXPERIMENT_PENDING)
            .bind(id)
            .bind(owner_id)
            .bind(at)
            .fetch_all(&mut *transaction)
            .await?
            .iter()
            .map(|row| Ok((row.text("id")?, row.text("project_id")?)))
            .collect::<Result<Vec<(String, String)>, StoreError>>()?;
        let claimed: Vec<String> = sqlx::query_scalar(sql::CANCEL_EXPERIMENT_CLAIMED)
            .bind(id)
            .bind(owner_id)
            .fetch_all(&mut *transaction)
            .await?;
        for job_id in &claimed {
            Self::announce_cancel(&mut transaction, job_id).await?;
        }
        let changes: Vec<JobChange> = cancelled
            .iter()
            .map(|(job_id, project_id)| JobChange {
                owner_id: owner_id.to_owned(),
                job_id: job_id.clone(),
                project_id: project_id.clone(),
            })
            .collect();
        Self::announce_changes(&mut transaction, &changes).await?;
        transaction.commit().await?;
        self.changes_committed(&changes);
        let cancelled = cancelled.into_iter().map(|(job_id, _)| job_id).collect();
        Ok(Some(CancelledRuns { cancelled, claimed }))
    }
}

impl FromRow for ExperimentRecord {
    fn from_row(row: &impl Columns) -> Result<ExperimentRecord, StoreError> {
        let owner_id = row.text("owner_id")?;
        Ok(ExperimentRecord {
            id: row.text("id")?,
            problem: row.text("problem")?,
            definition: row.text("definition")?,
            created_at: row.integer("created_at")?,
            cancelled_at: row.integer_or_null("cancelled_at")?,
            // The personal project is its owner's id; `None` says so.
            project_id: row
                .text_or_null("project_id")?
                .filter(|project| *project != owner_id),
            owner_id,
        })
    }
}

impl FromRow for ExperimentRun {
    fn from_row(row: &impl Columns) -> Result<ExperimentRun, StoreError> {
        Ok(ExperimentRun {
            job_id: row.text("id")?,
            status: JobStatus::parse(&row.text("status")?)?,
            labels: row.text_or_null("labels")?,
            objective: objective_from(row)?,
            time_to_best_s: row.real_or_null("time_to_best")?,
        })
    }
}
