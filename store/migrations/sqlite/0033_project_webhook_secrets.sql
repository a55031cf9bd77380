-- A project's own secret for the callbacks of its jobs, made on first use, so that a team's
-- receiver verifies its jobs' callbacks whoever launched them.
ALTER TABLE projects ADD COLUMN webhook_secret TEXT;
