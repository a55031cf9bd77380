//! The writes a group-commit batch carries ([`Write`]), applied one by one on the batch's
//! connection: written once for both backends, above every capability whose statements they
//! run.

use super::backend::ClaimFilter;
use super::batch::{Outcome, Write};
use super::executions::{finish, start_statement};
use super::jobs::insert_job;
use super::launch_quotas::LaunchQuotas;
use super::outcome::{JobEnds, Retry};
use super::records::ClaimedJob;
use super::records::Inserted;
use super::sql;
use super::statement::{Statement, Value, WriteConnection};
use super::types::{ExecutionStatus, StoreError, now_millis};
use super::{incumbents, rows};

/// Applies one write of a batch; `quotas` carries the quota checks of the transaction's
/// launches from one to the next.
pub(super) async fn apply<C: WriteConnection>(
    connection: &mut C,
    write: &Write,
    quotas: &mut LaunchQuotas,
) -> Result<Outcome, StoreError> {
    Ok(match write {
        Write::InsertJob(job) => {
            let jobs = std::slice::from_ref(job.as_ref());
            let inserted = match quotas.check(connection, jobs).await? {
                Some(refusal) => Inserted::Refused(refusal),
                None => insert_job(connection, job).await?,
            };
            quotas.add(jobs, std::slice::from_ref(&inserted));
            Outcome::Inserted(inserted)
        }
        Write::InsertJobs { jobs, experiment } => {
            if let Some(refusal) = quotas.check(connection, jobs).await? {
                return Ok(Outcome::InsertedAll(vec![
                    Inserted::Refused(refusal);
                    jobs.len()
                ]));
            }
            // An experiment is stored with its runs, in their transaction: never one without
            // the other.
            if let Some(experiment) = experiment {
                let insert = Statement::new(sql::INSERT_EXPERIMENT)
                    .bind(&experiment.id)
                    .bind(&experiment.owner_id)
                    .bind(&experiment.problem)
                    .bind(&experiment.definition)
                    .bind(experiment.created_at)
                    .bind(experiment.project_id.as_ref());
                connection.execute(insert).await?;
            }
            // A group that meets a job stored before (its key used already: the same request
            // sent twice at once) stores no more of itself: the first request stored it all.
            let mut inserted = Vec::with_capacity(jobs.len());
            for job in jobs {
                let outcome = insert_job(connection, job).await?;
                let stored_before = outcome != Inserted::Created;
                inserted.push(outcome);
                if stored_before {
                    break;
                }
            }
            quotas.add(jobs, &inserted);
            Outcome::InsertedAll(inserted)
        }
        Write::Claim {
            lease_expires_at,
            limit,
            filter,
        } => {
            let claim = Statement::new(C::claim_statement(filter))
                .bind(*lease_expires_at)
                .bind(i64::from(*limit));
            let names = filter.names_json();
            let claim = match **filter {
                ClaimFilter::All => claim,
                _ => claim.bind(names.as_str()),
            };
            let rows = connection.fetch_all(claim).await?;
            let mut claimed: Vec<ClaimedJob> = rows::all(&rows)?;
            // RETURNING has no order: oldest first, as the queue promises.
            claimed.sort_by(|a, b| {
                (a.created_at, &a.lease.job_id).cmp(&(b.created_at, &b.lease.job_id))
            });
            Outcome::Claimed(claimed)
        }
        Write::Release { lease } => {
            // An attempt abandoned before it started: its job runs again.
            let ends = JobEnds::after(ExecutionStatus::Abandoned, Retry::Yes, now_millis());
            let release = Statement::new(sql::RELEASE_UNSTARTED)
                .bind(&lease.job_id)
                .bind(lease.token);
            let release = ends.otherwise.bind(ends.cancel_requested.bind(release));
            Outcome::Held(connection.execute(release).await? == 1)
        }
        Write::Start { lease, start } => {
            Outcome::Held(connection.execute(start_statement(lease, start)).await? == 1)
        }
        Write::Progress {
            lease,
            execution_id,
            update,
        } => {
            let progress = update.progress.as_ref();
            let log = update.log.as_ref();
            let record = Statement::new(sql::RECORD_PROGRESS)
                .bind(progress.map(|progress| progress.fraction))
                .bind(progress.map(|progress| progress.message.as_str()))
                .bind(execution_id)
                .bind(&lease.job_id)
                .bind(lease.token)
                .bind(log.map(|(tail, _)| tail.as_str()))
                .bind(Value::Flag(log.map(|(_, truncated)| *truncated)))
                .bind(update.incumbents.last().map(|last| i64::from(last.seq)));
            let held = connection.execute(record).await? == 1;
            if held {
                incumbents::keep(connection, &lease.job_id, execution_id, &update.incumbents)
                    .await?;
            }
            Outcome::Held(held)
        }
        Write::Heartbeat {
            leases,
            lease_expires_at,
        } => {
            let mut lost = Vec::new();
            for lease in leases {
                let renew = Statement::new(sql::HEARTBEAT)
                    .bind(*lease_expires_at)
                    .bind(&lease.job_id)
                    .bind(lease.token);
                if connection.execute(renew).await? == 0 {
                    lost.push(lease.clone());
                }
            }
            Outcome::Lost(lost)
        }
        Write::Finish { lease, start, end } => {
            Outcome::Held(finish(connection, lease, start.as_deref(), end).await?)
        }
    })
}
