//! What happened to the plugins lately: loads, replacements, removals and refused files, for
//! people watching the service (`GET /plugin_events`, the console). The server log says the
//! same at the time; this keeps the last few for whoever looks later.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Mutex;

/// Events kept; older ones are dropped.
const KEPT: usize = 200;

/// One change to the plugins in service, or a file that could not join them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PluginEvent {
    /// Counts up from 1 for the life of the process.
    pub seq: u64,
    /// When, in milliseconds since the epoch.
    #[serde(skip)]
    pub at_millis: i64,
    pub kind: PluginEventKind,
    /// The use case's name, where one was read.
    pub name: Option<String>,
    pub version: Option<String>,
    pub digest: Option<String>,
    /// The file's name (not its directory), for plugins from files.
    pub file: Option<String>,
    /// Why a file was refused.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginEventKind {
    /// A use case came into service.
    Loaded,
    /// A file brought a new version of a use case in service.
    Replaced,
    /// A file went, and its use case with it.
    Removed,
    /// A file could not be loaded; whatever served before serves on.
    Refused,
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

#[derive(Debug, Default)]
pub struct PluginHistory {
    events: Mutex<(u64, VecDeque<PluginEvent>)>,
}

impl PluginHistory {
    pub fn record(&self, kind: PluginEventKind, subject: Subject<'_>) {
        let mut events = self
            .events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        events.0 += 1;
        let event = PluginEvent {
            seq: events.0,
            at_millis: chrono::Utc::now().timestamp_millis(),
            kind,
            name: subject.name.map(str::to_owned),
            version: subject.version.map(str::to_owned),
            digest: subject.digest.map(str::to_owned),
            file: subject.file.map(file_name),
            reason: subject.reason.map(|reason| match subject.file {
                Some(path) => hide_directory(&reason, path),
                None => reason,
            }),
        };
        if events.1.len() == KEPT {
            events.1.pop_front();
        }
        events.1.push_back(event);
    }

    /// The events after `after`, oldest first.
    pub fn since(&self, after: u64) -> Vec<PluginEvent> {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .1
            .iter()
            .filter(|event| event.seq > after)
            .cloned()
            .collect()
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
        let events = history.since(0);
        assert_eq!(events.len(), KEPT);
        assert_eq!(events[0].seq, 6);
        assert_eq!(events[0].file.as_deref(), Some("bad.wasm"));
        assert_eq!(
            events[0].reason.as_deref(),
            Some("cannot read bad.wasm: denied")
        );
        assert_eq!(history.since(KEPT as u64 + 4).len(), 1);
    }
}
