-- A client asked to cancel the job while it ran. Its worker is interrupted; if the worker is
-- gone, whatever would requeue the job (the reaper, a stopping server) ends it CANCELLED.
ALTER TABLE jobs ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT FALSE;
