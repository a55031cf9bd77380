-- The plugin registry: components published to the store, each version immutable and kept,
-- one current version per use case, and what happened to them. A component's bytes are a
-- blob like a dataset's (stored once by sha256, in chunks); a version row keeps its blob.

CREATE TABLE plugin_versions (
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    sha256       TEXT NOT NULL,
    blob_id      TEXT NOT NULL REFERENCES blobs (id),
    world        TEXT NOT NULL,
    size         BIGINT NOT NULL,
    published_by TEXT,
    published_at BIGINT NOT NULL,
    retired_at   BIGINT,
    PRIMARY KEY (name, version)
);
CREATE UNIQUE INDEX plugin_versions_sha256 ON plugin_versions (sha256);

-- The version an unpinned launch of the use case gets. No row: the built-in, if any.
CREATE TABLE plugin_current (
    name       TEXT PRIMARY KEY,
    version    TEXT NOT NULL,
    changed_at BIGINT NOT NULL
);

-- Every change, service-wide: published, promoted, retired, and what a replica refused.
CREATE TABLE plugin_events (
    seq      BIGSERIAL PRIMARY KEY,
    at       BIGINT NOT NULL,
    kind     TEXT NOT NULL,
    name     TEXT,
    version  TEXT,
    previous TEXT,
    digest   TEXT,
    actor    TEXT,
    replica  TEXT,
    file     TEXT,
    reason   TEXT
);

-- A job is bound at acceptance to the component it runs: on every replica, every attempt.
ALTER TABLE jobs ADD COLUMN plugin_version TEXT;
ALTER TABLE jobs ADD COLUMN plugin_digest TEXT;
ALTER TABLE jobs ADD COLUMN version_requested TEXT;
ALTER TABLE jobs ADD COLUMN rerun_of TEXT;
CREATE INDEX jobs_by_plugin_digest ON jobs (plugin_digest);
