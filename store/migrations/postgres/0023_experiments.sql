-- Experiments: versions × inputs × seeds of one use case, launched as ordinary jobs that
-- carry the experiment's id, and compared by their objectives. The definition is the request
-- as resolved (versions bound to digests, inputs described), as JSON.
CREATE TABLE experiments (
    id           TEXT PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    problem      TEXT NOT NULL,
    definition   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    cancelled_at BIGINT
);
CREATE INDEX experiments_by_owner ON experiments (owner_id, id);

ALTER TABLE jobs ADD COLUMN experiment_id TEXT;
CREATE INDEX jobs_by_experiment ON jobs (experiment_id) WHERE experiment_id IS NOT NULL;
