-- PostgreSQL counts a statement's launches per owner once (its migration 0040). SQLite's
-- trigger stays one per row: its launches are inserted one statement each, in the process.
SELECT 1;
