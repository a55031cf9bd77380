//! The statements both backends share. They use `$N` placeholders, which PostgreSQL and
//! SQLite (through sqlx) both read by number; where the dialects differ, each backend has
//! its own statement. A clause several statements share is written once, and the
//! statements that use it are made of it once, at first use (`LazyLock`).

use std::sync::LazyLock;

mod executions;

pub(super) use self::executions::{
    ABANDON_UNSTARTED, FINISH_EXECUTION, FINISH_IN_ONE, FINISH_JOB, HEARTBEAT, INSERT_OUTPUT,
    LOST_BEFORE_START, REAP_JOBS, RECORD_PROGRESS, RELEASE_UNSTARTED, START_AND_FINISH_IN_ONE,
    START_EXECUTION,
};

pub(super) const INSERT_USER: &str =
    "INSERT INTO users (id, username, password_hash, created_at) VALUES ($1, $2, $3, $4)";

pub(super) const USER_BY_NAME: &str =
    "SELECT id, username, password_hash, disabled FROM users WHERE username = $1";

pub(super) const USER_ACCESS: &str =
    "SELECT disabled, tokens_valid_after, role FROM users WHERE id = $1";

/// Refused (no row changed) when it would leave no administrator: someone must be able to
/// manage the service.
pub(super) const SET_ROLE: &str = "UPDATE users SET role = $2
     WHERE username = $1
       AND ($2 = 'admin' OR role <> 'admin' OR EXISTS (
           SELECT 1 FROM users AS other WHERE other.role = 'admin' AND other.username <> $1))";

/// Every user, with what an administrator sees of each.
pub(super) const USERS: &str = "SELECT id, username, role, disabled, created_at,
     max_pending_jobs, max_dataset_bytes, max_output_bytes
     FROM users ORDER BY username";

pub(super) const USER_EXISTS: &str = "SELECT COUNT(*) FROM users WHERE username = $1";

pub(super) const ENABLE_USER: &str = "UPDATE users SET disabled = $2 WHERE username = $1";

/// Disabling also revokes every token issued until now, so that enabling the user again
/// does not bring them back.
pub(super) const DISABLE_USER: &str =
    "UPDATE users SET disabled = $2, tokens_valid_after = $3 WHERE username = $1";

pub(super) const REVOKE_TOKENS: &str =
    "UPDATE users SET tokens_valid_after = $2 WHERE username = $1";

pub(super) const SET_PASSWORD: &str =
    "UPDATE users SET password_hash = $2, tokens_valid_after = $3 WHERE username = $1";

/// A user's jobs that are still to run or running: a user with any is not deleted.
pub(super) const USER_LIVE_JOBS: &str = "SELECT COUNT(*) FROM jobs
     WHERE owner_id = (SELECT id FROM users WHERE username = $1)
       AND status IN ('PENDING', 'RUNNING')";

/// A user's jobs, with their executions and outputs (by cascade).
pub(super) const DELETE_USER_JOBS: &str =
    "DELETE FROM jobs WHERE owner_id = (SELECT id FROM users WHERE username = $1)";

/// A user's webhook deliveries: with the user gone, nothing can sign them.
pub(super) const DELETE_USER_WEBHOOKS: &str = "DELETE FROM webhook_deliveries
     WHERE owner_id = (SELECT id FROM users WHERE username = $1)";

/// A user's data files; their blobs go with the next sweep, once nothing refers to them.
pub(super) const DELETE_USER_DATA_FILES: &str =
    "DELETE FROM data_files WHERE owner_id = (SELECT id FROM users WHERE username = $1)";

/// A user's running totals, once its jobs are gone.
pub(super) const DELETE_USER_COUNTS: &str =
    "DELETE FROM user_counts WHERE user_id = (SELECT id FROM users WHERE username = $1)";

/// What counts against a user's quotas: its pending jobs, its outputs' bytes and the bytes its
/// jobs keep (running totals over the user's slots, see migrations 0035 and 0036), and its
/// data files' bytes.
pub(super) const USAGE: &str = "SELECT totals.pending_jobs AS pending_jobs,
     totals.kept_bytes + (SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM data_files
                          WHERE owner_id = $1) AS dataset_bytes,
     totals.output_bytes AS output_bytes, max_pending_jobs, max_dataset_bytes, max_output_bytes
     FROM users, (
         SELECT CAST(COALESCE(SUM(pending_jobs), 0) AS BIGINT) AS pending_jobs,
                CAST(COALESCE(SUM(kept_bytes), 0) AS BIGINT) AS kept_bytes,
                CAST(COALESCE(SUM(output_bytes), 0) AS BIGINT) AS output_bytes
         FROM user_counts WHERE user_id = $1) AS totals
     WHERE users.id = $1";

