//! Every replica serves what the store lists. [`PluginSync`] reads the store's plugin tables
//! at start, whenever the store announces a change (PostgreSQL's `NOTIFY`), and every
//! [`POLL`] in any case (SQLite processes sharing one file; a notification lost with its
//! connection); loads the listed components this replica lacks (compile cache first) and
//! swaps in the new current versions. It also writes this replica's own plugin events
//! (directory loads, refusals) to the store.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;

use super::{CONCURRENT_LOADS, Plugin, PluginError, PluginRegistry};
use crate::store::{JobEvents, JobStore, StoreError, StoredVersion};

/// How often a replica looks at the store without being told.
pub const POLL: Duration = Duration::from_secs(1);

/// Keeps one replica's registry in step with the store.
pub struct PluginSync {
    registry: Arc<PluginRegistry>,
    store: Arc<dyn JobStore>,
    replica: String,
    /// Woken by the store's announcement.
    changed: tokio::sync::Notify,
    /// One sync at a time: a launch that asks for a version this replica has not loaded
    /// yet syncs too.
    running: tokio::sync::Mutex<i64>,
    /// Components this replica refused, by digest: refused once, not at every sync.
    refused: Mutex<HashSet<String>>,
}

impl PluginSync {
    pub fn new(registry: Arc<PluginRegistry>, store: Arc<dyn JobStore>, replica: String) -> Self {
        PluginSync {
            registry,
            store,
            replica,
            changed: tokio::sync::Notify::new(),
            running: tokio::sync::Mutex::new(-1),
            refused: Mutex::default(),
        }
    }

    /// The registry it keeps in step.
    pub fn registry(&self) -> &Arc<PluginRegistry> {
        &self.registry
    }

    /// This replica's id, as its plugin events name it.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Reads what the store lists and serves it: the components this replica lacks
    /// compiled and loaded, [`CONCURRENT_LOADS`] at a time, then the current versions
    /// swapped in at once. A component that does not load is refused here, logged and
    /// recorded; the rest serve.
    pub async fn sync(&self) -> Result<(), StoreError> {
        let mut seen = self.running.lock().await;
        let catalog = self.store.plugin_catalog().await?;
        let missing: Vec<StoredVersion> = catalog
            .versions
            .iter()
            .filter(|version| version.retired_at.is_none())
            .filter(|version| !self.registry.has_stored(&version.digest()))
            .filter(|version| !self.lock_refused().contains(&version.digest()))
            .cloned()
            .collect();
        let loads = futures_util::stream::iter(missing)
            .map(|version| async move {
                let loaded = self.fetch_and_load(&version.digest(), Some(&version)).await;
                (version, loaded)
            })
            .buffer_unordered(CONCURRENT_LOADS);
        let loaded: Vec<_> = loads.collect().await;
        for (version, result) in loaded {
            match result {
                Ok(plugin) => self.registry.add_stored(plugin),
                Err(Failed::Refused(error)) => {
                    self.lock_refused().insert(version.digest());
                    self.registry
                        .stored_refused(&version.digest(), Some(&version), &error);
                }
                Err(Failed::Store(error)) => return Err(error),
                // Gone since the catalog was read: the next sync sees it gone.
                Err(Failed::Missing) => {}
            }
        }
        *seen = catalog.last_event;
        self.registry.set_catalog(catalog);
        Ok(())
    }

    /// The component with this digest, compiled: loaded already, or fetched from the store
    /// now (a retired version a job is bound to, or one published a moment ago). `None` if
    /// the store has no such component.
    pub async fn component(&self, digest: &str) -> Result<Option<Arc<Plugin>>, StoreError> {
        if let Some(plugin) = self.registry.by_digest(digest) {
            return Ok(Some(plugin));
        }
        match self.fetch_and_load(digest, None).await {
            Ok(plugin) => {
                self.registry.add_stored(plugin.clone());
                Ok(Some(plugin))
            }
            Err(Failed::Missing) => Ok(None),
            Err(Failed::Refused(error)) => {
                self.registry.stored_refused(digest, None, &error);
                Ok(None)
            }
            Err(Failed::Store(error)) => Err(error),
        }
    }

    async fn fetch_and_load(
        &self,
        digest: &str,
        listed: Option<&StoredVersion>,
    ) -> Result<Arc<Plugin>, Failed> {
        let sha256 = digest.strip_prefix("sha256:").unwrap_or(digest);
        let Some(bytes) = self.store.component(sha256).await.map_err(Failed::Store)? else {
            return Err(Failed::Missing);
        };
        let registry = self.registry.clone();
        let digest = digest.to_owned();
        let listed = listed.cloned();
        tokio::task::spawn_blocking(move || registry.load_stored(&bytes, &digest, listed.as_ref()))
            .await
            .map_err(|error| {
                Failed::Refused(PluginError::Mismatch(format!("its load panicked: {error}")))
            })?
            .map(Arc::new)
            .map_err(Failed::Refused)
    }

    /// Writes this replica's own events to the store; kept for the next try if it fails.
    pub async fn flush_events(&self) {
        let events = self.registry.take_events();
        for (index, event) in events.iter().enumerate() {
            let event = crate::store::PluginEvent {
                replica: Some(self.replica.clone()),
                ..event.clone()
            };
            if let Err(error) = self.store.record_plugin_event(&event).await {
                tracing::warn!(%error, "cannot record plugin events; trying again shortly");
                self.registry.put_back_events(events[index..].to_vec());
                return;
            }
        }
    }

    /// Follows the store until the process ends: on every announcement, and every [`POLL`].
    pub fn start(self: &Arc<Self>) {
        let sync = self.clone();
        tokio::spawn(async move {
            loop {
                let _ = tokio::time::timeout(POLL, sync.changed.notified()).await;
                sync.flush_events().await;
                let newest = match sync.store.last_plugin_event().await {
                    Ok(newest) => newest,
                    Err(error) => {
                        tracing::warn!(%error, "cannot read the store's plugin events");
                        continue;
                    }
                };
                if newest == *sync.running.lock().await {
                    continue;
                }
                if let Err(error) = sync.sync().await {
                    tracing::warn!(%error, "cannot read the plugins the store lists");
                }
            }
        });
    }

    fn lock_refused(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl std::fmt::Debug for PluginSync {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PluginSync")
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl JobEvents for PluginSync {
    fn plugins_changed(&self) {
        self.changed.notify_one();
    }
}

enum Failed {
    /// The component does not load here.
    Refused(PluginError),
    /// The store has no component with this digest.
    Missing,
    Store(StoreError),
}
