-- Idempotency keys live on the job they created (and go with it); the reaper finds expired
-- leases and retention finds old finished jobs through their own indexes.

ALTER TABLE jobs ADD COLUMN idempotency_key TEXT;
ALTER TABLE jobs ADD COLUMN request_hash TEXT;

CREATE UNIQUE INDEX jobs_idempotency ON jobs (owner_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE status = 'RUNNING';
CREATE INDEX jobs_ended ON jobs (ended_at) WHERE ended_at IS NOT NULL;
