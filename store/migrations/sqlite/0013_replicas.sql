-- Each replica's workers and counters, written by the replica every few seconds, so that
-- any replica can show the whole service (GET /service, the console's service view). A row
-- not written for a while is a replica that stopped; upkeep deletes it after an hour.
CREATE TABLE replicas (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    workers    INTEGER NOT NULL,
    busy       INTEGER NOT NULL,
    accepted   INTEGER NOT NULL,
    ended      INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    seen_at    INTEGER NOT NULL
);
