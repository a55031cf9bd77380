//! Requests held open: event streams and long-polls. They would otherwise outlive what the
//! server can give them, so each one
//!
//! - holds one of its user's `--max-held-requests-per-user` places, or is refused with 429;
//! - ends when its connection is asked to close (the connection cap closes the oldest, and
//!   a stream must not keep it open forever): a stream with a `reconnect` event that tells
//!   the client to come back with `Last-Event-ID`, a long-poll with what it has;
//! - ends when its user loses access (disabled, deleted, tokens revoked, a new password) or
//!   its API key is revoked, within the bound every request's check has
//!   ([`AccessCache`](crate::api::accounts::user_access),
//!   [`KeyCache`](crate::api::accounts::key_access)), and when its token or key expires, at
//!   that moment.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use tokio::sync::watch;

use crate::api::{ApiError, AppState};
use crate::auth::AuthUser;
use crate::config::DEFAULT_MAX_HELD_REQUESTS_PER_USER;
use crate::store::now_millis;

/// How often a held request checks that its user may still use its token; the access cache
/// answers most checks without a read.
const ACCESS_CHECK_EVERY: Duration = Duration::from_secs(1);

/// How many requests each user holds open, and how many each may.
#[derive(Debug)]
pub struct HeldRequests {
    max_per_user: usize,
    per_user: Mutex<HashMap<String, usize>>,
}

impl Default for HeldRequests {
    fn default() -> HeldRequests {
        HeldRequests::new(DEFAULT_MAX_HELD_REQUESTS_PER_USER)
    }
}

impl HeldRequests {
    pub fn new(max_per_user: usize) -> HeldRequests {
        HeldRequests {
            max_per_user,
            per_user: Mutex::default(),
        }
    }

    /// One of `user_id`'s places, given back when the returned slot is dropped.
    fn take(self: &Arc<Self>, user_id: &str) -> Result<HeldSlot, ApiError> {
        let mut per_user = self.per_user.lock().unwrap_or_else(PoisonError::into_inner);
        let held = per_user.entry(user_id.to_owned()).or_default();
        if *held >= self.max_per_user {
            if *held == 0 {
                per_user.remove(user_id);
            }
            return Err(ApiError::HeldRequestsQuota(self.max_per_user));
        }
        *held += 1;
        Ok(HeldSlot {
            requests: self.clone(),
            user_id: user_id.to_owned(),
        })
    }

    /// Requests held open now, by every user.
    #[cfg(test)]
    fn count(&self) -> usize {
        let per_user = self.per_user.lock().unwrap_or_else(PoisonError::into_inner);
        per_user.values().sum()
    }
}

/// A user's place among its held requests.
#[derive(Debug)]
struct HeldSlot {
    requests: Arc<HeldRequests>,
    user_id: String,
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        let mut per_user = self
            .requests
            .per_user
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = per_user.get_mut(&self.user_id) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                per_user.remove(&self.user_id);
            }
        }
    }
}

/// Set by the listener on every request: turns true when the request's connection is asked
/// to close.
#[derive(Debug, Clone)]
pub struct ConnectionClosing(watch::Receiver<bool>);

impl ConnectionClosing {
    /// A signal for one connection: send `true` to close it.
    pub fn new() -> (watch::Sender<bool>, ConnectionClosing) {
        let (sender, receiver) = watch::channel(false);
        (sender, ConnectionClosing(receiver))
    }

    /// Returns once the connection is asked to close; never if it is not.
    async fn closed(&mut self) {
        if self.0.wait_for(|closing| *closing).await.is_err() {
            // The connection is gone with its sender; the request is dropped with it.
            std::future::pending::<()>().await;
        }
    }
}

/// The request's [`ConnectionClosing`], if a listener set one (tests that call the router
/// directly do not).
#[derive(Debug)]
pub struct Connection(Option<ConnectionClosing>);

impl FromRequestParts<AppState> for Connection {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Connection(
            parts.extensions.get::<ConnectionClosing>().cloned(),
        ))
    }
}

/// Why a held request must end now.
#[derive(Debug)]
pub enum Interrupt {
    /// Its connection is asked to close: answer what there is.
    Closing,
    /// Its user may no longer use its token.
    AccessLost(ApiError),
}

/// A request held open: its place, and what ends it early.
pub struct Hold {
    _slot: HeldSlot,
    closing: Option<ConnectionClosing>,
    state: AppState,
    user: AuthUser,
    access_check: tokio::time::Interval,
}

impl Hold {
    /// Takes one of the user's places, or answers 429.
    pub fn begin(
        state: &AppState,
        user: &AuthUser,
        connection: Connection,
    ) -> Result<Hold, ApiError> {
        let slot = state.held_requests.take(&user.id)?;
        let mut access_check = tokio::time::interval(ACCESS_CHECK_EVERY);
        access_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The extractor checked access just now: the first check is one period away.
        access_check.reset();
        Ok(Hold {
            _slot: slot,
            closing: connection.0,
            state: state.clone(),
            user: user.clone(),
            access_check,
        })
    }

    /// Returns once the request must end. Safe to drop at any await (it is one branch of a
    /// `select!` beside the request's own wait).
    pub async fn interrupted(&mut self) -> Interrupt {
        loop {
            let closing = async {
                match &mut self.closing {
                    Some(closing) => closing.closed().await,
                    None => std::future::pending().await,
                }
            };
            let expiry = async {
                match self.user.expires_ms {
                    Some(expires_ms) => {
                        let left = expires_ms.saturating_sub(now_millis().max(0) as u64);
                        tokio::time::sleep(Duration::from_millis(left)).await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = closing => return Interrupt::Closing,
                () = expiry => {
                    let what = if self.user.key.is_some() { "API key" } else { "token" };
                    tracing::debug!(user = %self.user.username, "a held request's {what} expired");
                    return Interrupt::AccessLost(ApiError::InvalidToken(
                        if self.user.key.is_some() {
                            "the API key is invalid, revoked or expired"
                        } else {
                            "the token is invalid or expired"
                        },
                    ));
                }
                _ = self.access_check.tick() => {
                    let checked = self
                        .state
                        .user_access
                        .check(self.state.store.as_ref(), &self.user)
                        .await;
                    if let Err(error) = checked {
                        return Interrupt::AccessLost(error);
                    }
                    if let Some(key) = &self.user.key {
                        match self.state.api_keys.still_valid(&self.state.store, &key.id).await {
                            Ok(true) => {}
                            Ok(false) => {
                                return Interrupt::AccessLost(ApiError::InvalidToken(
                                    "the API key is invalid, revoked or expired",
                                ));
                            }
                            Err(error) => return Interrupt::AccessLost(error),
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_at_most_its_places_and_gets_them_back() {
        let requests = Arc::new(HeldRequests::new(2));
        let first = requests.take("alice").expect("a place");
        let second = requests.take("alice").expect("a place");
        assert!(matches!(
            requests.take("alice"),
            Err(ApiError::HeldRequestsQuota(2))
        ));
        // Another user's places are its own.
        let bob = requests.take("bob").expect("a place");
        assert_eq!(requests.count(), 3);
        drop(first);
        let third = requests.take("alice").expect("a place given back");
        drop((second, third, bob));
        assert_eq!(requests.count(), 0);
        assert!(requests.per_user.lock().expect("unpoisoned").is_empty());
    }

    #[test]
    fn no_places_at_all_refuses_without_leaving_an_entry() {
        let requests = Arc::new(HeldRequests::new(0));
        assert!(requests.take("alice").is_err());
        assert!(requests.per_user.lock().expect("unpoisoned").is_empty());
    }
}
