-- The pending-jobs quota counts the jobs clients see as PENDING: those in the queue and those
-- a worker claimed but has not started. A claim no longer takes its job off the count; the
-- job's start does (its execution's row, which marks the job `started`), or its end if it
-- ends first. A claimed job given back unstarted was never taken off, so giving it back adds
-- nothing, and the count can no longer pass the quota through a claim and a release.
ALTER TABLE jobs ADD COLUMN started BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE jobs SET started = TRUE
WHERE status = 'RUNNING'
  AND EXISTS (SELECT 1 FROM executions
              WHERE executions.job_id = jobs.id AND executions.attempt = jobs.attempts
                AND executions.status = 'RUNNING');
UPDATE user_counts SET pending_jobs = CASE WHEN slot = 0 THEN (
    SELECT COUNT(*) FROM jobs
    WHERE jobs.owner_id = user_counts.user_id
      AND (jobs.status = 'PENDING' OR (jobs.status = 'RUNNING' AND NOT jobs.started)))
    ELSE 0 END;

DROP TRIGGER jobs_pending_left;
DROP TRIGGER jobs_pending_entered;
DROP TRIGGER jobs_pending_deleted;
CREATE TRIGGER jobs_waiting_left AFTER UPDATE OF status, started ON jobs
    WHEN (OLD.status = 'PENDING' OR (OLD.status = 'RUNNING' AND NOT OLD.started))
     AND NOT (NEW.status = 'PENDING' OR (NEW.status = 'RUNNING' AND NOT NEW.started))
BEGIN
    UPDATE user_counts SET pending_jobs = pending_jobs - 1
    WHERE user_id = NEW.owner_id AND slot = 0;
END;
CREATE TRIGGER jobs_waiting_entered AFTER UPDATE OF status, started ON jobs
    WHEN NOT (OLD.status = 'PENDING' OR (OLD.status = 'RUNNING' AND NOT OLD.started))
     AND (NEW.status = 'PENDING' OR (NEW.status = 'RUNNING' AND NOT NEW.started))
BEGIN
    UPDATE user_counts SET pending_jobs = pending_jobs + 1
    WHERE user_id = NEW.owner_id AND slot = 0;
END;
CREATE TRIGGER jobs_waiting_deleted AFTER DELETE ON jobs
    WHEN OLD.status = 'PENDING' OR (OLD.status = 'RUNNING' AND NOT OLD.started)
BEGIN
    UPDATE user_counts SET pending_jobs = pending_jobs - 1
    WHERE user_id = OLD.owner_id AND slot = 0;
END;
-- An execution written running is its job's start.
CREATE TRIGGER executions_start_their_jobs AFTER INSERT ON executions
    WHEN NEW.status = 'RUNNING'
BEGIN
    UPDATE jobs SET started = TRUE
    WHERE id = NEW.job_id AND status = 'RUNNING' AND NOT started;
END;
