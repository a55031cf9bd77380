-- Objectives: the number a use case optimizes, read from each output where its output schema
-- declares it (x-caseload-objective), and whether higher or lower is better. Kept with the
-- execution that found it and with its job, where GET /jobs filters and sorts by it.
ALTER TABLE jobs ADD COLUMN objective REAL;
ALTER TABLE jobs ADD COLUMN objective_sense TEXT;
ALTER TABLE executions ADD COLUMN objective REAL;
ALTER TABLE executions ADD COLUMN objective_sense TEXT;
CREATE INDEX jobs_by_objective ON jobs (owner_id, objective) WHERE objective IS NOT NULL;
