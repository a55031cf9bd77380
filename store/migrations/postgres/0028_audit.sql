-- The audit log: who did what to whom (users, keys, plugin versions, failed-login bursts),
-- newest by seq. `actor` is a user name, or `host` for a command run on the host.
CREATE TABLE audit_events (
    seq    BIGSERIAL PRIMARY KEY,
    at     BIGINT NOT NULL,
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    detail TEXT NOT NULL
);
