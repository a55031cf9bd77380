-- A user's own quotas (`caseload user quota`); NULL means the server's default.
ALTER TABLE users ADD COLUMN max_pending_jobs BIGINT;
ALTER TABLE users ADD COLUMN max_dataset_bytes BIGINT;
