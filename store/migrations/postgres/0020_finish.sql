-- Finish now: a running job asked to stop and return what it has. Its plugin hears
-- cancelled(), gets the grace period to return, and the job ends COMPLETED with that output,
-- marked stopped_early.
ALTER TABLE jobs ADD COLUMN finish_requested BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE jobs ADD COLUMN stopped_early BOOLEAN NOT NULL DEFAULT FALSE;
