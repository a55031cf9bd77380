-- Users, jobs, executions and outputs. Times are milliseconds since the Unix epoch (UTC).

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL REFERENCES users (id),
    problem          TEXT NOT NULL,
    input            TEXT NOT NULL,
    options          TEXT NOT NULL,
    status           TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    ended_at         INTEGER,
    attempts         INTEGER NOT NULL DEFAULT 0,
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER
);

-- The queue: pending jobs oldest first.
CREATE INDEX jobs_pending ON jobs (created_at, id) WHERE status = 'PENDING';
CREATE INDEX jobs_by_owner ON jobs (owner_id, id);

CREATE TABLE executions (
    id                TEXT PRIMARY KEY,
    job_id            TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt           INTEGER NOT NULL,
    status            TEXT NOT NULL,
    plugin_name       TEXT NOT NULL,
    plugin_version    TEXT NOT NULL,
    plugin_digest     TEXT NOT NULL,
    started_at        INTEGER NOT NULL,
    ended_at          INTEGER,
    progress_fraction REAL,
    progress_message  TEXT,
    error_code        TEXT,
    error_message     TEXT,
    log_tail          TEXT NOT NULL DEFAULT '',
    log_truncated     INTEGER NOT NULL DEFAULT 0,
    UNIQUE (job_id, attempt)
);

CREATE TABLE job_outputs (
    job_id TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    output TEXT NOT NULL
);