/// What the quota checks of a write read, in its transaction: `$1` the user, `$2`, `$3` and
/// `$4` the server's pending-jobs, dataset-bytes and output-bytes quotas. The counts, and
/// what launch allowances hold (migration 0036), come from one scan of the user's slots, so
/// that a launch committing meanwhile (an allowance turned into pending jobs) is in both or
/// in neither.
pub(super) const QUOTA_STATE: &str = "SELECT
     totals.pending_jobs, totals.reserved_jobs,
     COALESCE(users.max_pending_jobs, $2) AS max_pending_jobs,
     totals.kept_bytes + (SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM data_files
                          WHERE owner_id = $1) AS dataset_bytes,
     totals.reserved_bytes,
     COALESCE(users.max_dataset_bytes, $3) AS max_dataset_bytes,
     totals.output_bytes, COALESCE(users.max_output_bytes, $4) AS max_output_bytes
     FROM users, (
         SELECT CAST(COALESCE(SUM(pending_jobs), 0) AS BIGINT) AS pending_jobs,
                CAST(COALESCE(SUM(pending_allowance), 0) AS BIGINT) AS reserved_jobs,
                CAST(COALESCE(SUM(kept_bytes), 0) AS BIGINT) AS kept_bytes,
                CAST(COALESCE(SUM(bytes_allowance), 0) AS BIGINT) AS reserved_bytes,
                CAST(COALESCE(SUM(output_bytes), 0) AS BIGINT) AS output_bytes
         FROM user_counts WHERE user_id = $1) AS totals
     WHERE users.id = $1";

/// A data file being deleted whose bytes a job of its owner still refers to: they stay
/// counted against the owner while the job does.
pub(super) const KEEP_DELETED_DATASET: &str = "INSERT INTO kept_datasets (owner_id, blob_id, bytes)
     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM jobs WHERE owner_id = $1 AND data_blob_id = $2)
     ON CONFLICT DO NOTHING";

pub(super) const SET_USER_QUOTAS: &str = "UPDATE users
     SET max_pending_jobs = $2, max_dataset_bytes = $3, max_output_bytes = $4
     WHERE username = $1";

pub(super) const DELETE_USER: &str = "DELETE FROM users WHERE username = $1";

pub(super) const USER_COUNT: &str = "SELECT COUNT(*) FROM users";

/// How far apart a user's pending jobs stand in the queue's order, in milliseconds: see
/// migration 0006 (fair share).
pub(super) const FAIR_SHARE_SPACING_MS: i64 = 60_000;

/// What decides a new job's place in the queue, and so which insert stores it
/// ([`insert_job`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct JobPlace {
    /// Its priority is above the default: it may go before its owner's pending jobs of
    /// lower priority.
    pub(super) outranks: bool,
    /// It is launched in a shared project, not its owner's own: the project's backlog
    /// counts too.
    pub(super) shared_project: bool,
}

impl JobPlace {
    /// Every place, in the order of [`JobPlace::index`].
    const ALL: [JobPlace; 4] = [
        JobPlace {
            outranks: false,
            shared_project: false,
        },
        JobPlace {
            outranks: false,
            shared_project: true,
        },
        JobPlace {
            outranks: true,
            shared_project: false,
        },
        JobPlace {
            outranks: true,
            shared_project: true,
        },
    ];

    fn index(self) -> usize {
        usize::from(self.outranks) * 2 + usize::from(self.shared_project)
    }
}

/// A job's place: after its owner's last pending job, or, if it outranks some of them, at
/// the place of the first of those, which [`MAKE_ROOM`] then moves back. Otherwise a job of a
/// shared project (`$24`) is also placed after the project's last pending job, and the later
/// of the two places wins: a team's backlog is spread as one user's is, so that ten members
/// do not take ten shares of the queue.
///
/// No `CASE` over the parameters picks among the places. A plan made for given values drops
/// the branches they skip, so PostgreSQL would judge it cheaper than the generic plan every
/// time, and plan every launch again; a statement per place has one plan worth keeping.
fn insert_job_statement(place: JobPlace) -> String {
    let priority_place = "(SELECT MIN(fair_key) FROM jobs
                  WHERE owner_id = $2 AND status = 'PENDING' AND priority < $13)";
    let owner_place = "(SELECT CASE WHEN MAX(fair_key) IS NULL OR MAX(fair_key) + $12 < $6 THEN $6
                          ELSE MAX(fair_key) + $12 END
              FROM jobs WHERE owner_id = $2 AND status = 'PENDING')";
    let project_place =
        "(SELECT CASE WHEN MAX(fair_key) IS NULL OR MAX(fair_key) + $12 < $6 THEN $6
                          ELSE MAX(fair_key) + $12 END
              FROM jobs WHERE project_id = $24 AND status = 'PENDING')";
    let later_place = if place.shared_project {
        format!(
            "(SELECT CASE WHEN owner_place > project_place THEN owner_place
                          ELSE project_place END
              FROM (SELECT {owner_place} AS owner_place,
                           {project_place} AS project_place) AS places)"
        )
    } else {
        owner_place.to_owned()
    };
    let fair_key = if place.outranks {
        format!("COALESCE({priority_place}, {later_place})")
    } else {
        later_place
    };
    format!(
        "INSERT INTO jobs (id, owner_id, problem, input, options, status, created_at, idempotency_key, request_hash, data_file_id, data_blob_id, data_media_type, priority, labels, callback_url, plugin_version, plugin_digest, version_requested, rerun_of, warm_start, experiment_id, race, race_of, project_id, fair_key)
         VALUES ($1, $2, $3, $4, $5, 'PENDING', $6, $7, $8, $9, $10, $11, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, COALESCE($24, $2),
             {fair_key})
         ON CONFLICT DO NOTHING"
    )
}

