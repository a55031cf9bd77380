//! Which runs of a use case left to choose (`sandbox = "auto"`) go to a sandbox process:
//! those of a component one of whose last runs was long. A round trip to a process costs
//! more than a tiny job's whole run (`docs/benchmarks.md`), and a time limit says only how
//! long a run may take: a tiny max-cut graph with the default 10 s ends in microseconds. A
//! component's first long run is in the server's process, and tells.
//!
//! A run in the server's process is timed by the CPU its thread used, not by the clock: on
//! a busy machine a tiny run held off its core for a while is still tiny, and sending the
//! component's runs to processes for it would cost every later run a round trip. A run in a
//! sandbox process is timed by the clock, which bounds its CPU from above.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// A run at least this long is long: a round trip to a sandbox process would be a small
/// share of it, and the epoch checks it pays in the server's process a large one.
pub(super) const LONG_RUN: Duration = Duration::from_millis(10);

/// After this many short runs in a row, a component's runs stay in the server's process
/// until one of them is long again.
pub(super) const SHORT_STREAK: u8 = 8;

/// The CPU time the calling thread has used so far, where the system keeps it per thread.
#[allow(unsafe_code)]
pub(super) fn thread_cpu_time() -> Option<Duration> {
    #[cfg(unix)]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `clock_gettime` writes one `timespec` through the pointer, which points at
        // one that lives for the call.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0 {
            let seconds = u64::try_from(now.tv_sec).ok()?;
            let nanos = u32::try_from(now.tv_nsec).ok()?;
            return Some(Duration::new(seconds, nanos));
        }
    }
    None
}

/// The short runs since the last long one of each component that had one lately, by the
/// sha256 of its bytes.
#[derive(Debug, Default)]
pub(super) struct RecentRuns {
    short_since_long: Mutex<HashMap<String, u8>>,
}

impl RecentRuns {
    /// Whether one of the component's last [`SHORT_STREAK`] runs was long.
    pub(super) fn long_lately(&self, sha256: &str) -> bool {
        self.short_since_long
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(sha256)
    }

    /// Counts a run of the component, wherever it ran.
    pub(super) fn record(&self, sha256: &str, run_time: Duration) {
        let mut runs = self
            .short_since_long
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if run_time >= LONG_RUN {
            runs.insert(sha256.to_owned(), 0);
        } else if let Some(short) = runs.get_mut(sha256) {
            *short += 1;
            if *short >= SHORT_STREAK {
                runs.remove(sha256);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn a_thread_s_cpu_time_counts_its_work_not_its_sleep() {
        let before = thread_cpu_time().expect("every Unix keeps a thread's CPU time");
        std::thread::sleep(LONG_RUN * 3);
        let slept = thread_cpu_time().expect("read again") - before;
        assert!(slept < LONG_RUN, "asleep, the thread used {slept:?}");
        let spinning = std::time::Instant::now();
        let mut spun = slept;
        while spun < LONG_RUN && spinning.elapsed() < Duration::from_secs(10) {
            spun = thread_cpu_time().expect("read again") - before;
        }
        assert!(
            spun >= LONG_RUN,
            "spinning for {:?}, the thread used {spun:?}",
            spinning.elapsed()
        );
    }

    #[test]
    fn a_long_run_sends_the_next_runs_away_until_a_streak_of_short_ones() {
        let runs = RecentRuns::default();
        let short = LONG_RUN / 2;
        let long = LONG_RUN * 2;
        assert!(!runs.long_lately("a"), "no run yet: the server's process");
        runs.record("a", short);
        assert!(!runs.long_lately("a"));
        runs.record("a", long);
        assert!(runs.long_lately("a"));
        assert!(!runs.long_lately("b"), "each component on its own");
        for _ in 1..SHORT_STREAK {
            runs.record("a", short);
        }
        assert!(runs.long_lately("a"));
        runs.record("a", short);
        assert!(!runs.long_lately("a"));
        runs.record("a", long);
        assert!(runs.long_lately("a"));
    }
}
