-- PostgreSQL's claims count their jobs off the pending counts themselves (its migration
-- 0039). SQLite's triggers are unchanged: a claim there is one statement in the process.
SELECT 1;