/// The insert of a job whose place `place` decides ([`insert_job_statement`]'s).
pub(super) fn insert_job(place: JobPlace) -> &'static str {
    static STATEMENTS: LazyLock<[String; 4]> =
        LazyLock::new(|| JobPlace::ALL.map(insert_job_statement));
    &STATEMENTS[place.index()]
}

/// After a job of priority `$3` is queued: its owner's pending jobs of lower priority move
/// back one place each, so the owner's share of the queue stays what it was.
pub(super) const MAKE_ROOM: &str = "UPDATE jobs SET fair_key = fair_key + $4
     WHERE owner_id = $1 AND status = 'PENDING' AND priority < $3 AND id <> $2";

pub(super) const JOB_OWNER: &str = "SELECT owner_id FROM jobs WHERE id = $1";

pub(super) const JOB_BY_IDEMPOTENCY_KEY: &str =
    "SELECT id, request_hash FROM jobs WHERE owner_id = $1 AND idempotency_key = $2";

/// A job's status as clients see it, in every statement that reads a job for clients (`JOB`,
/// `JOB_OUTPUT`, `JOB_COUNTS` and `GET /jobs`'s page). A job claimed but not started yet
/// (waiting in its worker's local queue behind another run) is `RUNNING` in the table, for
/// its lease, and `PENDING` to clients, as the spec means it: accepted and waiting. Worked out
/// in the statement that reads the job, so that it is one snapshot with the job's own status.
pub(super) const CLIENT_STATUS: &str = "CASE WHEN jobs.status = 'RUNNING' AND NOT EXISTS (
         SELECT 1 FROM executions
         WHERE executions.job_id = jobs.id AND executions.status = 'RUNNING')
     THEN 'PENDING'
     WHEN jobs.race IS NOT NULL AND jobs.status = 'PENDING' AND EXISTS (
         SELECT 1 FROM executions JOIN jobs AS entrant ON executions.job_id = entrant.id
         WHERE entrant.race_of = jobs.id)
     THEN 'RUNNING' ELSE jobs.status END";

/// The columns a job is read with for clients ([`super::JobSummary`]'s).
pub(super) static JOB_COLUMNS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "id, problem, {CLIENT_STATUS} AS status, created_at, ended_at, labels, objective, objective_sense"
    )
});

/// The jobs user `$2` may read: those of its personal project, and those of every project it
/// is in. A job it launched in a shared project it has left is the project's, not its own.
pub(super) const READABLE: &str = "((jobs.owner_id = $2 AND jobs.project_id = $2)
     OR jobs.project_id IN (
         SELECT project_id FROM project_members WHERE project_members.user_id = $2))";

/// The jobs user `$2` may cancel and finish: its personal project's, and those of the
/// projects it is a member of (not a viewer).
pub(super) const WRITABLE: &str = "((jobs.owner_id = $2 AND jobs.project_id = $2)
     OR jobs.project_id IN (
         SELECT project_id FROM project_members
         WHERE project_members.user_id = $2 AND project_members.role = 'member'))";

pub(super) static JOB: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, plugin_version, plugin_digest, version_requested, rerun_of, warm_start, stopped_early, race,
             project_id
         FROM jobs WHERE id = $1 AND {READABLE}",
        *JOB_COLUMNS
    )
});

/// A job's executions; a race's are its entrants'. Two parts, each read through an index:
/// as one `job_id = $1 OR job_id IN (...)`, PostgreSQL read every execution ever kept.
pub(super) const EXECUTIONS: &str = "SELECT * FROM (
         SELECT * FROM executions WHERE job_id = $1
         UNION ALL
         SELECT executions.* FROM jobs JOIN executions ON executions.job_id = jobs.id
         WHERE jobs.race_of = $1) AS executions
     ORDER BY attempt, id";

pub(super) static JOB_OUTPUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {CLIENT_STATUS} AS status, job_outputs.output FROM jobs
         LEFT JOIN job_outputs ON job_outputs.job_id = jobs.id
         WHERE jobs.id = $1 AND {READABLE}"
    )
});

/// Retention goes in batches of jobs that ended at or before a time: the last end among the
/// oldest `$2` that ended before `$1`.
pub(super) const PURGE_UP_TO: &str = "SELECT MAX(ended_at) FROM (
         SELECT ended_at FROM jobs WHERE ended_at IS NOT NULL AND ended_at < $1
         ORDER BY ended_at LIMIT $2) AS batch";

/// The outputs about to be purged come off their owners' running totals, in slot -1, which
/// only retention writes.
pub(super) const UNCOUNT_PURGED_OUTPUTS: &str =
    "INSERT INTO user_counts (user_id, slot, pending_jobs, output_bytes)
     SELECT jobs.owner_id, -1, 0, -CAST(SUM(job_outputs.bytes) AS BIGINT) FROM job_outputs
     JOIN jobs ON jobs.id = job_outputs.job_id
     WHERE jobs.ended_at IS NOT NULL AND jobs.ended_at <= $1
     GROUP BY jobs.owner_id
     ON CONFLICT (user_id, slot) DO UPDATE
     SET output_bytes = user_counts.output_bytes + excluded.output_bytes";

