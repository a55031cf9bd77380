-- A key may be bound to one project (a shared project's id, or its owner's id for the
-- personal one): its launches, uploads and lists go there and nowhere else, and it reads
-- only that project's jobs. Null: the key acts wherever its owner may.
ALTER TABLE api_keys ADD COLUMN project_id TEXT;
