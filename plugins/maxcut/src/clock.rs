//! The time and the progress reports of one run.

use std::time::{Duration, Instant};

use caseload_quadratic::{Report, Snapshot};

/// How often the host is told the progress and asked whether to stop (a cancel, or a finish
/// that wants the best so far): often enough that a finish answers within tens of
/// milliseconds; the host writes progress at most every 500 ms whatever this is.
const REPORT_INTERVAL: Duration = Duration::from_millis(20);

/// Tracks time and progress reports for one run.
pub(crate) struct Clock {
    pub(crate) started: Instant,
    deadline: Instant,
    last_report: Instant,
}

impl Clock {
    pub(crate) fn new(deadline: Instant) -> Clock {
        let now = Instant::now();
        Clock {
            started: now,
            deadline,
            last_report: now,
        }
    }

    fn fraction(&self, now: Instant) -> f64 {
        let budget = self
            .deadline
            .saturating_duration_since(self.started)
            .as_secs_f64();
        if budget <= 0.0 {
            1.0
        } else {
            (now - self.started).as_secs_f64() / budget
        }
    }

    /// Reports progress (the best cut and its sides) if it is time to, and tells whether the
    /// run must stop now.
    pub(crate) fn should_stop(
        &mut self,
        best_cut: f64,
        best_sides: &[bool],
        report: &mut Report<'_>,
    ) -> bool {
        let now = Instant::now();
        if now >= self.deadline {
            return true;
        }
        if now - self.last_report >= REPORT_INTERVAL {
            self.last_report = now;
            return report(&Snapshot {
                best: best_cut,
                fraction: self.fraction(now),
                solution: &|| best_sides.to_vec(),
            });
        }
        false
    }
}
