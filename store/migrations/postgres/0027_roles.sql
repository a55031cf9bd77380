-- Roles: admin (users, keys of anyone, quotas, the plugin registry, everything), member
-- (launch, cancel and read its own), viewer (read only). Administrators stay administrators;
-- everyone else is a member, as they were.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'member';
UPDATE users SET role = 'admin' WHERE admin;
ALTER TABLE users DROP COLUMN admin;
