//! The statements of an attempt under its lease: its start, progress, heartbeat and end,
//! a claimed job given back, and the reaper's.

use std::sync::LazyLock;

pub(crate) const START_EXECUTION: &str = "INSERT INTO executions (id, job_id, attempt, status, plugin_name, plugin_version, plugin_digest, started_at)
     SELECT $1, id, $2, 'RUNNING', $3, $4, $5, $6 FROM jobs
     WHERE id = $7 AND lease_token = $8 AND status = 'RUNNING'";

/// What is not given (null) stays as it was.
pub(crate) const RECORD_PROGRESS: &str = "UPDATE executions
     SET progress_fraction = COALESCE($1, progress_fraction),
         progress_message = COALESCE($2, progress_message),
         log_tail = COALESCE($6, log_tail),
         log_truncated = COALESCE($7, log_truncated),
         incumbents = COALESCE($8, incumbents)
     WHERE id = $3 AND status = 'RUNNING'
       AND EXISTS (SELECT 1 FROM jobs
                   WHERE jobs.id = $4 AND jobs.lease_token = $5 AND jobs.status = 'RUNNING')";

/// A lease whose job's cancellation was asked for is not renewed: its holder hears it as lost
/// and interrupts the run (the backstop of the cancel notification).
pub(crate) const HEARTBEAT: &str = "UPDATE jobs SET lease_expires_at = $1
     WHERE id = $2 AND lease_token = $3 AND status = 'RUNNING' AND NOT cancel_requested";

/// The lease check of every end: only the holder of the current token moves a running job.
/// `$1`/`$2` are the job's status and end (`outcome::JobEnds`), `$5`/`$6` those if its
/// cancellation was asked for.
pub(crate) const FINISH_JOB: &str = "UPDATE jobs
     SET status = CASE WHEN cancel_requested THEN $5 ELSE $1 END,
         ended_at = CASE WHEN cancel_requested THEN $6 ELSE $2 END,
         lease_expires_at = NULL, objective = $7, objective_sense = $8, time_to_best = $9,
         stopped_early = finish_requested AND NOT cancel_requested AND $1 = 'COMPLETED'
     WHERE id = $3 AND lease_token = $4 AND status = 'RUNNING'";

pub(crate) const FINISH_EXECUTION: &str = "UPDATE executions
     SET status = $1, ended_at = $2, error_code = $3, error_message = $4, log_tail = $5,
         log_truncated = $6,
         progress_fraction = CASE WHEN $1 = 'COMPLETED' THEN 1.0 ELSE progress_fraction END,
         objective = $9, objective_sense = $10
     WHERE id = $7 AND job_id = $8";

/// What [`FINISH_JOB`] changed, as a CTE the rest of an end in one statement reads: the
/// job's id if the lease was held, no row otherwise.
static JOB_ENDED: LazyLock<String> =
    LazyLock::new(|| format!("job AS ({FINISH_JOB} RETURNING id)"));

/// [`INSERT_OUTPUT`] as a CTE after [`JOB_ENDED`] (`$20`, `$21`: the output and its bytes, no
/// row if the output is null or the lease was lost), and the statement's answer: `held`, 1
/// if the lease was held.
const OUTPUT_AND_HELD: &str = "output AS (
         INSERT INTO job_outputs (job_id, output, bytes)
         SELECT id, $20, $21 FROM job WHERE $20 IS NOT NULL)
     SELECT COUNT(*) AS held FROM job";

/// [`FINISH_JOB`], then [`FINISH_EXECUTION`] (`$10`…`$19`, its `$1`…`$10`) and
/// [`INSERT_OUTPUT`] if the job's row changed, in one statement: PostgreSQL's.
pub(crate) static FINISH_IN_ONE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH {job},
         execution AS (
             UPDATE executions
             SET status = $10, ended_at = $11, error_code = $12, error_message = $13,
                 log_tail = $14, log_truncated = $15,
                 progress_fraction = CASE WHEN $10 = 'COMPLETED' THEN 1.0 ELSE progress_fraction END,
                 objective = $18, objective_sense = $19
             WHERE id = $16 AND job_id = $17 AND EXISTS (SELECT 1 FROM job)),
         {OUTPUT_AND_HELD}",
        job = *JOB_ENDED
    )
});

