-- A job's labels, given at launch: a JSON object of strings, or NULL for none. `GET /jobs`
-- filters on them.
ALTER TABLE jobs ADD COLUMN labels TEXT;
