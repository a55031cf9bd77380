//! Every replica serves what the store lists. [`PluginSync`] reads the store's plugin tables
//! at start, whenever the store announces a change (PostgreSQL's `NOTIFY`), and every
//! [`POLL`] in any case (SQLite processes sharing one file; a notification lost with its
//! connection); loads the listed components this replica lacks (compile cache first) and
//! swaps in the new current versions. It also writes this replica's own plugin events
//! (directory loads, refusals) to the store.
//!
//! # A published component, from `POST /plugins` to every replica
//!
//! The publish (the API's registry routes) stores it; every replica's sync then serves it.
//!
//! ```text
//! POST /plugins (admin; raw .wasm or one multipart file part) ─────────── 403 not an admin
//!  ├─ read whole, at most --max-plugin-bytes ───────────────────────────── 413; nothing stored
//!  ├─ Checker (plugins/check.rs, the check `caseload plugin check` makes) on this server's
//!  │     engine: compile (cache), link, describe, schemas, examples through schema,
//!  │     validate, run, output schema ───────────────── 422 plugin-refused, check's message
//!  ├─ a built-in with this name and version and other bytes? ──────────────────────── 409
//!  ├─ bytes → an unfinished blob in 1 MiB chunks (dropped on any error or hang-up)
//!  ├─ PluginCatalog::publish_version, one transaction: the name and version published
//!  │     with other bytes? 409 (versions are immutable); with these bytes? 200, blob dropped;
//!  │     else the blob sealed (or dropped for the blob with the same sha256), the version
//!  │     row, the current row (unless ?current=false), the events; PostgreSQL: NOTIFY
//!  │     caseload_plugins (two replicas publishing one component at once: one row; the
//!  │     loser's retry finds it)
//!  └─ this replica: the checked plugin kept, PluginSync::sync; 201
//!
//! every replica: PluginSync (plugins/sync.rs), at start before listening, on NOTIFY, and every
//! 1 s when plugin_events has a newer seq
//!  ├─ plugin_catalog: versions, current rows, last event, in one read
//!  ├─ current, not compiled here → bytes from the store → compile (cache) and describe, 4 at
//!  │     a time; its digest, name and version must be the listed ones ─ refused here (logged,
//!  │     a `refused` event once), the others serve. Other versions compile when a launch first
//!  │     pins one or a job bound to one runs (PluginSync::component)
//!  └─ PluginRegistry::set_catalog: one new snapshot. Unpinned launches of a name get this
//!        replica's directory file, else the current row's version, else the built-in
//! ```

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;

use super::{CONCURRENT_LOADS, Plugin, PluginError, PluginRegistry};
use crate::store::{JobEvents, JobStore, StoreError, StoredVersion};

/// How often a replica looks at the store without being told.
pub const POLL: Duration = Duration::from_secs(1);

/// Every this many polls, the whole catalog is read whatever the newest event's number says.
const FULL_EVERY: u32 = 30;

