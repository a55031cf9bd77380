-- A user's running totals of pending jobs and output bytes, spread over rows (slots) instead
-- of kept on the user's row. Every claim and every stored output changes them, and on one row
-- every write transaction of every replica queued behind the others' commits for that user.
-- A transaction now adds to a slot no other open transaction holds, so writers never wait on
-- each other here; a quota check sums the user's slots, and still runs with the user's row
-- locked (migration 0014), so concurrent launches cannot pass one check together.
CREATE TABLE user_counts (
    user_id      TEXT    NOT NULL,
    slot         INTEGER NOT NULL,
    pending_jobs BIGINT  NOT NULL DEFAULT 0,
    output_bytes BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, slot)
);
INSERT INTO user_counts (user_id, slot, pending_jobs, output_bytes)
    SELECT id, 0, pending_jobs, output_bytes FROM users;

-- Adds to one of the user's slots: first the one the connection's process id picks, so a
-- connection keeps to its own; one another open transaction holds is skipped, not waited
-- for, so two writers never wait on each other (nor deadlock) over counts. Only if all are
-- held does it wait, for its own.
CREATE FUNCTION add_user_counts(owner TEXT, pending BIGINT, bytes BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    slots CONSTANT INTEGER := 64;
    own CONSTANT INTEGER := pg_backend_pid() % slots;
    candidate INTEGER;
BEGIN
    IF owner IS NULL THEN
        RETURN;
    END IF;
    FOR step IN 0 .. slots - 1 LOOP
        candidate := (own + step) % slots;
        UPDATE user_counts
        SET pending_jobs = pending_jobs + pending, output_bytes = output_bytes + bytes
        WHERE user_id = owner AND slot = (
            SELECT slot FROM user_counts
            WHERE user_id = owner AND slot = candidate FOR UPDATE SKIP LOCKED);
        IF FOUND THEN
            RETURN;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM user_counts WHERE user_id = owner AND slot = candidate) THEN
            INSERT INTO user_counts (user_id, slot, pending_jobs, output_bytes)
            VALUES (owner, candidate, pending, bytes)
            ON CONFLICT DO NOTHING;
            IF FOUND THEN
                RETURN;
            END IF;
        END IF;
    END LOOP;
    INSERT INTO user_counts (user_id, slot, pending_jobs, output_bytes)
    VALUES (owner, own, pending, bytes)
    ON CONFLICT (user_id, slot) DO UPDATE
    SET pending_jobs = user_counts.pending_jobs + EXCLUDED.pending_jobs,
        output_bytes = user_counts.output_bytes + EXCLUDED.output_bytes;
END;
$$;

CREATE OR REPLACE FUNCTION count_pending_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change BIGINT := 0;
    owner TEXT;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'PENDING' THEN
        change := change + 1;
        owner := NEW.owner_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'PENDING' THEN
        change := change - 1;
        owner := OLD.owner_id;
    END IF;
    IF change <> 0 THEN
        PERFORM add_user_counts(owner, change, 0);
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION count_job_output() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM add_user_counts((SELECT owner_id FROM jobs WHERE id = NEW.job_id), 0, NEW.bytes);
    RETURN NULL;
END;
$$;

ALTER TABLE users DROP COLUMN pending_jobs;
ALTER TABLE users DROP COLUMN output_bytes;
