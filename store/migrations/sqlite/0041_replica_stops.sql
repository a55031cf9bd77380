-- When a replica stopped cleanly, written by its last report, so that the service view
-- shows it stopped at once and the other replicas stop counting it as live.
ALTER TABLE replicas ADD COLUMN stopped_at BIGINT;
