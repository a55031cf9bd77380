-- The bytes a user keeps through its jobs join its other running totals in `user_counts`
-- (slot 0, as SQLite's triggers keep them), and the slots get the columns of PostgreSQL's
-- launch allowances that the quota check reads, so that both backends read the quotas with
-- the same statements. On PostgreSQL
-- the move takes the last write of every launch off the user's row (see its migration 0036);
-- SQLite's one writer checks every launch exactly, and its allowances stay 0.
ALTER TABLE user_counts ADD COLUMN kept_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE user_counts ADD COLUMN pending_allowance BIGINT NOT NULL DEFAULT 0;
ALTER TABLE user_counts ADD COLUMN bytes_allowance BIGINT NOT NULL DEFAULT 0;
INSERT INTO user_counts (user_id, slot, kept_bytes)
    SELECT id, 0, kept_bytes FROM users WHERE true
    ON CONFLICT (user_id, slot) DO UPDATE SET kept_bytes = excluded.kept_bytes;

DROP TRIGGER kept_datasets_counted;
DROP TRIGGER kept_datasets_released;
DROP TRIGGER jobs_input_kept;
DROP TRIGGER jobs_input_released;

CREATE TRIGGER kept_datasets_counted AFTER INSERT ON kept_datasets
BEGIN
    UPDATE user_counts SET kept_bytes = kept_bytes + NEW.bytes
    WHERE user_id = NEW.owner_id AND slot = 0;
END;
CREATE TRIGGER kept_datasets_released AFTER DELETE ON kept_datasets
BEGIN
    UPDATE user_counts SET kept_bytes = kept_bytes - OLD.bytes
    WHERE user_id = OLD.owner_id AND slot = 0;
END;
CREATE TRIGGER jobs_input_kept AFTER INSERT ON jobs
BEGIN
    UPDATE user_counts SET kept_bytes = kept_bytes + LENGTH(CAST(NEW.input AS BLOB))
    WHERE user_id = NEW.owner_id AND slot = 0;
END;
CREATE TRIGGER jobs_input_released AFTER DELETE ON jobs
BEGIN
    UPDATE user_counts SET kept_bytes = kept_bytes - LENGTH(CAST(OLD.input AS BLOB))
    WHERE user_id = OLD.owner_id AND slot = 0;
    DELETE FROM kept_datasets
    WHERE owner_id = OLD.owner_id AND blob_id = OLD.data_blob_id
      AND NOT EXISTS (SELECT 1 FROM jobs
                      WHERE owner_id = OLD.owner_id AND data_blob_id = OLD.data_blob_id);
END;

ALTER TABLE users DROP COLUMN kept_bytes;
