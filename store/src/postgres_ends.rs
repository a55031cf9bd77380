//! The attempts' ends of a group-commit batch on PostgreSQL, written in one statement.
//!
//! An end is the busiest write of a tiny job: the job's row, its execution and its output.
//! Written one statement each, every end pays a round trip and the executor's set-up of a
//! statement of four parts, and on two cores those cost as much as the rows themselves. Here
//! the batch's ends travel as arrays, one element per end, and one statement writes them
//! all under the same lease check as [`FINISH_IN_ONE`](super::sql::FINISH_IN_ONE) and
//! [`START_AND_FINISH_IN_ONE`](super::sql::START_AND_FINISH_IN_ONE): only a job still
//! `RUNNING` under the end's token changes, and only those jobs get an execution and an
//! output.

use std::collections::HashSet;

use sqlx::postgres::PgConnection;

use super::batch::Write;
use super::executions;
use super::postgres_backend::{PostgresStore, column};
use super::records::{ExecutionEnd, ExecutionStart};
use super::statement::SqlxConnection;
use super::types::{Lease, StoreError};

/// Larger outputs are written one end per statement: the arrays of a batch stay well below
/// PostgreSQL's limit on one value (1 GB), and such an end costs its bytes, not its statement.
const OUTPUT_BATCHED_UP_TO: usize = 64 * 1024;

/// The ends, `$1`…`$23` arrays of equal length, and the ids of the jobs whose lease was held.
/// An end with an attempt (`$18`) had no start written: its execution is inserted ended;
/// the others' `RUNNING` execution is updated.
const FINISH_ALL: &str = "WITH ends AS (
         SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::int8[], $5::text[],
             $6::int8[], $7::float8[], $8::text[], $9::float8[], $10::text[], $11::text[],
             $12::int8[], $13::text[], $14::text[], $15::text[], $16::bool[], $17::text[],
             $18::int8[], $19::text[], $20::text[], $21::text[], $22::int8[], $23::int8[])
         AS ends (job_id, lease_token, status, ended_at, cancel_status, cancel_ended_at,
             objective, objective_sense, time_to_best, execution_id, execution_status,
             execution_ended_at, error_code, error_message, log_tail, log_truncated, output,
             attempt, plugin_name, plugin_version, plugin_digest, started_at, bytes)),
     job AS (
         UPDATE jobs
         SET status = CASE WHEN cancel_requested THEN ends.cancel_status ELSE ends.status END,
             ended_at = CASE WHEN cancel_requested THEN ends.cancel_ended_at
                             ELSE ends.ended_at END,
             lease_expires_at = NULL, objective = ends.objective,
             objective_sense = ends.objective_sense, time_to_best = ends.time_to_best,
             stopped_early = finish_requested AND NOT cancel_requested
                 AND ends.status = 'COMPLETED'
         FROM ends
         WHERE jobs.id = ends.job_id AND jobs.lease_token = ends.lease_token
             AND jobs.status = 'RUNNING'
         RETURNING jobs.id),
     held AS (SELECT ends.* FROM ends JOIN job ON job.id = ends.job_id),
     started AS (
         INSERT INTO executions (id, job_id, attempt, status, plugin_name, plugin_version,
             plugin_digest, started_at, ended_at, error_code, error_message, log_tail,
             log_truncated, progress_fraction, objective, objective_sense)
         SELECT execution_id, job_id, attempt, execution_status, plugin_name, plugin_version,
             plugin_digest, started_at, execution_ended_at, error_code, error_message, log_tail,
             log_truncated, CASE WHEN execution_status = 'COMPLETED' THEN 1.0 END, objective,
             objective_sense
         FROM held WHERE attempt IS NOT NULL),
     execution AS (
         UPDATE executions
         SET status = held.execution_status, ended_at = held.execution_ended_at,
             error_code = held.error_code, error_message = held.error_message,
             log_tail = held.log_tail, log_truncated = held.log_truncated,
             progress_fraction = CASE WHEN held.execution_status = 'COMPLETED' THEN 1.0
                                      ELSE progress_fraction END,
             objective = held.objective, objective_sense = held.objective_sense
         FROM held
         WHERE held.attempt IS NULL AND executions.id = held.execution_id
             AND executions.job_id = held.job_id),
     output AS (
         INSERT INTO job_outputs (job_id, output, bytes)
         SELECT job_id, output, bytes FROM held WHERE output IS NOT NULL)
     SELECT id FROM job";

/// An attempt's end as a batch carries it ([`Write::Finish`]).
#[derive(Debug, Clone)]
pub(super) struct End<'w> {
    pub(super) lease: &'w Lease,
    pub(super) start: Option<&'w ExecutionStart>,
    pub(super) end: &'w ExecutionEnd,
}

