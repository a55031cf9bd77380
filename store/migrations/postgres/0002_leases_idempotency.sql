-- Nothing to do: PostgreSQL's 0001_initial already creates the idempotency columns and the
-- lease and retention indexes that SQLite's 0002 adds. The version exists so that both
-- backends number their migrations alike.
SELECT 1;
