-- A user's pending jobs, kept as a running count by a trigger on the statements that change
-- a job's status (no extra statement per job), so that the quota check at every submission
-- reads one row instead of counting the user's queue, which grew with the queue.
ALTER TABLE users ADD COLUMN pending_jobs BIGINT NOT NULL DEFAULT 0;
UPDATE users SET pending_jobs = (
    SELECT COUNT(*) FROM jobs WHERE jobs.owner_id = users.id AND jobs.status = 'PENDING');
CREATE FUNCTION count_pending_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change BIGINT := 0;
    owner TEXT;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'PENDING' THEN
        change := change + 1;
        owner := NEW.owner_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'PENDING' THEN
        change := change - 1;
        owner := OLD.owner_id;
    END IF;
    IF change <> 0 THEN
        UPDATE users SET pending_jobs = pending_jobs + change WHERE id = owner;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER jobs_pending_counted AFTER INSERT OR UPDATE OF status OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION count_pending_job();
