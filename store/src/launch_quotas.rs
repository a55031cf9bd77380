//! The quota checks of one transaction's launches.
//!
//! A launch must fit its owner's quotas (its pending jobs and kept inputs, with the
//! launch's own added; its stored outputs under their quota) and, in a shared project, the
//! project's cap on pending jobs. The first launch of an owner (or project) in a transaction
//! locks its row and reads its counts; every later one is checked against those counts plus
//! what the transaction's earlier launches added, so a batch of launches costs two round
//! trips per owner, not per launch. The checks of pending jobs and inputs stay exact: the
//! locks keep every other launch of those owners and projects out until the commit, and what
//! else may change meanwhile (claims, ends) only lowers those counts. Outputs are counted as
//! they are stored, after their launches: that check refuses the launches after the quota is
//! reached, as the read before a commit would.
//!
//! On PostgreSQL an owner's launches are first paid for out of a launch allowance
//! (`postgres_allowances`), taken only while the owner's outputs are under their quota: an
//! owner [`LaunchQuotas::cover`]ed that way is not checked here, only its shared project is.

use std::collections::{HashMap, HashSet};

use super::records::{Inserted, NewJob};
use super::rows::Columns;
use super::sql;
use super::statement::{Statement, WriteConnection};
use super::types::{Refusal, StoreError};
use super::users::{QuotaState, quota_state};

/// What one transaction's launches have read and added so far.
#[derive(Debug, Default)]
pub(super) struct LaunchQuotas {
    /// Each owner's counts and limits (`None`: no such user), with its launches added.
    owners: HashMap<String, Option<QuotaState>>,
    projects: HashMap<String, ProjectCap>,
    /// Owners whose launches in the transaction an allowance pays for.
    covered: HashSet<String>,
}

/// A shared project's pending jobs and its own cap on them (`None`: none).
#[derive(Debug, Clone, Copy)]
struct ProjectCap {
    pending: u64,
    cap: Option<u64>,
}

impl LaunchQuotas {
    /// Whether the jobs, all of one owner and one project, fit: `None` if they do.
    pub(super) async fn check<C: WriteConnection>(
        &mut self,
        connection: &mut C,
        jobs: &[NewJob],
    ) -> Result<Option<Refusal>, StoreError> {
        let Some(first) = jobs.first() else {
            return Ok(None);
        };
        let count = jobs.len() as u64;
        if !self.covered.contains(&first.owner_id) {
            let bytes = input_bytes(jobs);
            // Read once; again only where allowances would refuse it (they are then taken
            // back, and the counts read anew include this transaction's launches).
            let read = match self.owners.get(&first.owner_id) {
                None => true,
                Some(Some(state)) => state.reserved && state.refusal(count, bytes).is_some(),
                Some(None) => false,
            };
            if read {
                let state =
                    quota_state(connection, &first.owner_id, &first.quotas, count, bytes).await?;
                self.owners.insert(first.owner_id.clone(), state);
            }
            let Some(Some(state)) = self.owners.get(&first.owner_id) else {
                return Ok(Some(Refusal::NoSuchOwner));
            };
            if let Some(refusal) = state.refusal(count, bytes).or(state.output_refusal()) {
                return Ok(Some(refusal));
            }
        }
        // A shared project's own cap, after its member's: both hold, the first reached refuses.
        let Some(project_id) = shared_project(first) else {
            return Ok(None);
        };
        if !self.projects.contains_key(project_id) {
            let cap = project_cap(connection, project_id).await?;
            self.projects.insert(project_id.to_owned(), cap);
        }
        if let Some(ProjectCap {
            pending,
            cap: Some(cap),
        }) = self.projects.get(project_id)
            && pending + count > *cap
        {
            return Ok(Some(Refusal::ProjectPendingJobs(*cap)));
        }
        Ok(None)
    }

    /// Lets the owner's launches in the transaction pass its own quotas unchecked: an
    /// allowance taken in the transaction pays for them all.
    pub(super) fn cover(&mut self, owner_id: &str) {
        self.covered.insert(owner_id.to_owned());
    }

    /// Whether an allowance pays for the owner's launches in the transaction.
    pub(super) fn covers(&self, owner_id: &str) -> bool {
        self.covered.contains(owner_id)
    }

    /// The owners checked in the transaction, with their counts as its launches left them.
    pub(super) fn checked(&self) -> impl Iterator<Item = (&str, &QuotaState)> {
        self.owners
            .iter()
            .filter_map(|(owner_id, state)| Some((owner_id.as_str(), state.as_ref()?)))
    }

    /// Adds the jobs a launch stored to its owner's and project's counts.
    pub(super) fn add(&mut self, jobs: &[NewJob], inserted: &[Inserted]) {
        let created: Vec<&NewJob> = jobs
            .iter()
            .zip(inserted)
            .filter(|(_, inserted)| **inserted == Inserted::Created)
            .map(|(job, _)| job)
            .collect();
        let Some(first) = created.first() else {
            return;
        };
        let count = created.len() as u64;
        if let Some(Some(state)) = self.owners.get_mut(&first.owner_id) {
            state.pending_jobs += count;
            state.dataset_bytes += input_bytes(created.iter().copied());
        }
        if let Some(project) = shared_project(first).and_then(|id| self.projects.get_mut(id)) {
            project.pending += count;
        }
    }
}

/// The bytes the jobs keep: each one's own input, and each shared input they refer to once
/// (at most once too many, where the owner keeps it already: a check errs on the safe side).
pub(super) fn input_bytes<'a>(jobs: impl IntoIterator<Item = &'a NewJob>) -> u64 {
    let mut shared = HashSet::new();
    jobs.into_iter()
        .map(|job| {
            let shared_input = match &job.dataset {
                Some(dataset)
                    if dataset.data_file_id.is_none()
                        && shared.insert(dataset.blob_id.as_str()) =>
                {
                    job.shared_input_bytes
                }
                _ => 0,
            };
            job.input.len() as u64 + shared_input
        })
        .sum()
}

/// The job's project, unless it is its owner's personal one.
fn shared_project(job: &NewJob) -> Option<&str> {
    job.project_id
        .as_deref()
        .filter(|project_id| *project_id != job.owner_id)
}

/// Locks the project's row and reads its pending jobs and cap (none for a project that is
/// gone: its member's quotas still hold).
async fn project_cap<C: WriteConnection>(
    connection: &mut C,
    project_id: &str,
) -> Result<ProjectCap, StoreError> {
    if let Some(lock) = C::LOCK_PROJECT {
        connection
            .execute(Statement::new(lock).bind(project_id))
            .await?;
    }
    let row = connection
        .fetch_optional(Statement::new(sql::PROJECT_QUOTA_STATE).bind(project_id))
        .await?;
    let Some(row) = row else {
        return Ok(ProjectCap {
            pending: 0,
            cap: None,
        });
    };
    Ok(ProjectCap {
        pending: row.integer("pending")?.max(0) as u64,
        cap: row
            .integer_or_null("max_pending_jobs")?
            .map(|cap| cap.max(0) as u64),
    })
}
