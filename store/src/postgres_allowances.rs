//! Launch allowances on PostgreSQL: headroom of a user's pending-jobs and dataset quotas set
//! aside in its `user_counts` slots (migration 0036), so that the launches of one user on
//! several lanes and replicas pass their quota checks without waiting for each other.
//!
//! A batch first [`take`]s, for each owner it launches for, all its launches need from the
//! allowance of one slot no other transaction holds. An owner no slot has enough for is
//! checked instead ([`super::launch_quotas`]), its row locked, against its counts with every
//! allowance counted as used, or, where that would refuse, taken back first; once the batch's
//! launches are in, half the headroom it has left is shared among its free slots ([`grant`]).

use std::collections::BTreeMap;

use super::batch::Write;
use super::launch_quotas::{LaunchQuotas, input_bytes};
use super::records::NewJob;
use super::statement::{Statement, WriteConnection};
use super::types::{Quotas, StoreError};
use super::users::quota_state;

/// The slots an owner's headroom is shared among: as many as launch transactions commit at
/// once on four replicas of two lanes each, so that each may take from a slot of its own.
const GRANTED_SLOTS: i64 = 8;

/// What one owner's launches in a batch need from an allowance, and the server's quotas
/// they are checked against where the owner has none of its own.
#[derive(Debug, Clone, Copy)]
pub(super) struct Need {
    jobs: u64,
    bytes: u64,
    quotas: Quotas,
}

/// What the batch's launches need, per owner, in the order of the owners' ids: the order
/// every batch locks them in.
pub(super) fn needs<'w>(
    launches: impl IntoIterator<Item = &'w [NewJob]>,
) -> BTreeMap<&'w str, Need> {
    let mut needs: BTreeMap<&str, Need> = BTreeMap::new();
    for jobs in launches {
        let Some(first) = jobs.first() else {
            continue;
        };
        let need = needs.entry(first.owner_id.as_str()).or_insert(Need {
            jobs: 0,
            bytes: 0,
            quotas: first.quotas,
        });
        need.jobs += jobs.len() as u64;
        need.bytes += input_bytes(jobs);
    }
    needs
}

/// The jobs a write launches.
pub(super) fn launched(write: &Write) -> &[NewJob] {
    match write {
        Write::InsertJob(job) => std::slice::from_ref(job.as_ref()),
        Write::InsertJobs { jobs, .. } => jobs,
        _ => &[],
    }
}

/// Takes `need` from the allowance of one of `owner_id`'s slots that no other transaction
/// holds, and keeps that slot until the commit; false if none has enough, under the quotas
/// that are the owner's now, or if the owner's stored outputs reach their quota (the check
/// then refuses the launches). It never waits.
pub(super) async fn take<C: WriteConnection>(
    connection: &mut C,
    owner_id: &str,
    need: Need,
) -> Result<bool, StoreError> {
    let take = Statement::new(TAKE)
        .bind(owner_id)
        .bind(stored(need.jobs))
        .bind(stored(need.bytes))
        .bind(stored(need.quotas.pending_jobs))
        .bind(stored(need.quotas.dataset_bytes))
        .bind(stored(need.quotas.output_bytes));
    Ok(connection.execute(take).await? == 1)
}

/// For an owner no slot had enough for: locks its row, takes its allowances back if counting
/// them as used would refuse `need` (waiting for the launches that took from them), and makes
/// the slots a grant shares among. First in the batch, so that it waits for those launches
/// holding nothing they could wait for.
pub(super) async fn prepare<C: WriteConnection>(
    connection: &mut C,
    owner_id: &str,
    need: Need,
) -> Result<(), StoreError> {
    let state = quota_state(connection, owner_id, &need.quotas, need.jobs, need.bytes).await?;
    if state.is_none() {
        // No such user (deleted since its launches were queued): they are refused.
        return Ok(());
    }
    let slots = Statement::new(MAKE_SLOTS)
        .bind(owner_id)
        .bind(GRANTED_SLOTS);
    connection.execute(slots).await?;
    Ok(())
}

