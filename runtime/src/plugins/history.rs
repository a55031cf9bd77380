//! What this replica did with its plugins by itself (loads, replacements, removals, refused
//! files and components), kept until [`super::sync`] writes it to the store, where
//! `GET /plugin_events` reads every replica's and the registry's changes together. The
//! server log says the same at the time.

use std::path::Path;
use std::sync::Mutex;

use crate::store::{PluginEvent, now_millis};

/// Events kept while the store cannot take them; older ones are dropped.
const KEPT: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginEventKind {
    /// A use case came into service.
    Loaded,
    /// A file brought a new version of a use case in service.
    Replaced,
    /// A file went, and its use case with it.
    Removed,
    /// A file or a stored component could not be loaded; whatever served before serves on.
    Refused,
}

impl PluginEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PluginEventKind::Loaded => "loaded",
            PluginEventKind::Replaced => "replaced",
            PluginEventKind::Removed => "removed",
            PluginEventKind::Refused => "refused",
        }
    }
}

/// What an event says of the plugin it is about.
#[derive(Debug, Default)]
pub struct Subject<'a> {
    pub name: Option<&'a str>,
    pub version: Option<&'a str>,
    pub digest: Option<&'a str>,
    pub file: Option<&'a Path>,
    pub reason: Option<String>,
}

/// The events not yet in the store.
#[derive(Debug, Default)]
pub struct PluginHistory {
    events: Mutex<Vec<PluginEvent>>,
}

impl PluginHistory {
    pub fn record(&self, kind: PluginEventKind, subject: Subject<'_>) {
        let event = PluginEvent {
            at: now_millis(),
            kind: kind.as_str().to_owned(),
            name: subject.name.map(str::to_owned),
            version: subject.version.map(str::to_owned),
            digest: subject.digest.map(str::to_owned),
            file: subject.file.map(file_name),
            reason: subject.reason.map(|reason| match subject.file {
                Some(path) => hide_directory(&reason, path),
                None => reason,
            }),
            ..PluginEvent::default()
        };
        let mut events = self.lock();
        if events.len() == KEPT {
            events.remove(0);
        }
        events.push(event);
    }

    /// The events recorded since the last call, oldest first.
    pub fn take(&self) -> Vec<PluginEvent> {
        std::mem::take(&mut *self.lock())
    }

    /// Puts back events the store could not take, before any recorded since.
    pub fn put_back(&self, mut events: Vec<PluginEvent>) {
        let mut kept = self.lock();
        events.append(&mut kept);
        let excess = events.len().saturating_sub(KEPT);
        events.drain(..excess);
        *kept = events;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PluginEvent>> {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// The server's directories are nobody's business: a reason names the file only.
fn hide_directory(reason: &str, path: &Path) -> String {
    match path.parent().map(Path::display) {
        Some(directory) => reason.replace(&format!("{directory}/"), ""),
        None => reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_and_names_files_without_their_directory() {
        let history = PluginHistory::default();
        for _ in 0..KEPT + 5 {
            history.record(
                PluginEventKind::Refused,
                Subject {
                    file: Some(Path::new("/srv/plugins/bad.wasm")),
                    reason: Some("cannot read /srv/plugins/bad.wasm: denied".into()),
                    ..Subject::default()
                },
            );
        }
        let events = history.take();
        assert_eq!(events.len(), KEPT);
        assert_eq!(events[0].kind, "refused");
        assert_eq!(events[0].file.as_deref(), Some("bad.wasm"));
        assert_eq!(
            events[0].reason.as_deref(),
            Some("cannot read bad.wasm: denied")
        );
        assert!(history.take().is_empty());
        history.put_back(events);
        assert_eq!(history.take().len(), KEPT);
    }
}
