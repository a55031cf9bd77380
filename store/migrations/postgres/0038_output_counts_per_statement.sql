-- An output's bytes are counted once per statement, not once per row. A batch's ends are
-- written in one statement (`store::postgres_ends`), and the row trigger called
-- `add_user_counts` for each output, with a look-up of its job's owner each time: now the
-- statement's outputs are summed per owner, with one call each.
DROP TRIGGER job_outputs_counted ON job_outputs;
DROP FUNCTION count_job_output();
CREATE FUNCTION count_job_outputs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Each output's owner is looked up by the job's key: a join would be planned without
    -- the transition table's size, and read the whole jobs table.
    PERFORM add_user_counts(owner_id, 0, bytes, 0)
    FROM (SELECT owner_id, CAST(SUM(bytes) AS BIGINT) AS bytes
          FROM (SELECT (SELECT owner_id FROM jobs WHERE jobs.id = added.job_id) AS owner_id,
                       added.bytes
                FROM added) AS owned
          GROUP BY owner_id ORDER BY owner_id) AS owners;
    RETURN NULL;
END;
$$;
CREATE TRIGGER job_outputs_counted AFTER INSERT ON job_outputs
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION count_job_outputs();
