-- The bytes of a user's stored outputs, kept as a running total: added by a trigger in the
-- statement that stores an output (no extra statement per job), taken off in the transaction
-- that purges it, so a quota check reads one row.
ALTER TABLE job_outputs ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
UPDATE job_outputs SET bytes = LENGTH(CAST(output AS BLOB));
ALTER TABLE users ADD COLUMN output_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE users SET output_bytes = (
    SELECT COALESCE(SUM(job_outputs.bytes), 0) FROM job_outputs
    JOIN jobs ON jobs.id = job_outputs.job_id WHERE jobs.owner_id = users.id);
ALTER TABLE users ADD COLUMN max_output_bytes BIGINT;
CREATE TRIGGER job_outputs_counted AFTER INSERT ON job_outputs
BEGIN
    UPDATE users SET output_bytes = output_bytes + NEW.bytes
    WHERE id = (SELECT owner_id FROM jobs WHERE id = NEW.job_id);
END;