/// The deliveries of the jobs about to be purged: settled long before (retention outlasts the
/// retry schedule), and the outbox would otherwise only grow.
pub(super) const PURGE_WEBHOOKS: &str = "DELETE FROM webhook_deliveries WHERE job_id IN (
         SELECT id FROM jobs WHERE ended_at IS NOT NULL AND ended_at <= $1)";

pub(super) const PURGE_FINISHED: &str =
    "DELETE FROM jobs WHERE ended_at IS NOT NULL AND ended_at <= $1";

/// Experiments whose runs retention took, every one: what is left of them says nothing.
pub(super) const PURGE_EXPERIMENTS: &str = "DELETE FROM experiments
     WHERE created_at <= $1
         AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.experiment_id = experiments.id)";

/// The message of an execution whose worker stopped renewing its lease.
pub(super) const WORKER_LOST: &str =
    "its worker stopped renewing its lease (the process died, stalled or was cut off)";

pub(super) const BEGIN_BLOB: &str =
    "INSERT INTO blobs (id, sha256, size, created_at, touched_at) VALUES ($1, NULL, 0, $2, $2)";

/// Only an unfinished upload takes chunks; a swept one answers no row.
pub(super) const TOUCH_BLOB: &str = "UPDATE blobs SET size = size + $1, touched_at = $2
     WHERE id = $3 AND sha256 IS NULL";

pub(super) const INSERT_CHUNK: &str =
    "INSERT INTO blob_chunks (blob_id, seq, data) VALUES ($1, $2, $3)";

pub(super) const BLOB_BY_DIGEST: &str = "SELECT id FROM blobs WHERE sha256 = $1";

/// A completed blob about to be referred to: the sweep leaves what was touched lately.
pub(super) const TOUCH_SEALED_BLOB: &str =
    "UPDATE blobs SET touched_at = $1 WHERE id = $2 AND sha256 IS NOT NULL";

pub(super) const SEAL_BLOB: &str = "UPDATE blobs SET sha256 = $1, size = $2, touched_at = $3
     WHERE id = $4 AND sha256 IS NULL";

pub(super) const DISCARD_BLOB: &str = "DELETE FROM blobs WHERE id = $1 AND sha256 IS NULL";

pub(super) const INSERT_DATA_FILE: &str =
    "INSERT INTO data_files (id, owner_id, blob_id, size, sha256, media_type, filename, created_at, project_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, COALESCE($9, $2))";

/// A data file user `$2` may launch on: its personal project's, or one of a project it is a
/// member of.
pub(super) const DATA_FILE: &str = "SELECT * FROM data_files WHERE id = $1
     AND ((owner_id = $2 AND project_id = $2) OR project_id IN (
         SELECT project_id FROM project_members
         WHERE project_members.user_id = $2 AND project_members.role = 'member'))";

/// The data files of project `$1` (a user's personal project is the user's id), newest first
/// (their ids are time-ordered), at most `$2`; `DATA_FILES_BEFORE` those older than `$3`.
pub(super) const DATA_FILES: &str =
    "SELECT * FROM data_files WHERE project_id = $1 ORDER BY id DESC LIMIT $2";

pub(super) const DATA_FILES_BEFORE: &str =
    "SELECT * FROM data_files WHERE project_id = $1 AND id < $3 ORDER BY id DESC LIMIT $2";

pub(super) const DELETE_DATA_FILE: &str =
    "DELETE FROM data_files WHERE id = $1 AND owner_id = $2 RETURNING blob_id, size";

/// A completed blob goes once neither a data file, a job nor a plugin version refers to it.
pub(super) const DROP_UNREFERENCED_BLOB: &str = "DELETE FROM blobs
     WHERE id = $1 AND sha256 IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM data_files WHERE blob_id = $1)
       AND NOT EXISTS (SELECT 1 FROM jobs WHERE data_blob_id = $1)
       AND NOT EXISTS (SELECT 1 FROM plugin_versions WHERE blob_id = $1)";

pub(super) const BLOB_SIZE: &str = "SELECT size FROM blobs WHERE id = $1 AND sha256 IS NOT NULL";

pub(super) const BLOB_CHUNKS: &str = "SELECT data FROM blob_chunks WHERE blob_id = $1 ORDER BY seq";

pub(super) const SWEEP_STALE_UPLOADS: &str = "DELETE FROM blobs WHERE id IN (
         SELECT id FROM blobs WHERE sha256 IS NULL AND touched_at < $1 LIMIT $2)";

pub(super) const SWEEP_UNREFERENCED_BLOBS: &str = "DELETE FROM blobs WHERE id IN (
         SELECT id FROM blobs
         WHERE sha256 IS NOT NULL AND touched_at < $2
           AND NOT EXISTS (SELECT 1 FROM data_files WHERE data_files.blob_id = blobs.id)
           AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.data_blob_id = blobs.id)
           AND NOT EXISTS (SELECT 1 FROM plugin_versions WHERE plugin_versions.blob_id = blobs.id)
         LIMIT $1)";

pub(super) static CANCEL_PENDING: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE jobs SET status = 'CANCELLED', ended_at = $3, cancel_requested = TRUE
         WHERE id = $1 AND {WRITABLE} AND status = 'PENDING'
         RETURNING owner_id, COALESCE(project_id, owner_id) AS project_id"
    )
});

