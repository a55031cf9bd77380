-- A project's own cap on the jobs it has pending (null: none beyond its members' own), and
-- its pending queue, which the cap counts and a project's share of the queue is spread by.
ALTER TABLE projects ADD COLUMN max_pending_jobs BIGINT;
CREATE INDEX jobs_project_queue ON jobs (project_id, fair_key) WHERE status = 'PENDING';
