-- Fair share between users. A job's place in the queue is its fair_key, in milliseconds:
-- its creation time, or, if its owner has jobs pending already, 60 s after the last of them
-- in the queue's order. A user's backlog is so spread out, and another user's job, keyed by
-- the time it came, lands among it rather than behind it all. Jobs queued before this
-- migration keep their order.
ALTER TABLE jobs ADD COLUMN fair_key BIGINT NOT NULL DEFAULT 0;
UPDATE jobs SET fair_key = created_at;
CREATE INDEX jobs_fair_queue ON jobs (fair_key, id) WHERE status = 'PENDING';
CREATE INDEX jobs_owner_queue ON jobs (owner_id, fair_key) WHERE status = 'PENDING';
