-- Incumbents: solutions a running plugin reported as it found them (the `incumbent` import of
-- caseload:plugin@0.2.1), the newest few of each execution, bounded in count and bytes by the
-- host. `incumbents` on an execution counts all it reported, kept or not.
CREATE TABLE incumbents (
    execution_id TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    job_id       TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    found_at     BIGINT NOT NULL,
    objective    DOUBLE PRECISION NOT NULL,
    solution     TEXT NOT NULL,
    bytes        BIGINT NOT NULL,
    PRIMARY KEY (execution_id, seq)
);
CREATE INDEX incumbents_by_job ON incumbents (job_id);
ALTER TABLE executions ADD COLUMN incumbents BIGINT NOT NULL DEFAULT 0;
