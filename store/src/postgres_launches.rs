//! The launches of a group-commit batch on PostgreSQL, inserted in one statement.
//!
//! With the ends written together ([`super::postgres_ends`]), the insert is the busiest
//! statement left per tiny job: a round trip and the executor's set-up each, for one row.
//! Here the batch's plain launches travel as arrays, one element per job, and one statement
//! inserts them all, each at the place [`insert_job`](super::sql::insert_job) gives a job
//! inserted alone.
//!
//! A job's place is after its owner's last pending job, spaced by
//! [`FAIR_SHARE_SPACING_MS`](super::sql::FAIR_SHARE_SPACING_MS), or at its own launch time if
//! that is later: `key(r) = max(key(r − 1) + s, created(r))` for an owner's `r`-th job of the
//! statement, `key(−1)` its last pending job's. Unrolled, that is the largest of
//! `last + (r + 1)·s` and `created(j) + (r − j)·s` for `j ≤ r`, which a window over the
//! owner's jobs computes in one pass.
//!
//! Only plain launches go together: one job, of its owner's own project, at the default
//! priority, with its owner's quotas paid for by an allowance
//! ([`LaunchQuotas::covers`]). A priority job moves others back, a shared project's job is
//! placed after its project's backlog too, and an owner checked against its counts is
//! checked launch by launch: those go one statement each, as before.

use std::collections::HashSet;

use sqlx::postgres::PgConnection;

use super::batch::Write;
use super::jobs;
use super::launch_quotas::LaunchQuotas;
use super::postgres_backend::{PostgresStore, column};
use super::records::{Inserted, NewJob};
use super::sql;
use super::statement::SqlxConnection;
use super::types::StoreError;

/// Larger inputs are inserted one job per statement: the arrays of a batch stay well below
/// PostgreSQL's limit on one value (1 GB), and such a launch costs its bytes, not its
/// statement.
const INPUT_BATCHED_UP_TO: usize = 64 * 1024;

/// Inserts the jobs, `$1`…`$22` arrays of equal length, with `$23` the spacing of an owner's
/// jobs, and returns the ids of those it stored.
///
/// A job whose id or idempotency key is stored already, or whose key an earlier job of the
/// statement carries, is left out before the places are counted, so that it leaves no gap in
/// its owner's; [`jobs::not_inserted`] then says what became of it. (A key racing another
/// transaction's launch still conflicts at the insert itself, which stores nothing for it:
/// the owner's later jobs of the statement then stand one place further back than they
/// would.)
const INSERT_ALL: &str = "WITH launches AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
             $6::int8[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
             $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
             $18::text[], $19::text[], $20::text[], $21::text[], $22::text[])
             WITH ORDINALITY
         AS launches (id, owner_id, problem, input, options, created_at, idempotency_key,
             request_hash, data_file_id, data_blob_id, data_media_type, labels, callback_url,
             plugin_version, plugin_digest, version_requested, rerun_of, warm_start,
             experiment_id, race, race_of, project_id, place)),
     keyed AS (
         SELECT launches.*,
             row_number() OVER (PARTITION BY owner_id, idempotency_key ORDER BY place) AS nth
         FROM launches),
     fresh AS (
         SELECT * FROM keyed
         WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = keyed.id)
             AND (idempotency_key IS NULL OR (nth = 1 AND NOT EXISTS (
                 SELECT 1 FROM jobs WHERE jobs.owner_id = keyed.owner_id
                     AND jobs.idempotency_key = keyed.idempotency_key)))),
     ranked AS (
         SELECT fresh.*, row_number() OVER (PARTITION BY owner_id ORDER BY place) - 1 AS rank
         FROM fresh),
     placed AS (
         SELECT ranked.*,
             MAX(created_at - $23 * rank) OVER (PARTITION BY owner_id ORDER BY place)
                 + $23 * rank AS own_place
         FROM ranked),
     lasts AS (
         SELECT owner_id,
             (SELECT MAX(fair_key) FROM jobs
              WHERE jobs.owner_id = owners.owner_id AND status = 'PENDING') AS last
         FROM (SELECT DISTINCT owner_id FROM fresh) AS owners)
     INSERT INTO jobs (id, owner_id, problem, input, options, status, created_at,
         idempotency_key, request_hash, data_file_id, data_blob_id, data_media_type, priority,
         labels, callback_url, plugin_version, plugin_digest, version_requested, rerun_of,
         warm_start, experiment_id, race, race_of, project_id, fair_key)
     SELECT id, owner_id, problem, input, options, 'PENDING', created_at, idempotency_key,
         request_hash, data_file_id, data_blob_id, data_media_type, 0, labels, callback_url,
         plugin_version, plugin_digest, version_requested, rerun_of, warm_start,
         experiment_id, race, race_of, COALESCE(project_id, owner_id),
         GREATEST(own_place, last + $23 * (rank + 1))
     FROM placed JOIN lasts USING (owner_id)
     ORDER BY place
     ON CONFLICT DO NOTHING
     RETURNING id";