/// Shares half the headroom each owner checked in the transaction has left (its counts and
/// every allowance taken from its quotas) among its slots no other transaction holds. No
/// other transaction can share an owner's headroom before this one commits: it holds the
/// owner's row.
pub(super) async fn grant<C: WriteConnection>(
    connection: &mut C,
    quotas: &LaunchQuotas,
) -> Result<(), StoreError> {
    for (owner_id, state) in quotas.checked() {
        let jobs = state.max_pending_jobs.saturating_sub(state.pending_jobs) / 2;
        let bytes = state.max_dataset_bytes.saturating_sub(state.dataset_bytes) / 2;
        // Every launch needs a job and bytes (its input): an allowance short of either is of
        // no use, and would only be counted as used.
        if jobs == 0 || bytes == 0 {
            continue;
        }
        let grant = Statement::new(GRANT)
            .bind(owner_id)
            .bind(stored(jobs))
            .bind(stored(bytes))
            .bind(stored(state.max_pending_jobs))
            .bind(stored(state.max_dataset_bytes))
            .bind(GRANTED_SLOTS);
        connection.execute(grant).await?;
    }
    Ok(())
}

fn stored(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Takes `$2` jobs and `$3` bytes from one of user `$1`'s slots no other transaction holds,
/// shared under the quotas that are the user's now (`$4` and `$5` the server's), while its
/// stored outputs are under their quota (`$6` the server's).
const TAKE: &str = "UPDATE user_counts
     SET pending_allowance = pending_allowance - $2, bytes_allowance = bytes_allowance - $3
     WHERE user_id = $1 AND slot = (
         SELECT counts.slot FROM user_counts AS counts
         JOIN users ON users.id = counts.user_id
         WHERE counts.user_id = $1
           AND counts.pending_allowance >= $2 AND counts.bytes_allowance >= $3
           AND counts.granted_pending = COALESCE(users.max_pending_jobs, $4)
           AND counts.granted_bytes = COALESCE(users.max_dataset_bytes, $5)
           AND (SELECT COALESCE(SUM(outputs.output_bytes), 0) FROM user_counts AS outputs
                WHERE outputs.user_id = $1) < COALESCE(users.max_output_bytes, $6)
         LIMIT 1 FOR UPDATE OF counts SKIP LOCKED)";

/// Makes user `$1`'s slots 0 to `$2` - 1 where they are missing.
const MAKE_SLOTS: &str = "INSERT INTO user_counts (user_id, slot)
     SELECT $1, slot FROM generate_series(0, $2 - 1) AS slot
     ON CONFLICT DO NOTHING";

/// Adds `$2` jobs and `$3` bytes of user `$1`'s headroom, under its quotas `$4` and `$5`,
/// evenly to the allowances of up to `$6` of its slots that no other transaction holds. An
/// allowance shared under other quotas is counted as used in the headroom, and so it may
/// stay beside the new one.
/// Slot -1 is retention's (`sql::UNCOUNT_PURGED_OUTPUTS`) and holds no allowance.
const GRANT: &str = "WITH picked AS (
         SELECT slot FROM user_counts WHERE user_id = $1 AND slot >= 0
         ORDER BY slot LIMIT $6 FOR UPDATE SKIP LOCKED),
     shares AS (
         SELECT slot, ROW_NUMBER() OVER (ORDER BY slot) - 1 AS place, COUNT(*) OVER () AS n
         FROM picked)
     UPDATE user_counts
     SET pending_allowance = user_counts.pending_allowance + $2 / shares.n
             + CASE WHEN shares.place < $2 % shares.n THEN 1 ELSE 0 END,
         bytes_allowance = user_counts.bytes_allowance + $3 / shares.n
             + CASE WHEN shares.place < $3 % shares.n THEN 1 ELSE 0 END,
         granted_pending = $4, granted_bytes = $5
     FROM shares WHERE user_counts.user_id = $1 AND user_counts.slot = shares.slot";
