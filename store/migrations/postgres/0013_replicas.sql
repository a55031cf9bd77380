-- Each replica's workers and counters, written by the replica every few seconds, so that
-- any replica can show the whole service (GET /service, the console's service view). A row
-- not written for a while is a replica that stopped; upkeep deletes it after an hour.
CREATE TABLE replicas (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    workers    BIGINT NOT NULL,
    busy       BIGINT NOT NULL,
    accepted   BIGINT NOT NULL,
    ended      BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL
);
