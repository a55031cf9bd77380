-- Launches without a hot row. A launch locked its owner's row to check the quotas, and every
-- job stored wrote the row's kept bytes, so every replica's launches for one user committed
-- one after the other. Now the bytes a user keeps through its jobs are one more running total
-- in its `user_counts` slots, and a slot can hold an allowance: pending jobs and dataset bytes
-- of the user's headroom set aside for launches. A launch takes what it needs from the
-- allowance of one slot no other transaction holds, and so waits for no other launch. Only
-- when no slot has enough does it lock the user's row and check the quotas, counting every
-- allowance as used (or, where that would refuse it, taking them all back first); then half
-- the headroom left is added to the allowances of the user's free slots.
--
-- The quotas stay exact: the totals plus every allowance never pass a quota, since headroom is
-- only handed out with the user's row locked, net of every allowance, a launch turns
-- allowance into pending jobs and kept bytes in one transaction, and a requeued job is paid
-- for out of a free allowance where there is one. `granted_pending` and
-- `granted_bytes` are the quotas an allowance was handed out under: a launch takes from it
-- only while those are still the user's quotas, so a lowered quota is never passed on an old
-- allowance.
ALTER TABLE user_counts ADD COLUMN kept_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE user_counts ADD COLUMN pending_allowance BIGINT NOT NULL DEFAULT 0;
ALTER TABLE user_counts ADD COLUMN bytes_allowance BIGINT NOT NULL DEFAULT 0;
ALTER TABLE user_counts ADD COLUMN granted_pending BIGINT;
ALTER TABLE user_counts ADD COLUMN granted_bytes BIGINT;
INSERT INTO user_counts (user_id, slot, kept_bytes)
    SELECT id, 0, kept_bytes FROM users
    ON CONFLICT (user_id, slot) DO UPDATE SET kept_bytes = EXCLUDED.kept_bytes;

-- As migration 0035's, with the kept bytes beside the pending jobs and output bytes.
CREATE FUNCTION add_user_counts(owner TEXT, pending BIGINT, bytes BIGINT, kept BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
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
        SET pending_jobs = pending_jobs + pending, output_bytes = output_bytes + bytes,
            kept_bytes = kept_bytes + kept
        WHERE user_id = owner AND slot = (
            SELECT slot FROM user_counts
            WHERE user_id = owner AND slot = candidate FOR UPDATE SKIP LOCKED);
        IF FOUND THEN
            RETURN;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM user_counts WHERE user_id = owner AND slot = candidate) THEN
            INSERT INTO user_counts (user_id, slot, pending_jobs, output_bytes, kept_bytes)
            VALUES (owner, candidate, pending, bytes, kept)
            ON CONFLICT DO NOTHING;
            IF FOUND THEN
                RETURN;
            END IF;
        END IF;
    END LOOP;
    INSERT INTO user_counts (user_id, slot, pending_jobs, output_bytes, kept_bytes)
    VALUES (owner, own, pending, bytes, kept)
    ON CONFLICT (user_id, slot) DO UPDATE
    SET pending_jobs = user_counts.pending_jobs + EXCLUDED.pending_jobs,
        output_bytes = user_counts.output_bytes + EXCLUDED.output_bytes,
        kept_bytes = user_counts.kept_bytes + EXCLUDED.kept_bytes;
END;
$$;

CREATE OR REPLACE FUNCTION count_job_output() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM add_user_counts((SELECT owner_id FROM jobs WHERE id = NEW.job_id), 0, NEW.bytes, 0);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION count_kept_dataset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM add_user_counts(NEW.owner_id, 0, 0, NEW.bytes);
    ELSE
        PERFORM add_user_counts(OLD.owner_id, 0, 0, -OLD.bytes);
    END IF;
    RETURN NULL;
END;
$$;

-- A job that goes back to PENDING (a requeue: the reaper, a release, a retry) passed no quota
-- check: it is paid for out of an allowance, where one no other transaction holds has any
-- left, so that the totals plus the allowances stay within the quota they were shared under.
CREATE FUNCTION charge_requeue(owner TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE user_counts SET pending_allowance = pending_allowance - 1
    WHERE user_id = owner AND slot = (
        SELECT slot FROM user_counts
        WHERE user_id = owner AND pending_allowance > 0
        LIMIT 1 FOR UPDATE SKIP LOCKED);
END;
$$;

-- A job's pending count and the bytes it keeps, in one trigger: one call of
-- add_user_counts per job stored or deleted, not one per total.
CREATE FUNCTION count_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending BIGINT := 0;
    kept BIGINT := 0;
    owner TEXT;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'PENDING' THEN
        pending := pending + 1;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'PENDING' THEN
        pending := pending - 1;
    END IF;
    IF TG_OP = 'INSERT' THEN
        kept := OCTET_LENGTH(NEW.input);
    ELSIF TG_OP = 'DELETE' THEN
        kept := -OCTET_LENGTH(OLD.input);
    END IF;
    IF TG_OP = 'DELETE' THEN
        owner := OLD.owner_id;
    ELSE
        owner := NEW.owner_id;
    END IF;
    IF pending <> 0 OR kept <> 0 THEN
        PERFORM add_user_counts(owner, pending, 0, kept);
    END IF;
    IF TG_OP = 'UPDATE' AND pending > 0 THEN
        PERFORM charge_requeue(owner);
    END IF;
    IF TG_OP = 'DELETE' AND OLD.data_blob_id IS NOT NULL THEN
        DELETE FROM kept_datasets
        WHERE owner_id = OLD.owner_id AND blob_id = OLD.data_blob_id
          AND NOT EXISTS (SELECT 1 FROM jobs
                          WHERE owner_id = OLD.owner_id AND data_blob_id = OLD.data_blob_id);
    END IF;
    RETURN NULL;
END;
$$;
DROP TRIGGER jobs_pending_counted ON jobs;
DROP TRIGGER jobs_input_kept ON jobs;
CREATE TRIGGER jobs_counted AFTER INSERT OR UPDATE OF status OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION count_job();
DROP FUNCTION count_pending_job();
DROP FUNCTION count_kept_input();

DROP FUNCTION add_user_counts(TEXT, BIGINT, BIGINT);
ALTER TABLE users DROP COLUMN kept_bytes;
