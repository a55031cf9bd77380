-- How long a run took to find what it returned, in seconds, where the use case's objective
-- declares where its output says so (x-caseload-objective's time_to_best). Experiments
-- compare it beside the objective.
ALTER TABLE jobs ADD COLUMN time_to_best REAL;
