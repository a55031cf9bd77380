-- Datasets. An upload streams into a blob's chunks; the blob gets its sha256 and its
-- data_files row only in the transaction that completes the upload, so a cut-off upload never
-- shows, and its chunks are deleted (or swept once stale). Blobs with the same bytes are stored
-- once; each upload still gets its own data_files row. A job holds its own reference to the
-- blob, so deleting the data file does not take the job's input away.

CREATE TABLE blobs (
    id         TEXT PRIMARY KEY,
    sha256     TEXT,
    size       INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    touched_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX blobs_sha256 ON blobs (sha256) WHERE sha256 IS NOT NULL;
CREATE INDEX blobs_incomplete ON blobs (touched_at) WHERE sha256 IS NULL;

CREATE TABLE blob_chunks (
    blob_id TEXT NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    data    BLOB NOT NULL,
    PRIMARY KEY (blob_id, seq)
);

CREATE TABLE data_files (
    id         TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES users (id),
    blob_id    TEXT NOT NULL REFERENCES blobs (id),
    size       INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    media_type TEXT NOT NULL,
    filename   TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX data_files_by_blob ON data_files (blob_id);

ALTER TABLE jobs ADD COLUMN data_file_id TEXT;
ALTER TABLE jobs ADD COLUMN data_blob_id TEXT REFERENCES blobs (id);
ALTER TABLE jobs ADD COLUMN data_media_type TEXT;
CREATE INDEX jobs_by_blob ON jobs (data_blob_id) WHERE data_blob_id IS NOT NULL;
