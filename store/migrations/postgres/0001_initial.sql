-- Users, jobs, executions and outputs. Times are milliseconds since the Unix epoch (UTC).
-- The same schema as SQLite's migrations 0001 and 0002 together.

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL REFERENCES users (id),
    problem          TEXT NOT NULL,
    input            TEXT NOT NULL,
    options          TEXT NOT NULL,
    status           TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    ended_at         BIGINT,
    attempts         BIGINT NOT NULL DEFAULT 0,
    lease_token      BIGINT NOT NULL DEFAULT 0,
    lease_expires_at BIGINT,
    idempotency_key  TEXT,
    request_hash     TEXT
);

-- The queue: pending jobs oldest first.
CREATE INDEX jobs_pending ON jobs (created_at, id) WHERE status = 'PENDING';
CREATE INDEX jobs_by_owner ON jobs (owner_id, id);
CREATE UNIQUE INDEX jobs_idempotency ON jobs (owner_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE status = 'RUNNING';
CREATE INDEX jobs_ended ON jobs (ended_at) WHERE ended_at IS NOT NULL;

CREATE TABLE executions (
    id                TEXT PRIMARY KEY,
    job_id            TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt           BIGINT NOT NULL,
    status            TEXT NOT NULL,
    plugin_name       TEXT NOT NULL,
    plugin_version    TEXT NOT NULL,
    plugin_digest     TEXT NOT NULL,
    started_at        BIGINT NOT NULL,
    ended_at          BIGINT,
    progress_fraction DOUBLE PRECISION,
    progress_message  TEXT,
    error_code        TEXT,
    error_message     TEXT,
    log_tail          TEXT NOT NULL DEFAULT '',
    log_truncated     BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (job_id, attempt)
);

CREATE TABLE job_outputs (
    job_id TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    output TEXT NOT NULL
);
