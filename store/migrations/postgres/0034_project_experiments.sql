-- The project an experiment belongs to (its launcher's personal one: the launcher's id), so
-- that the project's members read and cancel it as they do its jobs.
ALTER TABLE experiments ADD COLUMN project_id TEXT;
UPDATE experiments SET project_id = owner_id;
CREATE INDEX experiments_by_project ON experiments (project_id, id);
