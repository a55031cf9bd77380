-- An inline input that several jobs share (an experiment's runs, a race's entrants) is kept
-- once, in a blob, and each job refers to it as a dataset job does, with no data file. Its
-- bytes count once against its owner's dataset quota, as a deleted data file's do: a
-- kept_datasets row, made with the first job that refers to it and gone with the last.
CREATE TRIGGER jobs_shared_input_kept AFTER INSERT ON jobs
    WHEN NEW.data_blob_id IS NOT NULL AND NEW.data_file_id IS NULL
BEGIN
    INSERT OR IGNORE INTO kept_datasets (owner_id, blob_id, bytes)
    SELECT NEW.owner_id, NEW.data_blob_id, size FROM blobs WHERE id = NEW.data_blob_id;
END;
