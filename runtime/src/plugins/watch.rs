//! Hot reload: watches the plugins directory and keeps the registry in step with its `.wasm`
//! files.
//!
//! A `notify` watcher (inotify on Linux) sends the directory's events to one OS thread, the
//! reloader, which debounces them per path: a path is looked at once it has had no event for
//! the debounce period *and* its size and modification time are the same as at its last
//! event. Then a file that is there is loaded (compiled, instantiated once for `describe`,
//! checked, and swapped in under the name it declares); a file that is gone is unloaded.
//!
//! Half-written files: the safe way to publish a build is to write it under another name
//! (`x.wasm.tmp`, `.x.wasm`: both ignored) and rename it into place, which is atomic. A file
//! copied in place is waited for by the debounce; if the copy stalls longer than that, the
//! partial file fails to compile, is rejected with the previous version still serving, and
//! the copy's next write brings another attempt.
//!
//! The reloader is a plain thread; the loads it decides on run on [`CONCURRENT_LOADS`]
//! loader threads, because compiling and `describe` block for up to seconds: a file whose
//! `describe` runs to its deadline holds one loader, while the reloader goes on noticing
//! changes and the other loaders load other files. A path being loaded waits for that load to
//! end before it is looked at again, so one path's loads and unloads apply in order. Jobs
//! never wait for any of it, since lookups read the registry's snapshot.
//!
//! # A plugin file, from the disk to service
//!
//! What the reloader does with one file, and what it answers when a step fails.
//!
//! ```text
//! data/plugins/x.wasm  created | written | renamed in | removed      (x.wasm.tmp, .x.wasm: ignored)
//!  │
//!  ├─ notify (inotify) → channel → reloader thread (this file)
//!  ├─ debounce per path: --plugins-debounce of quiet, and size + mtime unchanged since the last event
//!  ├─ a load of this path still running? → looked at again after it ends
//!  ├─ gone? → PluginRegistry::unload_file: the name goes, or its built-in serves again
//!  ├─ handed to one of 4 loader threads (at start too), so a slow `describe` holds back no other file
//!  ├─ same bytes as loaded? → nothing
//!  ├─ Runtime::compile: compile cache <sha256>-<engine hash>.cwasm (checksum checked) or Cranelift
//!  │     link against caseload:plugin@0.2.x ───────────── refused, logged; the old version serves
//!  ├─ describe() in a fresh Store, 5 s, memory cap ──────── refused, logged; the old version serves
//!  ├─ name valid, input/output schemas compile ────────── refused, logged; the old version serves
//!  └─ PluginRegistry::load_file: files[path] = plugin; one new snapshot published (RwLock swap)
//!        new submissions and newly claimed jobs resolve the new version; running jobs keep theirs
//! ```

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{CONCURRENT_LOADS, FileLoaded, PluginRegistry, is_plugin_file_name};

/// How the plugins directory is watched.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    pub dir: PathBuf,
    /// How long a path must be quiet before it is loaded.
    pub debounce: Duration,
}

/// Why the directory cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The directory cannot be created.
    #[error("cannot create the plugins directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The operating system refused to watch it (e.g. out of inotify instances).
    #[error("cannot watch the plugins directory: {0}")]
    Notify(#[from] notify::Error),
    /// The reloader thread could not start.
    #[error("cannot start the plugin reloader thread: {0}")]
    Thread(std::io::Error),
}

/// Watches the directory while it lives; dropping it stops the watcher, then the reloader.
pub struct PluginWatcher {
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for PluginWatcher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PluginWatcher")
            .finish_non_exhaustive()
    }
}

/// Starts watching `config.dir` (created if missing), loads the files already there, and
/// starts the reloader. The watch starts before the directory is read, so a file that arrives
/// meanwhile is not missed (and one seen twice is loaded once: same bytes, no reload).
pub fn start(
    registry: Arc<PluginRegistry>,
    config: &WatchConfig,
) -> Result<PluginWatcher, WatchError> {
    // Absolute, as the paths in notify's events are: `./data/plugins` (the default) would
    // otherwise never match them.
    let dir = std::fs::create_dir_all(&config.dir)
        .and_then(|()| std::path::absolute(&config.dir))
        .map_err(|source| WatchError::CreateDir {
            path: config.dir.clone(),
            source,
        })?;
    let (sender, events) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        // The reloader has stopped only if the server is stopping.
        let _ = sender.send(event);
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    if let Err(error) = registry.load_dir(&dir) {
        tracing::error!(%error, "cannot read the plugins directory");
    }
    let loading = Arc::new(Mutex::new(HashSet::new()));
    let loads = start_loaders(&registry, &loading)?;
    let reloader = Reloader {
        registry,
        dir: dir.clone(),
        debounce: config.debounce,
        pending: HashMap::new(),
        loading,
        loads,
    };
    std::thread::Builder::new()
        .name("plugin-reloader".into())
        .spawn(move || reloader.run(&events))
        .map_err(WatchError::Thread)?;
    tracing::info!(dir = %dir.display(), debounce = ?config.debounce, "watching the plugins directory");
    Ok(PluginWatcher { _watcher: watcher })
}

