-- A statement's launches are counted once per owner, not once per row: a batch's plain
-- launches are inserted in one statement (`store::postgres_launches`), and the row trigger
-- called `add_user_counts` for each job. Now the statement's new jobs are summed per owner
-- (pending, and the bytes their inputs keep), with one call each, as migration 0038 does
-- for outputs. A deleted job is still counted by the row trigger.
DROP TRIGGER jobs_counted ON jobs;
CREATE TRIGGER jobs_counted AFTER DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION count_job();
CREATE FUNCTION count_inserted_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM add_user_counts(owner_id, pending, 0, kept)
    FROM (SELECT owner_id, COUNT(*) FILTER (WHERE status = 'PENDING') AS pending,
                 CAST(SUM(OCTET_LENGTH(input)) AS BIGINT) AS kept
          FROM added GROUP BY owner_id ORDER BY owner_id) AS owners
    WHERE pending <> 0 OR kept <> 0;
    RETURN NULL;
END;
$$;
CREATE TRIGGER jobs_inserted_counted AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION count_inserted_jobs();
