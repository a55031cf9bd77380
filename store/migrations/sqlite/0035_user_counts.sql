-- A user's running totals of pending jobs and output bytes, in rows of their own (slots),
-- as on PostgreSQL (see its migration 0035), so that both backends read them with the same
-- statements. SQLite has one writer at a time: its triggers add to slot 0, made with the
-- user, and retention takes purged outputs off in slot -1.
CREATE TABLE user_counts (
    user_id      TEXT    NOT NULL,
    slot         INTEGER NOT NULL,
    pending_jobs BIGINT  NOT NULL DEFAULT 0,
    output_bytes BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, slot)
) WITHOUT ROWID;
INSERT INTO user_counts (user_id, slot, pending_jobs, output_bytes)
    SELECT id, 0, pending_jobs, output_bytes FROM users;

DROP TRIGGER jobs_pending_inserted;
DROP TRIGGER jobs_pending_left;
DROP TRIGGER jobs_pending_entered;
DROP TRIGGER jobs_pending_deleted;
DROP TRIGGER job_outputs_counted;

CREATE TRIGGER users_counted AFTER INSERT ON users
BEGIN
    INSERT INTO user_counts (user_id, slot) VALUES (NEW.id, 0) ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER jobs_pending_inserted AFTER INSERT ON jobs WHEN NEW.status = 'PENDING'
BEGIN
    UPDATE user_counts SET pending_jobs = pending_jobs + 1
    WHERE user_id = NEW.owner_id AND slot = 0;
END;
CREATE TRIGGER jobs_pending_left AFTER UPDATE OF status ON jobs
    WHEN OLD.status = 'PENDING' AND NEW.status <> 'PENDING'
BEGIN
    UPDATE user_counts SET pending_jobs = pending_jobs - 1
    WHERE user_id = NEW.owner_id AND slot = 0;
END;
CREATE TRIGGER jobs_pending_entered AFTER UPDATE OF status ON jobs
    WHEN OLD.status <> 'PENDING' AND NEW.status = 'PENDING'
BEGIN
    UPDATE user_counts SET pending_jobs = pending_jobs + 1
    WHERE user_id = NEW.owner_id AND slot = 0;
END;
CREATE TRIGGER jobs_pending_deleted AFTER DELETE ON jobs WHEN OLD.status = 'PENDING'
BEGIN
    UPDATE user_counts SET pending_jobs = pending_jobs - 1
    WHERE user_id = OLD.owner_id AND slot = 0;
END;
CREATE TRIGGER job_outputs_counted AFTER INSERT ON job_outputs
BEGIN
    UPDATE user_counts SET output_bytes = output_bytes + NEW.bytes
    WHERE user_id = (SELECT owner_id FROM jobs WHERE id = NEW.job_id) AND slot = 0;
END;

ALTER TABLE users DROP COLUMN pending_jobs;
ALTER TABLE users DROP COLUMN output_bytes;
