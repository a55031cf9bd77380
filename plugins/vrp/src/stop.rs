//! When the search must stop: at the job's deadline, or as soon as the client cancels (or
//! asks to finish now). The search polls often, every few hundred microseconds of work, and
//! this reads the clock only every few polls and asks the host only every few milliseconds,
//! remembering a yes.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How often the host is asked whether the job was cancelled: a finish returns its best
/// plan within about this much, well under the 20 ms a finish may take.
pub const CANCEL_POLL_INTERVAL: Duration = Duration::from_millis(4);

/// Polls between two clock readings.
const POLLS_PER_CLOCK_READING: u32 = 8;

/// The deadline and the cancel question, polled from the search's inner loops.
pub struct Stop<'a> {
    deadline: Instant,
    cancelled: &'a dyn Fn() -> bool,
    polls: Cell<u32>,
    last_asked: Cell<Instant>,
    stopped: Cell<bool>,
}

impl<'a> Stop<'a> {
    pub fn new(deadline: Instant, cancelled: &'a dyn Fn() -> bool) -> Stop<'a> {
        Stop {
            deadline,
            cancelled,
            polls: Cell::new(0),
            last_asked: Cell::new(Instant::now()),
            stopped: Cell::new(false),
        }
    }

    /// A stop that never comes (tests, reruns on an iteration budget).
    pub fn never() -> Stop<'static> {
        Stop::new(
            Instant::now() + Duration::from_secs(365 * 24 * 3600),
            &|| false,
        )
    }

    /// Whether to stop now; cheap enough to call every few microseconds of work.
    #[inline]
    pub fn poll(&self) -> bool {
        if self.stopped.get() {
            return true;
        }
        let polls = self.polls.get().wrapping_add(1);
        self.polls.set(polls);
        if !polls.is_multiple_of(POLLS_PER_CLOCK_READING) {
            return false;
        }
        self.check_now()
    }

    /// Whether to stop now, reading the clock.
    pub fn check_now(&self) -> bool {
        if self.stopped.get() {
            return true;
        }
        let now = Instant::now();
        if now >= self.deadline {
            self.stopped.set(true);
        } else if now - self.last_asked.get() >= CANCEL_POLL_INTERVAL {
            self.last_asked.set(now);
            if (self.cancelled)() {
                self.stopped.set(true);
            }
        }
        self.stopped.get()
    }

    /// Whether a stop was seen.
    pub fn stopped(&self) -> bool {
        self.stopped.get()
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}
