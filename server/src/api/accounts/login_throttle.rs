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

/// Bytes of user names kept in all (each address's and each name's own entry): beyond, a
/// failure against a new name counts against its address alone. `/login` passes names of at
/// most [`crate::user_name::MAX_CHARS`] characters (longer ones in a capped form), so this
/// bounds the memory failures take whatever names a guesser sends.
const MAX_NAME_BYTES: usize = 16 << 20;

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

    /// Counts a failure against `username`; the bytes of a name it newly keeps, which
    /// `name_room` must leave room for.
    fn fail(&mut self, username: &str, now: Instant, name_room: usize) -> usize {
        let mut kept = 0;
        if let Some(count) = self.by_name.get_mut(username) {
            *count = count.saturating_add(1);
        } else if self.by_name.len() < MAX_NAMES_PER_ADDRESS && username.len() <= name_room {
            self.by_name.insert(username.to_owned(), 1);
            kept = username.len();
        } else {
            self.others = self.others.saturating_add(1);
        }
        self.total
            .get_or_insert(Failures {
                count: 0,
                last: now,
            })
            .bump(now);
        kept
    }

    /// The bytes of the names it keeps.
    fn name_bytes(&self) -> usize {
        self.by_name.keys().map(String::len).sum()
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
    /// The bytes of the names both maps keep, at most [`MAX_NAME_BYTES`].
    name_bytes: usize,
    /// When entries were last forgotten to make room for names: at most once a second, since
    /// a full table of fresh failures frees nothing.
    swept_for_names: Option<Instant>,
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
        let mut guard = self.lock();
        let counts = &mut *guard;
        let now = Instant::now();
        let name_room = MAX_NAME_BYTES.saturating_sub(counts.name_bytes);
        let failures = counts.by_address.entry(address).or_default();
        counts.name_bytes += failures.fail(username, now, name_room);
        let total = failures.total.map_or(0, |total| total.count);
        let burst = (total >= FREE_FAILURES && (total - FREE_FAILURES).is_multiple_of(BURST_EVERY))
            .then_some(total);
        if let Some(failures) = counts.by_user.get_mut(username) {
            failures.bump(now);
        } else if counts.by_user.len() < MAX_ENTRIES
            && counts.name_bytes + username.len() <= MAX_NAME_BYTES
        {
            let mut failures = Failures {
                count: 0,
                last: now,
            };
            failures.bump(now);
            counts.by_user.insert(username.to_owned(), failures);
            counts.name_bytes += username.len();
        }
        let sweep_for_names = counts.name_bytes + username.len() > MAX_NAME_BYTES
            && counts
                .swept_for_names
                .is_none_or(|swept| now.duration_since(swept) >= Duration::from_secs(1));
        if sweep_for_names {
            counts.swept_for_names = Some(now);
        }
        if counts.by_address.len() > MAX_ENTRIES || sweep_for_names {
            let mut released = 0;
            counts.by_address.retain(|_, failures| {
                let keep = failures.next_attempt().is_some_and(|next| next > now);
                if !keep {
                    released += failures.name_bytes();
                }
                keep
            });
            counts.name_bytes -= released;
        }
        if counts.by_user.len() >= MAX_ENTRIES || sweep_for_names {
            let mut released = 0;
            counts.by_user.retain(|name, failures| {
                let keep = failures.next_attempt() > now;
                if !keep {
                    released += name.len();
                }
                keep
            });
            counts.name_bytes -= released;
        }
        burst
    }

    /// `username` logged in from `address`: the failures against that name are disproved,
    /// from every address; failures against other names stay.
    pub fn succeeded(&self, address: IpAddr, username: &str) {
        let mut guard = self.lock();
        let counts = &mut *guard;
        if counts.by_user.remove(username).is_some() {
            counts.name_bytes -= username.len();
        }
        if let Some(failures) = counts.by_address.get_mut(&address) {
            let before = failures.name_bytes();
            let left = failures.clear(username);
            counts.name_bytes -= before - failures.name_bytes();
            if !left && let Some(gone) = counts.by_address.remove(&address) {
                counts.name_bytes -= gone.name_bytes();
            }
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
    fn the_names_kept_are_bounded_in_bytes() {
        let throttle = LoginThrottle::default();
        let name = "n".repeat(64);
        // Far more distinct long names than the bound holds, from many addresses.
        let per_address = MAX_NAMES_PER_ADDRESS;
        let addresses = 2 * MAX_NAME_BYTES / (64 * per_address) + 1;
        for address in 0..addresses {
            let address = IpAddr::V6(std::net::Ipv6Addr::from(address as u128 + 1));
            for suffix in 0..per_address {
                throttle.failed(address, &format!("{}{suffix:03}", &name[3..]));
            }
        }
        let counts = throttle.lock();
        let kept: usize = counts.by_user.keys().map(String::len).sum::<usize>()
            + counts
                .by_address
                .values()
                .map(AddressFailures::name_bytes)
                .sum::<usize>();
        assert_eq!(kept, counts.name_bytes);
        assert!(kept <= MAX_NAME_BYTES, "{kept} bytes of names kept");
        // Every address still counts its failures, named or not.
        assert!(counts.by_address.values().all(|failures| {
            failures
                .total
                .is_some_and(|total| total.count as usize == per_address)
        }));
    }

    #[test]
    fn successes_give_their_names_bytes_back() {
        let throttle = LoginThrottle::default();
        throttle.failed(GUESSER, "alice");
        throttle.failed(OWNER, "alice");
        throttle.failed(OWNER, "bob");
        throttle.succeeded(OWNER, "alice");
        throttle.succeeded(GUESSER, "alice");
        throttle.succeeded(OWNER, "bob");
        let counts = throttle.lock();
        assert_eq!(counts.name_bytes, 0);
        assert!(counts.by_address.is_empty() && counts.by_user.is_empty());
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
