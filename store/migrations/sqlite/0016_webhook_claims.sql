-- Fair webhook claims. A claimed delivery is marked in flight until its attempt is recorded
-- (or the claim runs out), so every dispatcher's claim can count what is already being posted
-- to a destination; the destination is the callback URL's scheme, host and port, the URL up to
-- its path (URLs are stored as the url crate writes them: never a user or password, always a
-- path, no default port).
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until BIGINT;
ALTER TABLE webhook_deliveries ADD COLUMN destination TEXT
    GENERATED ALWAYS AS (substr(url, 1, instr(substr(url, 9), '/') + 7)) VIRTUAL;
