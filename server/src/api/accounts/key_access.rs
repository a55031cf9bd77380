//! API keys presented as bearer tokens, checked against the store through a cache of a few
//! seconds, so that a key revoked on any replica stops on every replica within that time
//! (the bound the user access check has too). The key's last use is written when its entry
//! is read again, at most once a minute.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::api::error::ApiError;
use crate::api_key::{self, KeyGrant};
use crate::auth::AuthUser;
use crate::store::{ApiKeyRecord, JobStore, Role, now_millis};

/// How long a key is taken as read.
const FRESH_FOR: Duration = Duration::from_secs(2);

/// How stale a key's `last_used_at` may get.
const TOUCH_EVERY_MS: i64 = 60_000;

/// Keys remembered at most; the cache starts over beyond it.
const MAX_KEYS: usize = 10_000;

/// Keys by id, as last read from the store (`None`: no such key).
#[derive(Debug, Default)]
pub struct KeyCache {
    keys: Mutex<HashMap<String, (Instant, Option<ApiKeyRecord>)>>,
}

impl KeyCache {
    /// The user a key acts for, with its grant; a 401 that says why not otherwise. The
    /// user's own access (disabled, deleted) is checked after, as for a token.
    pub async fn check(&self, store: &Arc<dyn JobStore>, text: &str) -> Result<AuthUser, ApiError> {
        let invalid = || ApiError::InvalidToken("the API key is invalid, revoked or expired");
        let (id, secret) = api_key::parse(text).ok_or_else(invalid)?;
        let record = match self.fresh(id) {
            Some(record) => record,
            None => {
                let record = store.api_key(id).await?;
                self.remember(id, record.clone());
                if let Some(record) = &record {
                    touch(store, record);
                }
                record
            }
        };
        let record = record.ok_or_else(invalid)?;
        if !api_key::secret_matches(&record, secret) {
            return Err(invalid());
        }
        if record
            .expires_at
            .is_some_and(|expires_at| expires_at <= now_millis())
        {
            // The same answer as an unknown or revoked key: it tells nothing of the key.
            return Err(invalid());
        }
        Ok(AuthUser {
            id: record.owner_id.clone(),
            username: record.owner_name.clone(),
            issued_ms: u64::try_from(record.created_at).unwrap_or(0),
            admin: false,
            role: Role::Viewer,
            expires_ms: record
                .expires_at
                .map(|expires_at| u64::try_from(expires_at).unwrap_or(0)),
            key: Some(KeyGrant {
                scopes: api_key::scopes_of(&record),
                id: record.id,
                project: record.project_id,
            }),
        })
    }

    /// Whether the key is still accepted (not revoked, not expired), read as
    /// [`check`](Self::check) reads it: a request held open with it asks again now and then.
    pub async fn still_valid(&self, store: &Arc<dyn JobStore>, id: &str) -> Result<bool, ApiError> {
        let record = match self.fresh(id) {
            Some(record) => record,
            None => {
                let record = store.api_key(id).await?;
                self.remember(id, record.clone());
                record
            }
        };
        Ok(record.is_some_and(|record| {
            record
                .expires_at
                .is_none_or(|expires_at| expires_at > now_millis())
        }))
    }

    /// Forgets a key revoked here, so that this replica refuses it at once.
    pub fn forget(&self, id: &str) {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        keys.remove(id);
    }

    fn fresh(&self, id: &str) -> Option<Option<ApiKeyRecord>> {
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let (read_at, record) = keys.get(id)?;
        (read_at.elapsed() < FRESH_FOR).then(|| record.clone())
    }

    fn remember(&self, id: &str, record: Option<ApiKeyRecord>) {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        if keys.len() >= MAX_KEYS {
            keys.clear();
        }
        keys.insert(id.to_owned(), (Instant::now(), record));
    }
}

/// Records the key's use if its record is a minute old, without holding up the request.
fn touch(store: &Arc<dyn JobStore>, record: &ApiKeyRecord) {
    let now = now_millis();
    if record
        .last_used_at
        .is_some_and(|used| now - used < TOUCH_EVERY_MS)
    {
        return;
    }
    let store = store.clone();
    let id = record.id.clone();
    tokio::spawn(async move {
        if let Err(error) = store.touch_api_key(&id, now).await {
            tracing::warn!(%error, "cannot record an API key's use");
        }
    });
}