/// Paths being loaded: the reloader adds one as it hands it to a loader, which removes it once
/// the load is over.
type Loading = Arc<Mutex<HashSet<PathBuf>>>;

/// Starts the loader threads; the paths sent to the returned sender are loaded, each by one of
/// them. They stop once the sender is dropped (the reloader stopped).
fn start_loaders(
    registry: &Arc<PluginRegistry>,
    loading: &Loading,
) -> Result<Sender<PathBuf>, WatchError> {
    let (loads, queue) = mpsc::channel::<PathBuf>();
    let queue = Arc::new(Mutex::new(queue));
    for _ in 0..CONCURRENT_LOADS {
        let registry = registry.clone();
        let loading = loading.clone();
        let queue = queue.clone();
        std::thread::Builder::new()
            .name("plugin-loader".into())
            .spawn(move || {
                loop {
                    // One loader waits for the next path; the others wait for the lock.
                    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    let Ok(path) = next else { return };
                    match registry.load_file(&path) {
                        Ok(FileLoaded::Installed(_)) | Ok(FileLoaded::Unchanged) => {}
                        Err(error) => registry.file_rejected(&path, &error),
                    }
                    loading
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&path);
                }
            })
            .map_err(WatchError::Thread)?;
    }
    Ok(loads)
}

/// What a path looked like at its last event: its size and modification time, or `None` if
/// it was not there.
type FileState = Option<(u64, SystemTime)>;

fn file_state(path: &Path) -> FileState {
    let metadata = std::fs::metadata(path).ok()?;
    metadata.is_file().then(|| {
        (
            metadata.len(),
            metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        )
    })
}

/// A path waiting for quiet.
struct Pending {
    due: Instant,
    seen: FileState,
}

struct Reloader {
    registry: Arc<PluginRegistry>,
    dir: PathBuf,
    debounce: Duration,
    pending: HashMap<PathBuf, Pending>,
    loading: Loading,
    /// Where paths to load are sent, to the loader threads.
    loads: Sender<PathBuf>,
}

impl Reloader {
    fn run(mut self, events: &Receiver<notify::Result<Event>>) {
        loop {
            let next_due = self.pending.values().map(|pending| pending.due).min();
            let received = match next_due {
                None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(due) => events.recv_timeout(due.saturating_duration_since(Instant::now())),
            };
            match received {
                Ok(Ok(event)) => self.note(&event),
                Ok(Err(error)) => {
                    // Events may have been lost: look at everything again.
                    tracing::warn!(%error, "plugin directory watch error; rescanning");
                    self.rescan();
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            self.settle_due();
        }
    }

    /// Restarts the quiet period of every plugin path the event names.
    fn note(&mut self, event: &Event) {
        if event.need_rescan() {
            self.rescan();
            return;
        }
        // Opening or reading a file changes nothing (and the reloader's own reads would
        // otherwise wake it); a writer closing it does.
        let relevant = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        if !relevant {
            return;
        }
        for path in &event.paths {
            if path.parent() == Some(self.dir.as_path()) && is_plugin_file_name(path) {
                self.touch(path.clone());
            }
        }
    }

    fn rescan(&mut self) {
        let mut paths = self.registry.file_paths();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            paths.extend(entries.filter_map(|entry| entry.ok().map(|entry| entry.path())));
        }
        for path in paths {
            if is_plugin_file_name(&path) {
                self.touch(path);
            }
        }
    }

    fn touch(&mut self, path: PathBuf) {
        let seen = file_state(&path);
        self.pending.insert(
            path,
            Pending {
                due: Instant::now() + self.debounce,
                seen,
            },
        );
    }

    /// Loads or unloads every path whose quiet period is over and that has not changed since
    /// its last event; a path that changed without an event waits another period.
    fn settle_due(&mut self) {
        let now = Instant::now();
        let due: Vec<PathBuf> = self
            .pending
            .iter()
            .filter(|(_, pending)| pending.due <= now)
            .map(|(path, _)| path.clone())
            .collect();
        for path in due {
            let Some(pending) = self.pending.remove(&path) else {
                continue;
            };
            if self.is_loading(&path) {
                // Looked at again once its load is over: one thing at a time per path.
                self.pending.insert(
                    path,
                    Pending {
                        due: now + self.debounce,
                        seen: pending.seen,
                    },
                );
                continue;
            }
            let state = file_state(&path);
            if state != pending.seen {
                self.pending.insert(
                    path,
                    Pending {
                        due: now + self.debounce,
                        seen: state,
                    },
                );
                continue;
            }
            if state.is_none() {
                self.registry.unload_file(&path);
                continue;
            }
            self.loading
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(path.clone());
            // Fails only if every loader died (a panic): then the reloader loads it itself.
            if let Err(mpsc::SendError(path)) = self.loads.send(path) {
                self.loading
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&path);
                match self.registry.load_file(&path) {
                    Ok(FileLoaded::Installed(_)) | Ok(FileLoaded::Unchanged) => {}
                    Err(error) => self.registry.file_rejected(&path, &error),
                }
            }
        }
    }

    fn is_loading(&self, path: &Path) -> bool {
        self.loading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(path)
    }
}
