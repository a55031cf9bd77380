-- Per-user quotas: a user's stored dataset bytes are summed at every upload.
CREATE INDEX data_files_by_owner ON data_files (owner_id);
