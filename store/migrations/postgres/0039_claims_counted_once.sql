-- A claim takes its jobs off their owners' pending counts itself, with one call of
-- `add_user_counts` per owner, where the row trigger called it once per job claimed. Such a
-- claim marks each job with the lease token it gave it (`counted_claim`), and the trigger
-- leaves exactly those alone: a claim by a replica of an earlier release (a rolling
-- upgrade runs both at once) marks nothing, and the trigger still counts it. The trigger
-- now runs only where the status moves into or out of `PENDING`: an end that does not
-- requeue its job no longer calls it only to count nothing.
ALTER TABLE jobs ADD COLUMN counted_claim BIGINT;
DROP TRIGGER jobs_counted ON jobs;
CREATE TRIGGER jobs_counted AFTER INSERT OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION count_job();
CREATE TRIGGER jobs_status_counted AFTER UPDATE OF status ON jobs
    FOR EACH ROW
    WHEN ((OLD.status = 'PENDING') <> (NEW.status = 'PENDING')
          AND NOT (NEW.status = 'RUNNING' AND NEW.counted_claim IS NOT DISTINCT FROM NEW.lease_token))
    EXECUTE FUNCTION count_job();
