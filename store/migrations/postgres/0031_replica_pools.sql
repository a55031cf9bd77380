-- The worker pool a replica's workers are in (`--pool`), so that the service view can say
-- why a use case bound to pools no live replica runs waits.
ALTER TABLE replicas ADD COLUMN pool TEXT NOT NULL DEFAULT 'default';