/// Whether the launch `write` may be inserted with others: a single plain job (see the
/// module's notes) of an owner `quotas` covers, with an input of a batchable size.
pub(super) fn batchable<'w>(write: &'w Write, quotas: &LaunchQuotas) -> Option<&'w NewJob> {
    let Write::InsertJob(job) = write else {
        return None;
    };
    let own_project = job
        .project_id
        .as_ref()
        .is_none_or(|project_id| *project_id == job.owner_id);
    let plain = job.priority == 0 && own_project && job.input.len() <= INPUT_BATCHED_UP_TO;
    (plain && quotas.covers(&job.owner_id)).then_some(job.as_ref())
}

/// A batch's launches, each with its index in the batch: the jobs to insert together and the
/// writes to apply one by one.
#[derive(Debug, Default)]
pub(super) struct Launches<'w> {
    pub(super) together: Vec<(usize, &'w NewJob)>,
    pub(super) alone: Vec<(usize, &'w Write)>,
}

/// Splits a batch's launches: the [`batchable`] ones go together where there are two or
/// more.
pub(super) fn split<'w>(launches: Vec<(usize, &'w Write)>, quotas: &LaunchQuotas) -> Launches<'w> {
    let mut plain = Vec::new();
    let mut split = Launches::default();
    for (index, write) in launches {
        match batchable(write, quotas) {
            Some(job) => plain.push((index, write, job)),
            None => split.alone.push((index, write)),
        }
    }
    if plain.len() < 2 {
        let plain = plain.into_iter().map(|(index, write, _)| (index, write));
        split.alone.extend(plain);
    } else {
        let plain = plain.into_iter().map(|(index, _, job)| (index, job));
        split.together.extend(plain);
    }
    split
}

/// Inserts `launches` ([`batchable`] ones) in one statement; what became of each.
pub(super) async fn insert_all(
    connection: &mut SqlxConnection<'_, PostgresStore>,
    launches: &[&NewJob],
) -> Result<Vec<Inserted>, StoreError> {
    if launches.is_empty() {
        return Ok(Vec::new());
    }
    let stored = stored(connection.0, launches).await?;
    let mut inserted = Vec::with_capacity(launches.len());
    for job in launches {
        inserted.push(if stored.contains(job.id.as_str()) {
            Inserted::Created
        } else {
            jobs::not_inserted(connection, job).await?
        });
    }
    Ok(inserted)
}

/// Runs [`INSERT_ALL`]: the ids of the jobs it stored.
async fn stored(
    connection: &mut PgConnection,
    launches: &[&NewJob],
) -> Result<HashSet<String>, StoreError> {
    let stored: Vec<String> = sqlx::query_scalar(INSERT_ALL)
        .bind(column(launches, |job| job.id.as_str()))
        .bind(column(launches, |job| job.owner_id.as_str()))
        .bind(column(launches, |job| job.problem.as_str()))
        .bind(column(launches, |job| job.input.as_str()))
        .bind(column(launches, |job| job.options.as_str()))
        .bind(column(launches, |job| job.created_at))
        .bind(column(launches, |job| {
            job.idempotency
                .as_ref()
                .map(|idempotency| idempotency.key.as_str())
        }))
        .bind(column(launches, |job| {
            job.idempotency
                .as_ref()
                .map(|idempotency| idempotency.request_hash.as_str())
        }))
        .bind(column(launches, |job| {
            job.dataset
                .as_ref()
                .and_then(|dataset| dataset.data_file_id.as_deref())
        }))
        .bind(column(launches, |job| {
            job.dataset.as_ref().map(|dataset| dataset.blob_id.as_str())
        }))
        .bind(column(launches, |job| {
            job.dataset
                .as_ref()
                .map(|dataset| dataset.media_type.as_str())
        }))
        .bind(column(launches, |job| job.labels.as_deref()))
        .bind(column(launches, |job| job.callback_url.as_deref()))
        .bind(column(launches, |job| job.binding.version.as_str()))
        .bind(column(launches, |job| job.binding.digest.as_str()))
        .bind(column(launches, |job| job.binding.requested.as_deref()))
        .bind(column(launches, |job| job.rerun_of.as_deref()))
        .bind(column(launches, |job| job.warm_start.as_deref()))
        .bind(column(launches, |job| job.experiment_id.as_deref()))
        .bind(column(launches, |job| job.race.as_deref()))
        .bind(column(launches, |job| job.race_of.as_deref()))
        .bind(column(launches, |job| job.project_id.as_deref()))
        .bind(sql::FAIR_SHARE_SPACING_MS)
        .fetch_all(connection)
        .await?;
    Ok(stored.into_iter().collect())
}
