//! How many bytes of incumbents one run may report: a bucket that holds
//! [`INCUMBENT_BYTES`] and refills at [`INCUMBENT_BYTES_PER_SECOND`]. Each report takes its
//! size from it; one that finds too little is dropped unread. A plugin that reports through
//! the SDK (one report per 250 ms) of solutions up to 128 KiB never notices; one
//! that calls the host import in a loop with megabyte solutions gets one through every two
//! seconds, so its run cannot fill the store (and slow every other user's writes) with
//! incumbents nobody can read as fast.

use std::time::{Duration, Instant};

use super::INCUMBENT_BYTES;

/// What a run's incumbents may take, on average, per second.
pub const INCUMBENT_BYTES_PER_SECOND: usize = 512 << 10;

/// How often a run's log says that incumbents were dropped for the budget.
const WARN_EVERY: Duration = Duration::from_secs(1);

/// One run's incumbent bytes.
#[derive(Debug)]
pub struct IncumbentBudget {
    /// Bytes a report may take now.
    available: f64,
    refilled_at: Instant,
    /// Reports dropped since the log last said so.
    dropped: u64,
    warned_at: Option<Instant>,
}

/// What became of a report.
#[derive(Debug, PartialEq, Eq)]
pub enum Spent {
    /// It fits: take it.
    Taken,
    /// It does not: drop it, and say so in the log with this line.
    Dropped(Option<String>),
}

impl IncumbentBudget {
    /// A full bucket: a run may report one largest incumbent at once.
    pub fn new(now: Instant) -> IncumbentBudget {
        IncumbentBudget {
            available: INCUMBENT_BYTES as f64,
            refilled_at: now,
            dropped: 0,
            warned_at: None,
        }
    }

    /// Takes `bytes` for a report made at `now`, if there are that many.
    pub fn spend(&mut self, bytes: usize, now: Instant) -> Spent {
        let elapsed = now
            .saturating_duration_since(self.refilled_at)
            .as_secs_f64();
        self.available = (self.available + elapsed * INCUMBENT_BYTES_PER_SECOND as f64)
            .min(INCUMBENT_BYTES as f64);
        self.refilled_at = now;
        if bytes as f64 <= self.available {
            self.available -= bytes as f64;
            return Spent::Taken;
        }
        self.dropped += 1;
        let due = self
            .warned_at
            .is_none_or(|warned| now.saturating_duration_since(warned) >= WARN_EVERY);
        if !due {
            return Spent::Dropped(None);
        }
        self.warned_at = Some(now);
        let dropped = std::mem::take(&mut self.dropped);
        Spent::Dropped(Some(format!(
            "[WARN] {dropped} incumbents dropped: a run reports at most {} KiB of them a \
             second\n",
            INCUMBENT_BYTES_PER_SECOND >> 10
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_gets_the_rate_and_a_paced_run_everything() {
        let start = Instant::now();
        // Megabyte reports in a tight loop for ten seconds: the burst, then one each two
        // seconds; the log hears of the drops once a second.
        let mut flood = IncumbentBudget::new(start);
        let mut taken = 0;
        let mut warnings = 0;
        for step in 0..10_000_u64 {
            let now = start + Duration::from_millis(step);
            match flood.spend(INCUMBENT_BYTES, now) {
                Spent::Taken => taken += 1,
                Spent::Dropped(Some(_)) => warnings += 1,
                Spent::Dropped(None) => {}
            }
        }
        assert_eq!(taken, 5, "the burst and one every two seconds");
        assert!((9..=11).contains(&warnings), "{warnings} warnings");
        // 120 KiB four times a second, as the SDK paces it: all of them.
        let mut paced = IncumbentBudget::new(start);
        for step in 0..400_u64 {
            let now = start + Duration::from_millis(250 * step);
            assert_eq!(paced.spend(120 << 10, now), Spent::Taken, "report {step}");
        }
    }
}
