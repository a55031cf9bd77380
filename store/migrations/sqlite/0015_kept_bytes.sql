-- Bytes a user keeps stored through its jobs, counted against its dataset quota beside its
-- data files: each job's own input (an inline input; a dataset job's parameters), and the
-- bytes of data files deleted while a job of the user still refers to them. Kept as a running
-- total by triggers, so that the quota check at every submission reads one row.
ALTER TABLE users ADD COLUMN kept_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE users SET kept_bytes = (
    SELECT COALESCE(SUM(LENGTH(CAST(input AS BLOB))), 0) FROM jobs WHERE jobs.owner_id = users.id);
-- A deleted data file's bytes, per owner, while a job of the owner refers to them.
CREATE TABLE kept_datasets (
    owner_id TEXT NOT NULL,
    blob_id  TEXT NOT NULL,
    bytes    BIGINT NOT NULL,
    PRIMARY KEY (owner_id, blob_id)
);
CREATE TRIGGER kept_datasets_counted AFTER INSERT ON kept_datasets
BEGIN
    UPDATE users SET kept_bytes = kept_bytes + NEW.bytes WHERE id = NEW.owner_id;
END;
CREATE TRIGGER kept_datasets_released AFTER DELETE ON kept_datasets
BEGIN
    UPDATE users SET kept_bytes = kept_bytes - OLD.bytes WHERE id = OLD.owner_id;
END;
CREATE TRIGGER jobs_input_kept AFTER INSERT ON jobs
BEGIN
    UPDATE users SET kept_bytes = kept_bytes + LENGTH(CAST(NEW.input AS BLOB))
    WHERE id = NEW.owner_id;
END;
CREATE TRIGGER jobs_input_released AFTER DELETE ON jobs
BEGIN
    UPDATE users SET kept_bytes = kept_bytes - LENGTH(CAST(OLD.input AS BLOB))
    WHERE id = OLD.owner_id;
    DELETE FROM kept_datasets
    WHERE owner_id = OLD.owner_id AND blob_id = OLD.data_blob_id
      AND NOT EXISTS (SELECT 1 FROM jobs
                      WHERE owner_id = OLD.owner_id AND data_blob_id = OLD.data_blob_id);
END;
-- Data files deleted before this migration whose bytes jobs still hold.
INSERT INTO kept_datasets (owner_id, blob_id, bytes)
    SELECT DISTINCT jobs.owner_id, jobs.data_blob_id, blobs.size FROM jobs
    JOIN blobs ON blobs.id = jobs.data_blob_id
    WHERE NOT EXISTS (SELECT 1 FROM data_files
                      WHERE data_files.owner_id = jobs.owner_id
                        AND data_files.blob_id = jobs.data_blob_id);
CREATE INDEX jobs_owner_blob ON jobs (owner_id, data_blob_id) WHERE data_blob_id IS NOT NULL;
