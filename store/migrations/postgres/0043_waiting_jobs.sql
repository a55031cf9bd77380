-- The pending-jobs quota counts the jobs clients see as PENDING: those in the queue and those
-- a worker claimed but has not started. A claim no longer takes its jobs off the count (nor
-- marks them `counted_claim`, which is left unused); the job's start does (its execution's
-- row, which marks the job `started`), or its end if it ends first. A claimed job given back
-- unstarted was never taken off, so giving it back adds nothing (nor charges an allowance),
-- and the count can no longer pass the quota through a claim and a release.
ALTER TABLE jobs ADD COLUMN started BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE jobs SET started = TRUE
WHERE status = 'RUNNING'
  AND EXISTS (SELECT 1 FROM executions
              WHERE executions.job_id = jobs.id AND executions.attempt = jobs.attempts
                AND executions.status = 'RUNNING');
UPDATE user_counts SET pending_jobs = 0;
INSERT INTO user_counts (user_id, slot, pending_jobs)
    SELECT owner_id, 0, COUNT(*) FROM jobs
    WHERE status = 'PENDING' OR (status = 'RUNNING' AND NOT started)
    GROUP BY owner_id
    ON CONFLICT (user_id, slot) DO UPDATE SET pending_jobs = EXCLUDED.pending_jobs;

CREATE OR REPLACE FUNCTION count_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending BIGINT := 0;
    kept BIGINT := 0;
    owner TEXT;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE')
       AND (NEW.status = 'PENDING' OR (NEW.status = 'RUNNING' AND NOT NEW.started)) THEN
        pending := pending + 1;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE')
       AND (OLD.status = 'PENDING' OR (OLD.status = 'RUNNING' AND NOT OLD.started)) THEN
        pending := pending - 1;
    END IF;
    IF TG_OP = 'INSERT' THEN
        kept := OCTET_LENGTH(NEW.input);
    ELSIF TG_OP = 'DELETE' THEN
        kept := -OCTET_LENGTH(OLD.input);
    END IF;
    IF TG_OP = 'DELETE' THEN
        owner := OLD.owner_id;
    ELSE
        owner := NEW.owner_id;
    END IF;
    IF pending <> 0 OR kept <> 0 THEN
        PERFORM add_user_counts(owner, pending, 0, kept);
    END IF;
    IF TG_OP = 'UPDATE' AND pending > 0 THEN
        PERFORM charge_requeue(owner);
    END IF;
    IF TG_OP = 'DELETE' AND OLD.data_blob_id IS NOT NULL THEN
        DELETE FROM kept_datasets
        WHERE owner_id = OLD.owner_id AND blob_id = OLD.data_blob_id
          AND NOT EXISTS (SELECT 1 FROM jobs
                          WHERE owner_id = OLD.owner_id AND data_blob_id = OLD.data_blob_id);
    END IF;
    RETURN NULL;
END;
$$;
DROP TRIGGER jobs_status_counted ON jobs;
CREATE TRIGGER jobs_status_counted AFTER UPDATE OF status, started ON jobs
    FOR EACH ROW
    WHEN ((OLD.status = 'PENDING' OR (OLD.status = 'RUNNING' AND NOT OLD.started))
          <> (NEW.status = 'PENDING' OR (NEW.status = 'RUNNING' AND NOT NEW.started)))
    EXECUTE FUNCTION count_job();
-- An execution written running is its job's start.
CREATE FUNCTION start_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE jobs SET started = TRUE
    WHERE id = NEW.job_id AND status = 'RUNNING' AND NOT started;
    RETURN NULL;
END;
$$;
CREATE TRIGGER executions_start_their_jobs AFTER INSERT ON executions
    FOR EACH ROW WHEN (NEW.status = 'RUNNING') EXECUTE FUNCTION start_job();
