-- An inline input that several jobs share (an experiment's runs, a race's entrants) is kept
-- once, in a blob, and each job refers to it as a dataset job does, with no data file. Its
-- bytes count once against its owner's dataset quota, as a deleted data file's do: a
-- kept_datasets row, made with the first job that refers to it and gone with the last.
CREATE OR REPLACE FUNCTION count_inserted_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM add_user_counts(owner_id, pending, 0, kept)
    FROM (SELECT owner_id, COUNT(*) FILTER (WHERE status = 'PENDING') AS pending,
                 CAST(SUM(OCTET_LENGTH(input)) AS BIGINT) AS kept
          FROM added GROUP BY owner_id ORDER BY owner_id) AS owners
    WHERE pending <> 0 OR kept <> 0;
    INSERT INTO kept_datasets (owner_id, blob_id, bytes)
    SELECT DISTINCT added.owner_id, added.data_blob_id, blobs.size
    FROM added JOIN blobs ON blobs.id = added.data_blob_id
    WHERE added.data_file_id IS NULL
    ORDER BY added.owner_id, added.data_blob_id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
