//! Races: a job whose entrants (seeds, versions of its use case) run as ordinary jobs that
//! name it (`race_of`). The race itself is never claimed; once every entrant ended it ends
//! too, `COMPLETED` with its best entrant's output and that entrant named as the `winner`,
//! else `FAILED` (an entrant failed) or `CANCELLED`.

use async_trait::async_trait;
use serde_json::{Value, json};
use sqlx::{ColumnIndex, Executor};

use super::backend::{Backend, Column, Connection, DbRow, Param};
use super::jobs::objective_from;
use super::records::RaceEntrant;
use super::rows::{self, Columns, FromRow};
use super::sql;
use super::types::{JobChange, JobStatus, StoreError, now_millis};
use crate::objective::Sense;
use crate::options::JobOptions;

#[async_trait]
pub trait Races: Send + Sync + 'static {
    /// The entrants of the owner's race, in launch order; none for any other job.
    async fn race_entrants(
        &self,
        owner_id: &str,
        race_id: &str,
    ) -> Result<Vec<RaceEntrant>, StoreError>;

    /// Ends the race if every entrant ended; its new status, or `None` if it ended before
    /// or an entrant is still pending or running.
    async fn settle_race(&self, race_id: &str) -> Result<Option<JobStatus>, StoreError>;

    /// Races still pending whose entrants all ended (a settle that never came: the worker
    /// that ended the last one stopped first), at most `limit`.
    async fn unsettled_races(&self, limit: u32) -> Result<Vec<String>, StoreError>;
}

#[async_trait]
impl<B> Races for B
where
    B: Backend,
    for<'c> &'c mut Connection<B>: Executor<'c, Database = B::Db>,
    for<'a> &'a str: ColumnIndex<DbRow<B>> + Param<'a, B::Db>,
    usize: ColumnIndex<DbRow<B>>,
    i64: Column<B::Db>,
    f64: Column<B::Db>,
    bool: Column<B::Db>,
    String: Column<B::Db>,
    for<'a> Option<f64>: Param<'a, B::Db>,
    for<'a> Option<&'a str>: Param<'a, B::Db>,
    for<'a> bool: Param<'a, B::Db>,
{
    async fn race_entrants(
        &self,
        owner_id: &str,
        race_id: &str,
    ) -> Result<Vec<RaceEntrant>, StoreError> {
        let rows = sqlx::query(sql::RACE_ENTRANTS.as_str())
            .bind(race_id)
            .bind(owner_id)
            .fetch_all(self.readers())
            .await?;
        rows::all(&rows)
    }

    async fn settle_race(&self, race_id: &str) -> Result<Option<JobStatus>, StoreError> {
        let mut transaction = self.begin_write().await?;
        let Some(row) = sqlx::query(sql::RACE)
            .bind(race_id)
            .fetch_optional(&mut *transaction)
            .await?
        else {
            return Ok(None);
        };
        let owner_id = row.text("owner_id")?;
        let project_id = row.text("project_id")?;
        if row.text("status")? != JobStatus::Pending.as_str() {
            return Ok(None);
        }
        let rows = sqlx::query(sql::RACE_ENTRANT_ENDS)
            .bind(race_id)
            .fetch_all(&mut *transaction)
            .await?;
        let entrants: Vec<RaceEntrant> = rows::all(&rows)?;
        if entrants
            .iter()
            .any(|entrant| matches!(entrant.status, JobStatus::Pending | JobStatus::Running))
        {
            return Ok(None);
        }
        let now = now_millis();
        let status = match winner(&entrants) {
            Some(best) => {
                let output: Option<String> = sqlx::query_scalar(sql::JOB_OUTPUT_TEXT)
                    .bind(best.job_id.as_str())
                    .fetch_optional(&mut *transaction)
                    .await?;
                let output = with_winner(output.as_deref().unwrap_or("null"), best);
                let ended = sqlx::query(sql::END_RACE)
                    .bind(race_id)
                    .bind(JobStatus::Completed.as_str())
                    .bind(now)
                    .bind(best.objective.map(|objective| objective.value))
                    .bind(best.objective.map(|objective| objective.sense.as_str()))
                    .bind(best.time_to_best_s)
                    // A race finished early is as early as its winner.
                    .bind(best.stopped_early)
                    .execute(&mut *transaction)
                    .await?;
                if B::rows_affected(&ended) != 1 {
                    return Ok(None);
                }
                sqlx::query(sql::INSERT_OUTPUT)
                    .bind(race_id)
                    .bind(output.as_str())
                    .bind(i64::try_from(output.len()).unwrap_or(i64::MAX))
                    .execute(&mut *transaction)
                    .await?;
                JobStatus::Completed
            }
            None => {
                let status = if entrants
                    .iter()
                    .any(|entrant| entrant.status == JobStatus::Failed)
                {
                    JobStatus::Failed
                } else {
                    JobStatus::Cancelled
                };
                let ended = sqlx::query(sql::END_RACE)
                    .bind(race_id)
                    .bind(status.as_str())
                    .bind(now)
                    .bind(None::<f64>)
                    .bind(None::<&str>)
                    .bind(None::<f64>)
                    .bind(false)
                    .execute(&mut *transaction)
                    .await?;
                if B::rows_affected(&ended) != 1 {
                    return Ok(None);
                }
                status
            }
        };
        let change = JobChange {
            owner_id,
            job_id: race_id.to_owned(),
            project_id,
        };
        Self::announce_changes(&mut transaction, std::slice::from_ref(&change)).await?;
        transaction.commit().await?;
        self.changes_committed(&[change]);
        Ok(Some(status))
    }

    async fn unsettled_races(&self, limit: u32) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(sql::UNSETTLED_RACES)
            .bind(i64::from(limit))
            .fetch_all(self.readers())
            .await?;
        rows.iter().map(|row| row.text("id")).collect()
    }
}

