-- A user's pending jobs, kept as a running count by triggers on the statements that change
-- a job's status (no extra statement per job), so that the quota check at every submission
-- reads one row instead of counting the user's queue, which grew with the queue.
ALTER TABLE users ADD COLUMN pending_jobs BIGINT NOT NULL DEFAULT 0;
UPDATE users SET pending_jobs = (
    SELECT COUNT(*) FROM jobs WHERE jobs.owner_id = users.id AND jobs.status = 'PENDING');
CREATE TRIGGER jobs_pending_inserted AFTER INSERT ON jobs WHEN NEW.status = 'PENDING'
BEGIN
    UPDATE users SET pending_jobs = pending_jobs + 1 WHERE id = NEW.owner_id;
END;
CREATE TRIGGER jobs_pending_left AFTER UPDATE OF status ON jobs
    WHEN OLD.status = 'PENDING' AND NEW.status <> 'PENDING'
BEGIN
    UPDATE users SET pending_jobs = pending_jobs - 1 WHERE id = NEW.owner_id;
END;
CREATE TRIGGER jobs_pending_entered AFTER UPDATE OF status ON jobs
    WHEN OLD.status <> 'PENDING' AND NEW.status = 'PENDING'
BEGIN
    UPDATE users SET pending_jobs = pending_jobs + 1 WHERE id = NEW.owner_id;
END;
CREATE TRIGGER jobs_pending_deleted AFTER DELETE ON jobs WHEN OLD.status = 'PENDING'
BEGIN
    UPDATE users SET pending_jobs = pending_jobs - 1 WHERE id = OLD.owner_id;
END;
