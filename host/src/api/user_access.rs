//! Whether a token's user may still use it: the user exists, is not disabled, and has not had
//! its tokens revoked since this one was issued. Checked on every authenticated request from
//! a cache of a few seconds, so that `caseload user disable | delete | revoke | passwd` on any
//! replica holds on every replica within that time.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::ApiError;
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
            None => {
                let access = store.user_access(&user.id).await?;
                self.remember(&user.id, access);
                access
            }
        };
        match access {
            None => Err(ApiError::InvalidToken("the token's user no longer exists")),
            Some(access) if access.disabled => {
                Err(ApiError::InvalidToken("the token's user is disabled"))
            }
            Some(access) if (user.issued_ms as i64) < access.tokens_valid_after => Err(
                ApiError::InvalidToken("the token was revoked; log in again for a new one"),
            ),
            Some(access) => Ok(access),
        }
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
        }
        users.insert(user_id.to_owned(), (Instant::now(), access));
    }
}