/// A running job (one whose execution runs: not one waiting in its worker's queue) asked to
/// finish now.
pub(super) static REQUEST_FINISH: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE jobs SET finish_requested = TRUE
         WHERE id = $1 AND {WRITABLE} AND status = 'RUNNING' AND NOT cancel_requested
           AND EXISTS (SELECT 1 FROM executions
                       WHERE executions.job_id = jobs.id AND executions.status = 'RUNNING')"
    )
});

pub(super) static REQUEST_CANCEL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE jobs SET cancel_requested = TRUE
         WHERE id = $1 AND {WRITABLE} AND status = 'RUNNING'"
    )
});

pub(super) static JOB_STATUS: LazyLock<String> =
    LazyLock::new(|| format!("SELECT status FROM jobs WHERE id = $1 AND {READABLE}"));

/// A job's status, for one who may cancel it.
pub(super) static WRITABLE_JOB_STATUS: LazyLock<String> =
    LazyLock::new(|| format!("SELECT status FROM jobs WHERE id = $1 AND {WRITABLE}"));

/// Claims due webhook deliveries, fairly: `$1` the time until which they are held, `$2` now,
/// `$3` how many at most, `$4` how many may be in flight to one destination, counting those
/// already claimed by any dispatcher. Owners take turns (each one's oldest first, then each
/// one's second...), and so do the owners sharing a destination within its bound, so neither a
/// user's backlog nor a receiver that never answers holds back another user's callbacks.
/// Returns `id, job_id, owner_id, url, status, attempts, created_at`.
pub(super) const CLAIM_WEBHOOKS: &str = "WITH due AS (
         SELECT id, destination, next_attempt_at,
                ROW_NUMBER() OVER (PARTITION BY owner_id ORDER BY next_attempt_at, id)
                    AS owner_turn,
                ROW_NUMBER() OVER (PARTITION BY destination, owner_id ORDER BY next_attempt_at, id)
                    AS owner_turn_at_destination
         FROM webhook_deliveries
         WHERE delivered_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= $2),
     ranked AS (
         SELECT id, destination, next_attempt_at, owner_turn,
                ROW_NUMBER() OVER (PARTITION BY destination
                                   ORDER BY owner_turn_at_destination, next_attempt_at, id)
                    AS destination_turn
         FROM due),
     in_flight AS (
         SELECT destination, COUNT(*) AS posts FROM webhook_deliveries
         WHERE delivered_at IS NULL AND given_up_at IS NULL AND claimed_until > $2
         GROUP BY destination),
     picked AS (
         SELECT ranked.id AS picked_id FROM ranked
         LEFT JOIN in_flight ON in_flight.destination = ranked.destination
         WHERE ranked.destination_turn + COALESCE(in_flight.posts, 0) <= $4
         ORDER BY ranked.owner_turn, ranked.next_attempt_at, ranked.id
         LIMIT $3)
     UPDATE webhook_deliveries
     SET next_attempt_at = $1, claimed_until = $1, attempts = attempts + 1
     FROM picked WHERE webhook_deliveries.id = picked.picked_id
     RETURNING id, job_id, owner_id, url, status, attempts, created_at";

pub(super) const WEBHOOK_DELIVERED: &str = "UPDATE webhook_deliveries
     SET delivered_at = $2, last_error = NULL, claimed_until = NULL WHERE id = $1";

pub(super) const WEBHOOK_RETRY: &str = "UPDATE webhook_deliveries
     SET next_attempt_at = $2, last_error = $3, claimed_until = NULL WHERE id = $1";

pub(super) const WEBHOOK_GIVE_UP: &str = "UPDATE webhook_deliveries
     SET given_up_at = $2, last_error = $3, claimed_until = NULL WHERE id = $1";

/// A user's secret, set to `$2` if it has none yet (or always, with `$3`).
pub(super) const SET_WEBHOOK_SECRET: &str = "UPDATE users
     SET webhook_secret = CASE WHEN $3 OR webhook_secret IS NULL THEN $2 ELSE webhook_secret END
     WHERE id = $1";

pub(super) const WEBHOOK_SECRET: &str = "SELECT webhook_secret FROM users WHERE id = $1";

/// A shared project's secret, as `SET_WEBHOOK_SECRET` sets a user's.
pub(super) const SET_PROJECT_WEBHOOK_SECRET: &str = "UPDATE projects
     SET webhook_secret = CASE WHEN $3 OR webhook_secret IS NULL THEN $2 ELSE webhook_secret END
     WHERE id = $1";

pub(super) const PROJECT_WEBHOOK_SECRET: &str = "SELECT webhook_secret FROM projects WHERE id = $1";

