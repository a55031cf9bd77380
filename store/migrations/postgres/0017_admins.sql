-- Administrators: they may publish, promote and retire plugins and see what the service runs
-- on. The first user, the one the server creates at its first start, is one.
ALTER TABLE users ADD COLUMN admin BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE users SET admin = TRUE
    WHERE id = (SELECT id FROM users ORDER BY created_at, id LIMIT 1);
