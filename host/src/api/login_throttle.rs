//! Throttling of failed logins, by client address and by user name, with exponential
//! back-off: a guesser is slowed to a crawl without locking the real user out.
//!
//! Each address counts its failed logins against each user name, and each user name counts
//! the failures against it from every address. An address's back-off comes from all its
//! failures: after [`FREE_FAILURES`], its next attempt must wait 1 s after its last failure,
//! then 2 s, 4 s... up to [`MAX_WAIT`]; an attempt made too early is answered 429 with
//! `Retry-After`, before any password hash is computed. A user name's back-off holds only for
//! addresses that have failed themselves, so the right password from an address with no
//! failures still logs in however many guesses others made.
//!
//! A success clears only what it disproves: the failures against that user name, from every
//! address. Failures against other names stay, so a guesser cannot wipe its record by logging
//! in to an account of its own between guesses. Nothing is kept across restarts or shared
//! between replicas: each replica slows its own share of a guesser.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Failed logins allowed before any wait.
const FREE_FAILURES: u32 = 5;

/// After the first burst of failures from one address, every this many more make another.
const BURST_EVERY: u32 = 50;

/// The longest wait between two attempts.
const MAX_WAIT: Duration = Duration::from_secs(15 * 60);

/// Entries kept at most per kind; beyond, those without a wait running are forgotten.
const MAX_ENTRIES: usize = 100_000;

/// User names one address keeps failures against; beyond, one more failure counts against
/// the address as a whole (see [`AddressFailures::others`]).
const MAX_NAMES_PER_ADDRESS: usize = 64;

/// Failures of one address or one user name.
#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

impl Failures {
    /// When the next attempt may be made.
    fn next_attempt(&self) -> Instant {
        if self.count < FREE_FAILURES {
            return self.last;
        }
        let doublings = (self.count - FREE_FAILURES).min(20);
        self.last + Duration::from_secs(1 << doublings).min(MAX_WAIT)
    }

    fn bump(&mut self, now: Instant) {
        self.count = self.count.saturating_add(1);
        self.last = now;
    }
}

/// One address's failures, by the user name they were against.
#[derive(Debug, Default)]
struct AddressFailures {
    by_name: HashMap<String, u32>,
    /// Failures against names past [`MAX_NAMES_PER_ADDRESS`]: no success clears them.
    others: u32,
    total: Option<Failures>,
}

impl AddressFailures {
    fn next_attempt(&self) -> Option<Instant> {
        self.total.as_ref().map(Failures::next_attempt)
    }

    fn fail(&mut self, username: &str, now: Instant) {
        if let Some(count) = self.by_name.get_mut(username) {
            *count = count.saturating_add(1);
        } else if self.by_name.len() < MAX_NAMES_PER_ADDRESS {
            self.by_name.insert(username.to_owned(), 1);
        } else {
            self.others = self.others.saturating_add(1);
        }
        self.total
            .get_or_insert(Failures {
                count: 0,
                last: now,
            })
            .bump(now);
    }

    /// Forgets the failures against `username`; whether any failure is left.
    fn clear(&mut self, username: &str) -> bool {
        if let Some(cleared) = self.by_name.remove(username)
            && let Some(total) = &mut self.total
        {
            total.count = total.count.saturating_sub(cleared);
        }
        let left = self.total.is_some_and(|total| total.count > 0);
        if !left {
            self.total = None;
        }
        left
    }
}

#[derive(Debug, Default)]
struct Counts {
    by_address: HashMap<IpAddr, AddressFailures>,
    by_user: HashMap<String, Failures>,
}

/// The failed-login counts of this process.
#[derive(Debug, Default)]
pub struct LoginThrottle {
    counts: Mutex<Counts>,
}

impl LoginThrottle {
    /// Ok if `address` may try `username` now; otherwise how long it must wait.
    pub fn admit(&self, address: IpAddr, username: &str) -> Result<(), Duration> {
        let counts = self.lock();
        let now = Instant::now();
        let address_next = counts
            .by_address
            .get(&address)
            .and_then(AddressFailures::next_attempt);
        let mut until = address_next.unwrap_or(now);
        if address_next.is_some()
            && let Some(user) = counts.by_user.get(username)
        {
            until = until.max(user.next_attempt());
        }
        if until > now {
            Err(until - now)
        } else {
            Ok(())
        }
    }

    /// A failed login from `address` against `username`. Answers the address's failures when
    /// they make a burst worth the audit log: when its back-off starts, and each
    /// [`BURST_EVERY`] failures after.
    pub fn failed(&self, address: IpAddr, username: &str) -> Option<u32> {
        let mut counts = self.lock();
        let now = Instant::now();
        let failures = counts.by_address.entry(address).or_default();
        failures.fail(username, now);
        let total = failures.total.map_or(0, |total| total.count);
        let burst = (total >= FREE_FAILURES && (total - FREE_FAILURES).is_multiple_of(BURST_EVERY))
            .then_some(total);
        if counts.by_user.len() < MAX_ENTRIES || counts.by_user.contains_key(username) {
            counts
                .by_user
                .entry(username.to_owned())
                .or_insert(Failures {
                    count: 0,
                    last: now,
                })
                .bump(now);
        }
        if counts.by_address.len() > MAX_ENTRIES {
            counts
                .by_address
                .retain(|_, failures| failures.next_attempt().is_some_and(|next| next > now));
        }
        if counts.by_user.len() >= MAX_ENTRIES {
            counts
                .by_user
                .retain(|_, failures| failures.next_attempt() > now);
        }
        burst
    }