/// A replica's report of itself, replacing its last one unless that said it stopped.
pub(super) const REPORT_REPLICA: &str = "INSERT INTO replicas
         (id, name, workers, busy, accepted, ended, started_at, seen_at, pool, stopped_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (id) DO UPDATE SET workers = excluded.workers, busy = excluded.busy,
         accepted = excluded.accepted, ended = excluded.ended, seen_at = excluded.seen_at,
         stopped_at = excluded.stopped_at
     WHERE replicas.stopped_at IS NULL";

/// Replicas silent since `$1`: stopped long ago.
pub(super) const FORGET_REPLICAS: &str = "DELETE FROM replicas WHERE seen_at < $1";

pub(super) const REPLICAS: &str =
    "SELECT id, name, workers, busy, accepted, ended, started_at, seen_at, pool, stopped_at
     FROM replicas ORDER BY started_at, id";

/// Jobs waiting and claimed, per use case. Each status on its own, so that each part reads
/// that status's partial index, not the whole table of jobs ever run.
pub(super) const QUEUE_DEPTH: &str = "SELECT problem,
         CAST(SUM(pending) AS BIGINT) AS pending, CAST(SUM(running) AS BIGINT) AS running
     FROM (SELECT problem, 1 AS pending, 0 AS running FROM jobs WHERE status = 'PENDING'
           UNION ALL
           SELECT problem, 0 AS pending, 1 AS running FROM jobs WHERE status = 'RUNNING')
         AS live
     GROUP BY problem ORDER BY problem";

/// Jobs created per minute, from the job id `$1` on (ids sort by creation time).
pub(super) const ACCEPTED_PER_MINUTE: &str = "SELECT created_at / 60000 AS minute, COUNT(*) AS jobs
     FROM jobs WHERE id >= $1 GROUP BY created_at / 60000";

/// Jobs ended per minute, from `$1` on.
pub(super) const ENDED_PER_MINUTE: &str = "SELECT ended_at / 60000 AS minute, COUNT(*) AS jobs
     FROM jobs WHERE ended_at >= $1 GROUP BY ended_at / 60000";

/// What a job was launched with: its inline input, or its dataset's reference.
pub(super) static JOB_INPUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT problem, input, options, labels, data_file_id, data_blob_id, data_media_type,
             plugin_version, plugin_digest, version_requested, project_id
         FROM jobs WHERE id = $1 AND {READABLE}"
    )
});

/// An owner's jobs per status as clients see it.
pub(super) static JOB_COUNTS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {CLIENT_STATUS} AS status, COUNT(*) AS jobs FROM jobs WHERE owner_id = $1 GROUP BY 1"
    )
});

/// A project's jobs, whoever launched them, by status as clients see it.
pub(super) static PROJECT_JOB_COUNTS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {CLIENT_STATUS} AS status, COUNT(*) AS jobs FROM jobs WHERE project_id = $1 GROUP BY 1"
    )
});

/// The plugin registry's statements ([`super::plugins`]).
pub(super) const PLUGIN_VERSION: &str =
    "SELECT sha256 FROM plugin_versions WHERE name = $1 AND version = $2";

pub(super) const INSERT_PLUGIN_VERSION: &str = "INSERT INTO plugin_versions
     (name, version, sha256, blob_id, world, size, published_by, published_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

pub(super) const PLUGIN_VERSIONS: &str =
    "SELECT * FROM plugin_versions ORDER BY name, published_at, version";

pub(super) const PLUGIN_CURRENT: &str = "SELECT name, version FROM plugin_current";

pub(super) const CURRENT_VERSION_OF: &str = "SELECT version FROM plugin_current WHERE name = $1";

pub(super) const SET_CURRENT_VERSION: &str =
    "INSERT INTO plugin_current (name, version, changed_at) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET version = excluded.version, changed_at = excluded.changed_at";

/// Locks a stored version's row (a no-op write) for the rest of the transaction.
pub(super) const LOCK_PLUGIN_VERSION: &str =
    "UPDATE plugin_versions SET retired_at = retired_at WHERE name = $1 AND version = $2";

pub(super) const PLUGIN_VERSION_RETIRED: &str =
    "SELECT retired_at FROM plugin_versions WHERE name = $1 AND version = $2";

pub(super) const RETIRE_PLUGIN_VERSION: &str = "UPDATE plugin_versions SET retired_at = $3
     WHERE name = $1 AND version = $2 AND retired_at IS NULL";

pub(super) const INSERT_PLUGIN_EVENT: &str = "INSERT INTO plugin_events
     (at, kind, name, version, previous, digest, actor, replica, file, reason)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

pub(super) const PLUGIN_EVENTS: &str =
    "SELECT * FROM plugin_events WHERE seq > $1 ORDER BY seq LIMIT $2";

pub(super) const LAST_PLUGIN_EVENT: &str = "SELECT COALESCE(MAX(seq), 0) FROM plugin_events";

pub(super) const JOBS_OF_DIGEST: &str = "SELECT COUNT(*) FROM jobs WHERE plugin_digest = $1";

pub(super) const COMPONENT_BLOB: &str = "SELECT blob_id FROM plugin_versions WHERE sha256 = $1";

pub(super) const INSERT_EXPERIMENT: &str =
    "INSERT INTO experiments (id, owner_id, problem, definition, created_at, project_id)
     VALUES ($1, $2, $3, $4, $5, COALESCE($6, $2))";

/// The experiments user `$2` may read: its own, and those of every project it is in.
const READABLE_EXPERIMENT: &str = "((experiments.owner_id = $2
       AND COALESCE(experiments.project_id, $2) = $2) OR experiments.project_id IN (
     SELECT project_id FROM project_members WHERE project_members.user_id = $2))";

