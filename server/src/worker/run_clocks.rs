//! When each worker's current run started, so that a claim leaves out the workers a long run
//! holds: none of them takes a job soon.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A clock per worker: the microsecond its run started, counted from `origin` and plus one,
/// or zero while it runs nothing.
#[derive(Debug)]
pub(super) struct RunClocks {
    origin: Instant,
    started: Vec<AtomicU64>,
}

/// A worker's run, timed until it is dropped.
#[derive(Debug)]
pub(super) struct Running<'a> {
    clock: &'a AtomicU64,
    started: Instant,
}

impl RunClocks {
    pub(super) fn new(workers: usize) -> RunClocks {
        RunClocks {
            origin: Instant::now(),
            started: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// How many workers there are.
    pub(super) fn workers(&self) -> u32 {
        u32::try_from(self.started.len()).unwrap_or(u32::MAX)
    }

    /// Worker `index` starts a run.
    pub(super) fn start(&self, index: usize) -> Running<'_> {
        let started = Instant::now();
        let clock = &self.started[index];
        clock.store(self.since_origin(started) + 1, Ordering::Relaxed);
        Running { clock, started }
    }

    /// How many workers have been in their current run for `long` or more.
    pub(super) fn in_runs_of_at_least(&self, long: Duration) -> u32 {
        self.in_runs_of_at_least_at(long, Instant::now())
    }

    fn in_runs_of_at_least_at(&self, long: Duration, now: Instant) -> u32 {
        let now = self.since_origin(now);
        let long = u64::try_from(long.as_micros()).unwrap_or(u64::MAX);
        let count = self
            .started
            .iter()
            .map(|clock| clock.load(Ordering::Relaxed))
            .filter(|&started| started != 0 && now.saturating_sub(started - 1) >= long)
            .count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    fn since_origin(&self, instant: Instant) -> u64 {
        u64::try_from(instant.duration_since(self.origin).as_micros()).unwrap_or(u64::MAX - 1)
    }
}

impl Running<'_> {
    /// How long the run has taken so far.
    pub(super) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.clock.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runs_that_lasted_the_bound_count_as_long() {
        let clocks = RunClocks::new(3);
        assert_eq!(clocks.workers(), 3);
        let long = clocks.start(0);
        std::thread::sleep(Duration::from_millis(5));
        let short = clocks.start(1);
        // Seen when the short run starts, the long one has run `gap`, the short one nothing.
        let gap = short.started - long.started;
        assert_eq!(clocks.in_runs_of_at_least_at(gap / 2, short.started), 1);
        assert_eq!(
            clocks.in_runs_of_at_least_at(Duration::ZERO, short.started),
            2
        );
        assert!(long.elapsed() >= gap);
        drop(long);
        assert_eq!(clocks.in_runs_of_at_least_at(gap / 2, short.started), 0);
        drop(short);
        assert_eq!(clocks.in_runs_of_at_least(Duration::ZERO), 0);
    }
}
