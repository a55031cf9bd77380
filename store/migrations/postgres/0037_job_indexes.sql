-- Fewer index entries per job. Every job is inserted, claimed and ended, and on PostgreSQL each
-- of those writes a new entry into every index of the jobs table whose condition the row
-- meets (a claim or an end changes the status, which some index conditions name, so no
-- update is HOT). `jobs_pending` serves no statement since claims order by `fair_key`
-- (`jobs_fair_queue`), and the project indexes held every job, in or out of a project: they
-- now hold only a project's jobs, which is what every statement that reads them asks for
-- (`project_id = ...`).
DROP INDEX jobs_pending;
DROP INDEX jobs_by_project;
CREATE INDEX jobs_by_project ON jobs (project_id, id) WHERE project_id IS NOT NULL;
DROP INDEX jobs_project_queue;
CREATE INDEX jobs_project_queue ON jobs (project_id, fair_key)
    WHERE status = 'PENDING' AND project_id IS NOT NULL;