    /// `username` logged in from `address`: the failures against that name are disproved,
    /// from every address; failures against other names stay.
    pub fn succeeded(&self, address: IpAddr, username: &str) {
        let mut counts = self.lock();
        counts.by_user.remove(username);
        if let Some(failures) = counts.by_address.get_mut(&address)
            && !failures.clear(username)
        {
            counts.by_address.remove(&address);
        }
        // Other addresses keep their own failures against the name: they were guesses from
        // elsewhere, and the name's own count (the one that slows many addresses together)
        // starts again.
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUESSER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const OWNER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 7));

    #[test]
    fn a_burst_is_reported_when_the_back_off_starts_and_now_and_then_after() {
        let throttle = LoginThrottle::default();
        let reported: Vec<u32> = (0..120)
            .filter_map(|_| throttle.failed(GUESSER, "alice"))
            .collect();
        assert_eq!(
            reported,
            [
                FREE_FAILURES,
                FREE_FAILURES + BURST_EVERY,
                FREE_FAILURES + 2 * BURST_EVERY
            ]
        );
    }

    #[test]
    fn a_guesser_waits_longer_each_time_and_the_owner_does_not() {
        let throttle = LoginThrottle::default();
        for _ in 0..FREE_FAILURES {
            assert!(throttle.admit(GUESSER, "alice").is_ok());
            throttle.failed(GUESSER, "alice");
        }
        let first = throttle.admit(GUESSER, "alice").expect_err("must wait");
        assert!(first > Duration::from_millis(900) && first <= Duration::from_secs(1));
        throttle.failed(GUESSER, "alice");
        let second = throttle.admit(GUESSER, "alice").expect_err("must wait");
        assert!(second > Duration::from_millis(1900), "{second:?}");
        // Another user from the guessing address waits too: the address is throttled.
        assert!(throttle.admit(GUESSER, "bob").is_err());
        // The owner's address has no failures: alice may log in from it.
        assert!(throttle.admit(OWNER, "alice").is_ok());
        throttle.succeeded(OWNER, "alice");
        assert!(throttle.admit(OWNER, "alice").is_ok());
    }

    #[test]
    fn a_user_name_s_wait_holds_for_addresses_that_failed() {
        let throttle = LoginThrottle::default();
        // Many addresses, each failing once for alice: alice's name is throttled for them.
        for last in 0..=FREE_FAILURES as u8 {
            let address = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, last));
            throttle.failed(address, "alice");
        }
        let failed_once = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 0));
        assert!(throttle.admit(failed_once, "alice").is_err());
        assert!(throttle.admit(OWNER, "alice").is_ok());
    }

    #[test]
    fn logging_in_to_one_s_own_account_does_not_clear_guesses_at_another() {
        let throttle = LoginThrottle::default();
        for _ in 0..FREE_FAILURES {
            throttle.failed(GUESSER, "alice");
            throttle.succeeded(GUESSER, "mallory");
        }
        assert!(
            throttle.admit(GUESSER, "alice").is_err(),
            "the guesser's own logins wiped its failures against alice"
        );
        // The owner from a clean address still logs in, and that clears alice's name, but
        // not the guesser's address.
        assert!(throttle.admit(OWNER, "alice").is_ok());
        throttle.succeeded(OWNER, "alice");
        assert!(throttle.admit(GUESSER, "alice").is_err());
    }

    #[test]
    fn a_success_clears_one_s_own_typos() {
        let throttle = LoginThrottle::default();
        for _ in 0..FREE_FAILURES {
            throttle.failed(OWNER, "alice");
        }
        assert!(throttle.admit(OWNER, "alice").is_err());
        // Let the wait pass, as a client honouring Retry-After does.
        throttle
            .lock()
            .by_address
            .get_mut(&OWNER)
            .expect("counted")
            .total = Some(Failures {
            count: FREE_FAILURES,
            last: Instant::now() - MAX_WAIT,
        });
        throttle.lock().by_user.remove("alice");
        assert!(throttle.admit(OWNER, "alice").is_ok());
        throttle.succeeded(OWNER, "alice");
        assert!(throttle.lock().by_address.is_empty());
        throttle.failed(OWNER, "alice");
        assert!(
            throttle.admit(OWNER, "alice").is_ok(),
            "old typos still counted"
        );
    }

    #[test]
    fn failures_against_many_names_still_count() {
        let throttle = LoginThrottle::default();
        for name in 0..(MAX_NAMES_PER_ADDRESS + FREE_FAILURES as usize) {
            throttle.failed(GUESSER, &format!("user{name}"));
        }
        for name in 0..MAX_NAMES_PER_ADDRESS {
            throttle.succeeded(GUESSER, &format!("user{name}"));
        }
        assert!(throttle.admit(GUESSER, "anyone").is_err());
    }

    #[test]
    fn the_wait_is_capped() {
        let failures = Failures {
            count: 1_000,
            last: Instant::now(),
        };
        assert!(failures.next_attempt() <= Instant::now() + MAX_WAIT);
    }
}
