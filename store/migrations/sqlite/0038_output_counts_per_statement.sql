-- PostgreSQL counts a statement's outputs per owner once (its migration 0038). SQLite's
-- trigger stays one per row: its ends are written one statement each, in the process.
SELECT 1;