impl<'w> End<'w> {
    /// The end `write` carries, if it is one.
    pub(super) fn of(write: &'w Write) -> Option<End<'w>> {
        match write {
            Write::Finish { lease, start, end } => Some(End {
                lease,
                start: start.as_deref(),
                end,
            }),
            _ => None,
        }
    }
}

/// Writes `ends`, in their order as far as each job goes; for each, whether its lease was
/// held. Those [`batchable`] lets through go in one statement where there are two or more,
/// the rest one statement each.
pub(super) async fn write(
    connection: &mut SqlxConnection<'_, PostgresStore>,
    ends: &[End<'_>],
) -> Result<Vec<bool>, StoreError> {
    let mut batchable = batchable(ends);
    if batchable.iter().filter(|batchable| **batchable).count() < 2 {
        batchable.fill(false);
    }
    let together: Vec<End<'_>> = ends
        .iter()
        .zip(&batchable)
        .filter(|(_, batchable)| **batchable)
        .map(|(end, _)| end.clone())
        .collect();
    let mut held_together = if together.is_empty() {
        Vec::new()
    } else {
        finish_all(connection.0, &together).await?
    }
    .into_iter();
    let mut held = Vec::with_capacity(ends.len());
    for (end, batchable) in ends.iter().zip(batchable) {
        let lease_held = if batchable {
            held_together.next().ok_or_else(|| {
                StoreError::Corrupt("an end written together was not answered".into())
            })?
        } else {
            executions::finish(connection, end.lease, end.start, end.end).await?
        };
        held.push(lease_held);
    }
    Ok(held)
}

/// Which of `ends` [`finish_all`] may write together: at most one per job (the statement
/// joins the jobs to the ends by id) and none with a large output.
pub(super) fn batchable(ends: &[End<'_>]) -> Vec<bool> {
    let mut jobs = HashSet::new();
    ends.iter()
        .map(|end| {
            let small = end
                .end
                .output
                .as_ref()
                .is_none_or(|output| output.len() <= OUTPUT_BATCHED_UP_TO);
            small && jobs.insert(end.lease.job_id.as_str())
        })
        .collect()
}

/// Writes `ends` in one statement; for each, whether its lease was held.
async fn finish_all(
    connection: &mut PgConnection,
    ends: &[End<'_>],
) -> Result<Vec<bool>, StoreError> {
    let job_ends: Vec<_> = ends.iter().map(|end| end.end.job_ends()).collect();
    let held: Vec<String> = sqlx::query_scalar(FINISH_ALL)
        .bind(column(ends, |end| end.lease.job_id.as_str()))
        .bind(column(ends, |end| end.lease.token))
        .bind(column(&job_ends, |ends| ends.otherwise.status.as_str()))
        .bind(column(&job_ends, |ends| ends.otherwise.ended_at))
        .bind(column(&job_ends, |ends| {
            ends.cancel_requested.status.as_str()
        }))
        .bind(column(&job_ends, |ends| ends.cancel_requested.ended_at))
        .bind(column(ends, |end| {
            end.end.objective.map(|objective| objective.value)
        }))
        .bind(column(ends, |end| {
            end.end.objective.map(|objective| objective.sense.as_str())
        }))
        .bind(column(ends, |end| end.end.time_to_best_s))
        .bind(column(ends, |end| end.end.execution_id.as_str()))
        .bind(column(ends, |end| end.end.status.as_str()))
        .bind(column(ends, |end| end.end.ended_at))
        .bind(column(ends, |end| {
            end.end.error.as_ref().map(|error| error.code.as_str())
        }))
        .bind(column(ends, |end| {
            end.end.error.as_ref().map(|error| error.message.as_str())
        }))
        .bind(column(ends, |end| end.end.log_tail.as_str()))
        .bind(column(ends, |end| end.end.log_truncated))
        .bind(column(ends, |end| end.end.output.as_deref()))
        .bind(column(ends, |end| {
            end.start.map(|start| i64::from(start.attempt))
        }))
        .bind(column(ends, |end| {
            end.start.map(|start| start.plugin.name.as_str())
        }))
        .bind(column(ends, |end| {
            end.start.map(|start| start.plugin.version.as_str())
        }))
        .bind(column(ends, |end| {
            end.start.map(|start| start.plugin.digest.as_str())
        }))
        .bind(column(ends, |end| end.start.map(|start| start.started_at)))
        .bind(column(ends, |end| end.end.output_bytes()))
        .fetch_all(connection)
        .await?;
    let held: HashSet<&str> = held.iter().map(String::as_str).collect();
    Ok(ends
        .iter()
        .map(|end| held.contains(end.lease.job_id.as_str()))
        .collect())
}