/// [`FINISH_IN_ONE`] for an attempt whose start was not written: the execution is inserted
/// ended (`$16`, `$17`: its id and job's; `$22`…`$26`: its attempt, plugin name, version and
/// digest, and start) instead of updated, under the same lease check.
pub(crate) static START_AND_FINISH_IN_ONE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH {job},
         execution AS (
             INSERT INTO executions (id, job_id, attempt, status, plugin_name, plugin_version,
                 plugin_digest, started_at, ended_at, error_code, error_message, log_tail,
                 log_truncated, progress_fraction, objective, objective_sense)
             SELECT $16, $17, $22, $10, $23, $24, $25, $26, $11, $12, $13, $14, $15,
                 CASE WHEN $10 = 'COMPLETED' THEN 1.0 END, $18, $19
             FROM job),
         {OUTPUT_AND_HELD}",
        job = *JOB_ENDED
    )
});

/// A claimed job that never started goes back, its attempt uncounted (`$5`/`$6`, its status
/// and end); unless its cancellation was asked for meanwhile (`$3`/`$4`).
pub(crate) const RELEASE_UNSTARTED: &str = "UPDATE jobs
     SET status = CASE WHEN cancel_requested THEN $3 ELSE $5 END,
         ended_at = CASE WHEN cancel_requested THEN $4 ELSE $6 END,
         attempts = attempts - 1, lease_expires_at = NULL
     WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING'";

/// The trigger `job_outputs_counted` adds the output's bytes (`$3`) to its owner's counts.
pub(crate) const INSERT_OUTPUT: &str =
    "INSERT INTO job_outputs (job_id, output, bytes) VALUES ($1, $2, $3)";

/// Expired leases (or, with `$3`, every running job) go back to the queue, or fail once they
/// used their attempts (`$1`): the statuses and ends `outcome::ReapedEnds` binds, if the
/// job's cancellation was asked for (`$4`/`$5`), if it had its attempts (`$6`/`$7`), and
/// otherwise (`$8`/`$9`). The token is bumped, so the lost worker's late writes change nothing.
pub(crate) const REAP_JOBS: &str = "UPDATE jobs
     SET status = CASE WHEN cancel_requested THEN $4 WHEN attempts >= $1 THEN $6 ELSE $8 END,
         ended_at = CASE WHEN cancel_requested THEN $5 WHEN attempts >= $1 THEN $7 ELSE $9 END,
         lease_expires_at = NULL, lease_token = lease_token + 1
     WHERE status = 'RUNNING' AND ($3 OR lease_expires_at < $2)
     RETURNING id, owner_id, COALESCE(project_id, owner_id) AS project_id";

/// A reaped attempt whose start was never recorded (its worker died first, or had only
/// claimed it) still gets its entry in the job's history.
pub(crate) const ABANDON_UNSTARTED: &str = "INSERT INTO executions (id, job_id, attempt, status, plugin_name, plugin_version, plugin_digest, started_at, ended_at, error_code, error_message)
     SELECT $1, id, attempts, 'ABANDONED', problem, '', '', $2, $2, 'worker_lost', $3 FROM jobs
     WHERE id = $4 AND NOT EXISTS (SELECT 1 FROM executions
                                   WHERE executions.job_id = jobs.id
                                     AND executions.attempt = jobs.attempts)";

/// The message of an attempt reaped before its start was recorded.
pub(crate) const LOST_BEFORE_START: &str = "its worker stopped before this attempt's start was recorded (the process died or \
     was cut off)";