/// The experiments user `$2` may cancel: its own, and those of the projects it is a member
/// of (not a viewer).
const WRITABLE_EXPERIMENT: &str = "((experiments.owner_id = $2
       AND COALESCE(experiments.project_id, $2) = $2) OR experiments.project_id IN (
     SELECT project_id FROM project_members
     WHERE project_members.user_id = $2 AND project_members.role = 'member'))";

pub(super) static EXPERIMENT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT id, owner_id, problem, definition, created_at, cancelled_at, project_id
         FROM experiments WHERE id = $1 AND {READABLE_EXPERIMENT}"
    )
});

/// The owner of an experiment user `$2` may cancel.
pub(super) static WRITABLE_EXPERIMENT_OWNER: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT owner_id FROM experiments WHERE id = $1 AND {WRITABLE_EXPERIMENT}")
});

/// The experiments user `$1` launched, or (`$4` set) a project's.
pub(super) const EXPERIMENTS: &str =
    "SELECT id, owner_id, problem, definition, created_at, cancelled_at, project_id
     FROM experiments
     WHERE (CASE WHEN $4 IS NULL THEN owner_id = $1 ELSE project_id = $4 END)
       AND ($2 IS NULL OR id < $2)
     ORDER BY id DESC LIMIT $3";

/// An experiment's jobs, with their status as clients see it, in launch order (job ids are
/// time-ordered, and an experiment's are made in order).
pub(super) static EXPERIMENT_RUNS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT id, {CLIENT_STATUS} AS status, labels, objective, objective_sense, time_to_best
         FROM jobs WHERE experiment_id = $1 AND {READABLE} ORDER BY id"
    )
});

/// `$2`: the experiment's owner (its launcher), as the jobs' owner is.
pub(super) const CANCEL_EXPERIMENT: &str = "UPDATE experiments SET cancelled_at = $3
     WHERE id = $1 AND owner_id = $2 AND cancelled_at IS NULL";

/// An experiment's jobs still in the queue, cancelled at once (as `CANCEL_PENDING` does one).
pub(super) const CANCEL_EXPERIMENT_PENDING: &str = "UPDATE jobs
     SET status = 'CANCELLED', ended_at = $3, cancel_requested = TRUE
     WHERE experiment_id = $1 AND owner_id = $2 AND status = 'PENDING'
     RETURNING id, COALESCE(project_id, owner_id) AS project_id";

/// An experiment's jobs claimed by a worker but not started (no execution yet): their
/// cancellation asked for, so that they end `CANCELLED` before they run.
pub(super) const CANCEL_EXPERIMENT_CLAIMED: &str = "UPDATE jobs SET cancel_requested = TRUE
     WHERE experiment_id = $1 AND owner_id = $2 AND status = 'RUNNING' AND NOT cancel_requested
         AND NOT EXISTS (SELECT 1 FROM executions WHERE executions.job_id = jobs.id)
     RETURNING id";

/// A race's entrants as clients see them, in launch order, with each one's latest execution.
pub(super) static RACE_ENTRANTS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT id, {CLIENT_STATUS} AS status, plugin_version, options, objective,
             objective_sense, time_to_best, stopped_early,
             (SELECT executions.id FROM executions WHERE executions.job_id = jobs.id
              ORDER BY attempt DESC LIMIT 1) AS execution_id
         FROM jobs WHERE race_of = $1 AND {READABLE} ORDER BY id"
    )
});

pub(super) const RACE: &str =
    "SELECT owner_id, COALESCE(project_id, owner_id) AS project_id, status
     FROM jobs WHERE id = $1 AND race IS NOT NULL";

/// A race's entrants as they stand in the table (a claimed one is `RUNNING`), with the
/// execution that completed each, if one did.
pub(super) const RACE_ENTRANT_ENDS: &str = "SELECT id, status, plugin_version, options, objective,
         objective_sense, time_to_best, stopped_early,
         (SELECT executions.id FROM executions WHERE executions.job_id = jobs.id
          ORDER BY attempt DESC LIMIT 1) AS execution_id
     FROM jobs WHERE race_of = $1 ORDER BY id";

pub(super) const JOB_OUTPUT_TEXT: &str = "SELECT output FROM job_outputs WHERE job_id = $1";

pub(super) const END_RACE: &str = "UPDATE jobs
     SET status = $2, ended_at = $3, objective = $4, objective_sense = $5, time_to_best = $6,
         stopped_early = $7
     WHERE id = $1 AND status = 'PENDING' AND race IS NOT NULL";

pub(super) const UNSETTLED_RACES: &str = "SELECT id FROM jobs
     WHERE race IS NOT NULL AND status = 'PENDING' AND NOT EXISTS (
         SELECT 1 FROM jobs AS entrant
         WHERE entrant.race_of = jobs.id AND entrant.status IN ('PENDING', 'RUNNING'))
     LIMIT $1";

/// A job's kept incumbents; a race's are its entrants'. In two parts, as [`EXECUTIONS`].
pub(super) const JOB_INCUMBENTS: &str = "SELECT execution_id, seq, found_at, objective, solution
     FROM (SELECT execution_id, seq, found_at, objective, solution FROM incumbents
           WHERE job_id = $1
           UNION ALL
           SELECT incumbents.execution_id, incumbents.seq, incumbents.found_at,
                  incumbents.objective, incumbents.solution
           FROM jobs JOIN incumbents ON incumbents.job_id = jobs.id
           WHERE jobs.race_of = $1) AS incumbents
     ORDER BY found_at, execution_id, seq";

