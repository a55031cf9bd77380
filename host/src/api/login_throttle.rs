//! Throttling of failed logins, by client address and by user name, with exponential
//! back-off: a guesser is slowed to a crawl without locking the real user out.
//!
//! Each address and each user name counts its failed logins. After [`FREE_FAILURES`], the
//! next attempt must wait 1 s after the last failure, then 2 s, 4 s... up to [`MAX_WAIT`];
//! an attempt made too early is answered 429 with `Retry-After`, before any password hash is
//! computed. A user name's back-off holds only for addresses that have failed themselves, so
//! the right password from an address with no failures still logs in however many guesses
//! others made. A success clears its address and its user name. Nothing is kept across
//! restarts or shared between replicas: each replica slows its own share of a guesser.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Failed logins allowed before any wait.
const FREE_FAILURES: u32 = 5;

/// The longest wait between two attempts.
const MAX_WAIT: Duration = Duration::from_secs(15 * 60);

/// Entries kept at most per kind; beyond, those without a wait running are forgotten.
const MAX_ENTRIES: usize = 100_000;

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
}

#[derive(Debug, Default)]
struct Counts {
    by_address: HashMap<IpAddr, Failures>,
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
        let address_failures = counts.by_address.get(&address);
        let mut until = address_failures.map_or(now, Failures::next_attempt);
        if address_failures.is_some()
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

    pub fn failed(&self, address: IpAddr, username: &str) {
        let mut counts = self.lock();
        let now = Instant::now();
        let bump = |failures: &mut Failures| {
            failures.count = failures.count.saturating_add(1);
            failures.last = now;
        };
        let fresh = Failures {
            count: 0,
            last: now,
        };
        bump(counts.by_address.entry(address).or_insert(fresh));
        if counts.by_user.len() < MAX_ENTRIES || counts.by_user.contains_key(username) {
            bump(counts.by_user.entry(username.to_owned()).or_insert(fresh));
        }
        if counts.by_address.len() > MAX_ENTRIES {
            counts
                .by_address
                .retain(|_, failures| failures.next_attempt() > now);
        }
        if counts.by_user.len() >= MAX_ENTRIES {
            counts
                .by_user
                .retain(|_, failures| failures.next_attempt() > now);
        }
    }

    pub fn succeeded(&self, address: IpAddr, username: &str) {
        let mut counts = self.lock();
        counts.by_address.remove(&address);
        counts.by_user.remove(username);
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
    fn the_wait_is_capped() {
        let failures = Failures {
            count: 1_000,
            last: Instant::now(),
        };
        assert!(failures.next_attempt() <= Instant::now() + MAX_WAIT);
    }
}
