-- A user can be disabled, and every token issued before a moment revoked (`caseload user
-- disable | revoke | passwd`). Requests check both, so a token stops working on every
-- replica within the check's cache time. tokens_valid_after is in milliseconds since the
-- Unix epoch; a token issued before it is refused.
ALTER TABLE users ADD COLUMN disabled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE users ADD COLUMN tokens_valid_after BIGINT NOT NULL DEFAULT 0;
