//! Whether a token's user may still use it: the user exists, is not disabled, and has not had
//! its tokens revoked since this one was issued. Checked on every authenticated request from
//! a cache of a few seconds, so that `caseload user disable | delete | revoke | passwd` on any
//! replica holds on every replica within that time. When a user's entry goes stale, one
//! request reads it again and the user's other requests (thousands of held streams, say)
//! wait for that read rather than each making its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::api::error::ApiError;
use crate::auth::AuthUser;
use crate::store::{JobStore, UserAccess};

/// How long a user's access is taken as read.
const FRESH_FOR: Duration = Duration::from_secs(2);

/// Users remembered at most; the cache starts over beyond it.
const MAX_USERS: usize = 10_000;

/// Users' access, by user id, as last read from the store.
#[derive(Debug, Default)]
pub struct AccessCache {
    users: Mutex<HashMap<String, (Instant, Option<UserAccess>)>>,
    /// Each user's turn to read its entry again (one small lock per user remembered).
    refreshing: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl AccessCache {
    /// The user's access if its token may be used; a 401 that says why otherwise.
    pub async fn check(
        &self,
        store: &dyn JobStore,
        user: &AuthUser,
    ) -> Result<UserAccess, ApiError> {
        let access = match self.fresh(&user.id) {
            Some(access) => access,
            None => self.refresh(store, &user.id).await?,
        };
        match access {
            None => Err(ApiError::InvalidToken("the token's user no longer exists")),
            Some(access) if access.disabled => {
                Err(ApiError::InvalidToken("the token's user is disabled"))
            }
            // A key is revoked on its own (DELETE /api_keys/<id>), not with the user's tokens.
            Some(access)
                if user.key.is_none() && (user.issued_ms as i64) < access.tokens_valid_after =>
            {
                Err(ApiError::InvalidToken(
                    "the token was revoked; log in again for a new one",
                ))
            }
            Some(access) => Ok(access),
        }
    }

    /// Reads the user's access again, once for all who ask at the same time.
    async fn refresh(
        &self,
        store: &dyn JobStore,
        user_id: &str,
    ) -> Result<Option<UserAccess>, ApiError> {
        let turn = {
            let mut refreshing = self
                .refreshing
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            refreshing.entry(user_id.to_owned()).or_default().clone()
        };
        let _turn = turn.lock().await;
        // Whoever read before this request's turn came has left a fresh entry.
        if let Some(access) = self.fresh(user_id) {
            return Ok(access);
        }
        let access = store.user_access(user_id).await?;
        self.remember(user_id, access);
        Ok(access)
    }

    /// Forgets what was read of a user changed here (a login, an administrator's change), so
    /// that this replica sees the change at once; others within [`FRESH_FOR`].
    pub fn forget(&self, user_id: &str) {
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        users.remove(user_id);
    }

    fn fresh(&self, user_id: &str) -> Option<Option<UserAccess>> {
        let users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        let (read_at, access) = users.get(user_id)?;
        (read_at.elapsed() < FRESH_FOR).then_some(*access)
    }

    fn remember(&self, user_id: &str, access: Option<UserAccess>) {
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        if users.len() >= MAX_USERS {
            users.clear();
            let mut refreshing = self
                .refreshing
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            refreshing.retain(|_, turn| Arc::strong_count(turn) > 1);
        }
        users.insert(user_id.to_owned(), (Instant::now(), access));
    }
}
