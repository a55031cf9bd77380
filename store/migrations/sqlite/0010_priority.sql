-- A job's priority among its owner's own pending jobs (0 to 9, higher first). Fair share
-- between users is unchanged: a job of higher priority takes its owner's earliest place in
-- the queue and moves the owner's lower-priority jobs back one place each.
ALTER TABLE jobs ADD COLUMN priority SMALLINT NOT NULL DEFAULT 0;