/// A stored component, as a job bound to it finds it.
#[derive(Debug)]
pub enum Fetched {
    Loaded(Arc<Plugin>),
    /// The store has no component with this digest.
    NotStored,
    /// It is stored but does not load on this replica: why.
    Refused(String),
}

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
    /// Whether the last sync read the store (what readiness reports).
    read: AtomicBool,
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
            read: AtomicBool::new(true),
        }
    }

    /// Whether the last look at the store's catalog read it: a replica that cannot may
    /// serve versions the store no longer lists, or lack new ones.
    pub fn catalog_read(&self) -> bool {
        self.read.load(Ordering::Relaxed)
    }

    /// The registry it keeps in step.
    pub fn registry(&self) -> &Arc<PluginRegistry> {
        &self.registry
    }

    /// This replica's id, as its plugin events name it.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Reads what the store lists and serves it: the current versions this replica lacks
    /// compiled and loaded, [`CONCURRENT_LOADS`] at a time, then swapped in at once. Other
    /// versions compile when first pinned or needed by a job ([`PluginSync::component`]), so
    /// a replica holds in memory only what is used. A component that does not load is refused here, logged and
    /// recorded; the rest serve.
    pub async fn sync(&self) -> Result<(), StoreError> {
        let mut seen = self.running.lock().await;
        let catalog = self.store.plugin_catalog().await?;
        let missing: Vec<StoredVersion> = catalog
            .versions
            .iter()
            .filter(|version| version.retired_at.is_none())
            // The current versions: the others compile when a pin or a job first asks.
            .filter(|version| {
                catalog
                    .current
                    .iter()
                    .any(|(name, current)| *name == version.name && *current == version.version)
            })
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
                    self.refuse(&version.digest(), Some(&version), &error)
                }
                // One unreadable component keeps none of the others (or the new current
                // versions) from serving; the next sync tries it again.
                Err(Failed::Store(error)) => {
                    tracing::warn!(%error, digest = %version.digest(), "cannot read a stored plugin");
                }
                // Gone since the catalog was read: the next sync sees it gone.
                Err(Failed::Missing) => {}
            }
        }
        *seen = catalog.last_event;
        self.registry.set_catalog(catalog);
        Ok(())
    }

    /// [`PluginSync::sync`], unless nothing was recorded since the last one (a cheap read):
    /// what a launch pinned to a version this replica lacks asks for.
    pub async fn sync_if_changed(&self) -> Result<(), StoreError> {
        let newest = self.store.last_plugin_event().await?;
        if newest == *self.running.lock().await {
            return Ok(());
        }
        self.sync().await
    }

    /// The component with this digest, compiled: loaded already, or fetched from the store
    /// now (a retired version a job is bound to, or one published a moment ago).
    pub async fn component(&self, digest: &str) -> Result<Fetched, StoreError> {
        if let Some(plugin) = self.registry.by_digest(digest) {
            return Ok(Fetched::Loaded(plugin));
        }
        if self.lock_refused().contains(digest) {
            return Ok(Fetched::Refused(format!(
                "{digest} does not load on this replica (GET /plugin_events says why)"
            )));
        }
        // What the store lists it as, where the catalog read last knows it: checked against
        // what it describes itself as, and named in a refusal.
        let listed = self
            .registry
            .catalog()
            .versions
            .into_iter()
            .find(|version| version.digest() == digest);
        match self.fetch_and_load(digest, listed.as_ref()).await {
            Ok(plugin) => {
                self.registry.add_stored(plugin.clone());
                Ok(Fetched::Loaded(plugin))
            }
            Err(Failed::Missing) => Ok(Fetched::NotStored),
            Err(Failed::Refused(error)) => {
                self.refuse(digest, listed.as_ref(), &error);
                Ok(Fetched::Refused(error.to_string()))
            }
            Err(Failed::Store(error)) => Err(error),
        }
    }

    /// Remembers and says that a stored component does not load here.
    fn refuse(&self, digest: &str, listed: Option<&StoredVersion>, error: &PluginError) {
        self.lock_refused().insert(digest.to_owned());
        self.registry.stored_refused(digest, listed, error);
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
            let mut polls = 0u32;
            loop {
                let told = tokio::time::timeout(POLL, sync.changed.notified())
                    .await
                    .is_ok();
                sync.flush_events().await;
                polls = polls.wrapping_add(1);
                // Told: read it all. A PostgreSQL sequence number is taken at insert, not at
                // commit, so a change may commit under a number below one seen already; the
                // announcement of it, and a full read every FULL_EVERY polls, do not miss it.
                let synced = if told || polls.is_multiple_of(FULL_EVERY) {
                    sync.sync().await
                } else {
                    sync.sync_if_changed().await
                };
                if let Err(error) = &synced {
                    tracing::warn!(%error, "cannot read the plugins the store lists");
                }
                sync.read.store(synced.is_ok(), Ordering::Relaxed);
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