pub(super) static EXECUTION_INCUMBENTS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT execution_id, seq, found_at, objective, solution
         FROM incumbents
         WHERE job_id = $1 AND execution_id = $3 AND seq > $4
           AND EXISTS (SELECT 1 FROM jobs WHERE id = $1 AND {READABLE})
         ORDER BY seq"
    )
});

pub(super) const INSERT_INCUMBENT: &str =
    "INSERT INTO incumbents (execution_id, seq, job_id, found_at, objective, solution, bytes)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING";

/// Keeps an execution's newest `$2` incumbents, and of those the newest within `$3` bytes
/// (the newest always).
pub(super) const PRUNE_INCUMBENTS: &str = "DELETE FROM incumbents
     WHERE execution_id = $1 AND seq NOT IN (
         SELECT seq FROM (
             SELECT seq,
                    ROW_NUMBER() OVER (ORDER BY seq DESC) AS place,
                    SUM(bytes) OVER (ORDER BY seq DESC) AS kept_bytes
             FROM incumbents WHERE execution_id = $1) AS newest
         WHERE place = 1 OR (place <= $2 AND kept_bytes <= $3))";

pub(super) const INSERT_API_KEY: &str =
    "INSERT INTO api_keys (id, owner_id, name, secret_hash, scopes, created_at, expires_at,
                           project_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

pub(super) const API_KEY: &str = "SELECT api_keys.*, users.username AS owner_name
     FROM api_keys JOIN users ON users.id = api_keys.owner_id WHERE api_keys.id = $1";

/// `$1` null: every owner's.
pub(super) const API_KEYS: &str = "SELECT api_keys.*, users.username AS owner_name
     FROM api_keys JOIN users ON users.id = api_keys.owner_id
     WHERE $1 IS NULL OR api_keys.owner_id = $1 ORDER BY api_keys.created_at, api_keys.id";

/// `$2` null: whoever owns it.
pub(super) const DELETE_API_KEY: &str =
    "DELETE FROM api_keys WHERE id = $1 AND ($2 IS NULL OR owner_id = $2)";

pub(super) const APPLIED_MIGRATIONS: &str =
    "SELECT version FROM caseload_migrations ORDER BY version";

/// The project a job is in, whoever may read it: what a key bound to a project is checked
/// against.
pub(super) const JOB_PROJECT: &str = "SELECT project_id FROM jobs WHERE id = $1";

/// The project a data file is in, as `JOB_PROJECT`.
pub(super) const DATA_FILE_PROJECT: &str = "SELECT project_id FROM data_files WHERE id = $1";

/// The project an experiment is in, as `JOB_PROJECT`.
pub(super) const EXPERIMENT_PROJECT: &str = "SELECT project_id FROM experiments WHERE id = $1";

pub(super) const TOUCH_API_KEY: &str = "UPDATE api_keys SET last_used_at = $2 WHERE id = $1";

pub(super) const INSERT_AUDIT_EVENT: &str =
    "INSERT INTO audit_events (at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5)";

/// `$1` null: from the newest.
pub(super) const AUDIT_EVENTS: &str = "SELECT * FROM audit_events
     WHERE $1 IS NULL OR seq < $1 ORDER BY seq DESC LIMIT $2";

pub(super) const INSERT_PROJECT: &str =
    "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";

pub(super) const PROJECTS: &str = "SELECT * FROM projects ORDER BY name";

pub(super) const PROJECT_MEMBERS: &str =
    "SELECT project_members.user_id, users.username, project_members.role
     FROM project_members JOIN users ON users.id = project_members.user_id
     WHERE project_members.project_id = $1 ORDER BY users.username";

pub(super) const SET_PROJECT_MEMBER: &str =
    "INSERT INTO project_members (project_id, user_id, role)
     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM projects WHERE id = $1)
     ON CONFLICT (project_id, user_id) DO UPDATE SET role = excluded.role";

pub(super) const REMOVE_PROJECT_MEMBER: &str =
    "DELETE FROM project_members WHERE project_id = $1 AND user_id = $2";

pub(super) const PROJECT_JOBS: &str = "SELECT COUNT(*) FROM jobs WHERE project_id = $1";

pub(super) const DELETE_PROJECT: &str = "DELETE FROM projects WHERE id = $1";

/// A project's cap on pending jobs, if it has one.
pub(super) const SET_PROJECT_QUOTA: &str =
    "UPDATE projects SET max_pending_jobs = $2 WHERE id = $1";

/// A shared project's cap on pending jobs and how many it has (no row: no such project).
pub(super) const PROJECT_QUOTA_STATE: &str = "SELECT max_pending_jobs,
         (SELECT COUNT(*) FROM jobs WHERE project_id = $1 AND status = 'PENDING') AS pending
     FROM projects WHERE id = $1";

pub(super) const USER_PROJECTS: &str =
    "SELECT projects.id, projects.name, projects.created_at, projects.max_pending_jobs,
            project_members.role
     FROM projects JOIN project_members ON project_members.project_id = projects.id
     WHERE project_members.user_id = $1 ORDER BY projects.name";
