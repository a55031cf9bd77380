-- Webhooks: a job's `options.callback_url`, a per-user signing secret, and the outbox of
-- deliveries. A trigger writes a job's delivery in the statement that ends it, whichever
-- path ends it (a run, a cancel, the reaper), so a commit that ends a job cannot lose its
-- callback; the dispatcher sends it at least once.
ALTER TABLE jobs ADD COLUMN callback_url TEXT;
ALTER TABLE users ADD COLUMN webhook_secret TEXT;
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    job_id          TEXT NOT NULL,
    owner_id        TEXT NOT NULL,
    url             TEXT NOT NULL,
    status          TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    delivered_at    BIGINT,
    given_up_at     BIGINT,
    last_error      TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE delivered_at IS NULL AND given_up_at IS NULL;
CREATE TRIGGER jobs_ended_webhook AFTER UPDATE OF status ON jobs
WHEN NEW.callback_url IS NOT NULL
 AND NEW.status IN ('COMPLETED', 'FAILED', 'CANCELLED')
 AND OLD.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')
BEGIN
    INSERT OR IGNORE INTO webhook_deliveries (id, job_id, owner_id, url, status, created_at, next_attempt_at)
    VALUES ('msg_' || NEW.id, NEW.id, NEW.owner_id, NEW.callback_url, NEW.status,
            CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 0);
END;
