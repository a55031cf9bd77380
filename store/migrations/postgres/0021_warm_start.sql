-- Warm starts: the job whose output a job started from (options.warm_start). Its value is in
-- the job's input already; this records where it came from.
ALTER TABLE jobs ADD COLUMN warm_start TEXT;
