-- Races: a job whose options.race runs several entrants (seeds, versions) at once, each an
-- ordinary job that names it (race_of); the race itself is never claimed, and ends with its
-- best entrant's output once every entrant ended. `race` holds the entrants as launched, JSON.
ALTER TABLE jobs ADD COLUMN race TEXT;
ALTER TABLE jobs ADD COLUMN race_of TEXT;
CREATE INDEX jobs_by_race ON jobs (race_of) WHERE race_of IS NOT NULL;
CREATE INDEX jobs_racing ON jobs (id) WHERE race IS NOT NULL AND status = 'PENDING';
