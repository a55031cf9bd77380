-- API keys: a script's credential, `cl_<id>_<secret>`. Only a SHA-256 of the secret is kept
-- (the secret is 256 random bits, so a fast hash is enough); `scopes` is a comma-separated
-- list of read, launch, publish, admin. A revoked key is deleted.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    secret_hash  TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT,
    last_used_at BIGINT
);
CREATE INDEX api_keys_by_owner ON api_keys (owner_id);