/// The completed entrant with the best objective; the first launched among equals.
fn winner(entrants: &[RaceEntrant]) -> Option<&RaceEntrant> {
    entrants
        .iter()
        .filter(|entrant| entrant.status == JobStatus::Completed)
        .filter_map(|entrant| entrant.objective.map(|objective| (entrant, objective)))
        .reduce(|best, next| {
            let better = match next.1.sense {
                Sense::Maximize => next.1.value > best.1.value,
                Sense::Minimize => next.1.value < best.1.value,
            };
            if better { next } else { best }
        })
        .map(|(entrant, _)| entrant)
}

/// The winner's output with `winner: {job, execution, version, seed}` added, where the
/// output is an object (use cases with an objective answer objects).
fn with_winner(output: &str, winner: &RaceEntrant) -> String {
    let named = json!({
        "job": winner.job_id,
        "execution": winner.execution_id,
        "version": winner.version,
        "seed": winner.seed,
    });
    match serde_json::from_str::<Value>(output) {
        Ok(Value::Object(mut fields)) => {
            fields.insert("winner".into(), named);
            Value::Object(fields).to_string()
        }
        _ => output.to_owned(),
    }
}

impl FromRow for RaceEntrant {
    fn from_row(row: &impl Columns) -> Result<RaceEntrant, StoreError> {
        let seed = row
            .text_or_null("options")?
            .and_then(|options| serde_json::from_str::<JobOptions>(&options).ok())
            .map(|options| options.seed);
        Ok(RaceEntrant {
            job_id: row.text("id")?,
            status: JobStatus::parse(&row.text("status")?)?,
            version: row.text_or_null("plugin_version")?,
            seed,
            objective: objective_from(row)?,
            time_to_best_s: row.real_or_null("time_to_best")?,
            execution_id: row.text_or_null("execution_id")?,
            stopped_early: row.flag("stopped_early")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::Objective;

    fn entrant(id: &str, status: JobStatus, value: Option<f64>, sense: Sense) -> RaceEntrant {
        RaceEntrant {
            job_id: id.into(),
            status,
            version: Some("1.0.0".into()),
            seed: Some(7),
            objective: value.map(|value| Objective { value, sense }),
            time_to_best_s: None,
            execution_id: Some(format!("e-{id}")),
            stopped_early: false,
        }
    }

    #[test]
    fn the_best_completed_entrant_wins_the_first_among_equals() {
        use JobStatus::{Cancelled, Completed, Failed};
        let entrants = [
            entrant("a", Completed, Some(3.0), Sense::Maximize),
            entrant("b", Failed, None, Sense::Maximize),
            entrant("c", Completed, Some(5.0), Sense::Maximize),
            entrant("d", Completed, Some(5.0), Sense::Maximize),
            entrant("e", Cancelled, Some(9.0), Sense::Maximize),
        ];
        assert_eq!(winner(&entrants).map(|e| e.job_id.as_str()), Some("c"));
        let lowest = [
            entrant("a", Completed, Some(3.0), Sense::Minimize),
            entrant("b", Completed, Some(-1.0), Sense::Minimize),
        ];
        assert_eq!(winner(&lowest).map(|e| e.job_id.as_str()), Some("b"));
        assert_eq!(winner(&entrants[1..2]), None);
    }

    #[test]
    fn the_winner_is_named_in_its_output() {
        let best = entrant("c", JobStatus::Completed, Some(5.0), Sense::Maximize);
        let output: Value =
            serde_json::from_str(&with_winner(r#"{"cut_value": 5}"#, &best)).expect("JSON");
        assert_eq!(
            output["winner"],
            json!({"job": "c", "execution": "e-c", "version": "1.0.0", "seed": 7})
        );
        assert_eq!(output["cut_value"], 5);
        assert_eq!(with_winner("[1]", &best), "[1]");
    }
}
