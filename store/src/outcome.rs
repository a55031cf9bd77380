//! The one mapping from how an attempt at a job ended to the job's status. The worker's ends
//! ([`Executions::finish_execution`](super::Executions::finish_execution)), the release of an
//! unstarted claim, the reaper and the recovery at start all take the job's status from
//! [`JobEnd::after`]: their statements bind its answers, one for each case only the database
//! can tell apart at commit (whether the job's cancellation was asked for; for the reaper,
//! whether the job had its attempts).

use super::statement::Statement;
use super::types::{ExecutionStatus, JobStatus, Millis};

/// Whether the job of an abandoned attempt (its worker lost it, the server stopped, its
/// input could not be read) runs again. Only an `ABANDONED` execution looks at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Back to the queue: the attempt failed through no fault of the job.
    Yes,
    /// The job had its attempts, or another would fail the same way: it fails.
    No,
}

/// A job's status and end time after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobEnd {
    pub status: JobStatus,
    /// When it ended; `None` while it waits to run again.
    pub ended_at: Option<Millis>,
}

impl JobEnd {
    /// The job's status after an attempt whose execution ended `execution` at `at`:
    ///
    /// | execution | the job |
    /// |---|---|
    /// | `COMPLETED` | `COMPLETED` |
    /// | `FAILED`, `TIMED_OUT` | `FAILED` |
    /// | `CANCELLED` | `CANCELLED` |
    /// | `ABANDONED`, its cancellation asked for | `CANCELLED` (it never goes back to the queue) |
    /// | `ABANDONED`, [`Retry::No`] | `FAILED` |
    /// | `ABANDONED`, [`Retry::Yes`] | `PENDING` |
    pub fn after(
        execution: ExecutionStatus,
        retry: Retry,
        cancel_requested: bool,
        at: Millis,
    ) -> JobEnd {
        let status = match execution {
            ExecutionStatus::Completed => JobStatus::Completed,
            ExecutionStatus::Failed | ExecutionStatus::TimedOut => JobStatus::Failed,
            ExecutionStatus::Cancelled => JobStatus::Cancelled,
            // Not an end: the job runs on.
            ExecutionStatus::Running => JobStatus::Running,
            ExecutionStatus::Abandoned if cancel_requested => JobStatus::Cancelled,
            ExecutionStatus::Abandoned => match retry {
                Retry::Yes => JobStatus::Pending,
                Retry::No => JobStatus::Failed,
            },
        };
        let ended_at = match status {
            JobStatus::Pending | JobStatus::Running => None,
            JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled => Some(at),
        };
        JobEnd { status, ended_at }
    }

    /// Binds the status and the end time as a statement's next two values.
    pub(super) fn bind(self, statement: Statement<'_>) -> Statement<'_> {
        statement.bind(self.status.as_str()).bind(self.ended_at)
    }
}

/// The ends a statement binds for an attempt, one for each case the database tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct JobEnds {
    pub(super) cancel_requested: JobEnd,
    pub(super) otherwise: JobEnd,
}

impl JobEnds {
    pub(super) fn after(execution: ExecutionStatus, retry: Retry, at: Millis) -> JobEnds {
        JobEnds {
            cancel_requested: JobEnd::after(execution, retry, true, at),
            otherwise: JobEnd::after(execution, retry, false, at),
        }
    }
}

/// What the reaper and the recovery at start bind: a reaped attempt is abandoned, and its job
/// runs again unless it had its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ReapedEnds {
    pub(super) cancel_requested: JobEnd,
    pub(super) out_of_attempts: JobEnd,
    pub(super) otherwise: JobEnd,
}

impl ReapedEnds {
    /// Binds the three ends as a statement's next six values: if the job's cancellation
    /// was asked for, if it had its attempts, otherwise.
    pub(super) fn bind(self, statement: Statement<'_>) -> Statement<'_> {
        self.otherwise.bind(
            self.out_of_attempts
                .bind(self.cancel_requested.bind(statement)),
        )
    }

    pub(super) fn at(at: Millis) -> ReapedEnds {
        let abandoned = ExecutionStatus::Abandoned;
        ReapedEnds {
            cancel_requested: JobEnd::after(abandoned, Retry::Yes, true, at),
            out_of_attempts: JobEnd::after(abandoned, Retry::No, false, at),
            otherwise: JobEnd::after(abandoned, Retry::Yes, false, at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_abandoned_attempt_looks_at_cancellation_and_retries() {
        let at = 7;
        let ended = |status| JobEnd {
            status,
            ended_at: Some(at),
        };
        let pending = JobEnd {
            status: JobStatus::Pending,
            ended_at: None,
        };
        let cases = [
            (ExecutionStatus::Completed, ended(JobStatus::Completed)),
            (ExecutionStatus::Failed, ended(JobStatus::Failed)),
            (ExecutionStatus::TimedOut, ended(JobStatus::Failed)),
            (ExecutionStatus::Cancelled, ended(JobStatus::Cancelled)),
        ];
        for (execution, expected) in cases {
            for retry in [Retry::Yes, Retry::No] {
                for cancel_requested in [false, true] {
                    assert_eq!(
                        JobEnd::after(execution, retry, cancel_requested, at),
                        expected,
                        "{execution:?} {retry:?} {cancel_requested}"
                    );
                }
            }
        }
        let abandoned = ExecutionStatus::Abandoned;
        assert_eq!(JobEnd::after(abandoned, Retry::Yes, false, at), pending);
        assert_eq!(
            JobEnd::after(abandoned, Retry::No, false, at),
            ended(JobStatus::Failed)
        );
        for retry in [Retry::Yes, Retry::No] {
            assert_eq!(
                JobEnd::after(abandoned, retry, true, at),
                ended(JobStatus::Cancelled)
            );
        }
    }
}
