//! What serves: every plugin loaded (built in, from the store, from this replica's plugins
//! directory) and the snapshot made of them, by name, alias and pinnable version.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Plugin, PluginSource};
use crate::store::Catalog;

/// The plugins in service now; replaced whole on every change.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    /// What an unpinned launch of each name gets.
    pub(super) by_name: HashMap<String, Arc<Plugin>>,
    /// Alias (lowercased) to name.
    pub(super) aliases: HashMap<String, String>,
    /// Every version a launch may pin, by name: the store's versions not retired, then the
    /// built-in, then this replica's file.
    pub(super) pinnable: HashMap<String, Vec<Arc<Plugin>>>,
}

impl Snapshot {
    /// The name a name or alias (any case) stands for, if any use case has it.
    pub(super) fn name_of(&self, id: &str) -> Option<String> {
        let key = id.to_lowercase();
        if self.by_name.contains_key(&key) || self.pinnable.contains_key(&key) {
            return Some(key);
        }
        self.aliases.get(&key).cloned()
    }
}

/// Alias (lowercased) to the name of the plugin it leads to, from each served plugin's name,
/// aliases and whether it is built in. A name always means its own plugin: an alias equal to
/// another plugin's name is ignored, so a file that names `maxcut` as an alias cannot take
/// max-cut's jobs. An alias two plugins claim goes to a built-in first, then to the first by
/// name: a dropped-in file cannot take `max-cut` by declaring it as an alias either (a file
/// *named* `max-cut` can, since names come first), and the choice is the same after every
/// reload.
fn alias_map<'a>(
    plugins: impl Iterator<Item = (&'a str, &'a [String], bool)>,
) -> HashMap<String, String> {
    let mut plugins: Vec<_> = plugins.collect();
    plugins.sort_by_key(|&(name, _, built_in)| (!built_in, name));
    let names: HashSet<&str> = plugins.iter().map(|(name, _, _)| *name).collect();
    let mut aliases = HashMap::new();
    for (name, claimed, _) in plugins {
        for alias in claimed {
            let alias = alias.to_lowercase();
            if alias != name && names.contains(alias.as_str()) {
                tracing::warn!(
                    plugin = name,
                    alias = %alias,
                    "alias ignored: it is another use case's name"
                );
                continue;
            }
            aliases.entry(alias).or_insert_with(|| name.to_string());
        }
    }
    aliases
}

/// Every plugin loaded, in service or not: the snapshot is computed from these.
#[derive(Debug, Default)]
pub(super) struct Sources {
    pub(super) built_in: BTreeMap<String, Arc<Plugin>>,
    /// By path, so that a removed file knows which plugin it was. Sorted, so that of two
    /// files declaring one name, the first by path serves: the same one after every restart.
    pub(super) files: BTreeMap<PathBuf, Arc<Plugin>>,
    /// Components from the store, by digest; retired ones too once a job needed them.
    pub(super) stored: HashMap<String, Arc<Plugin>>,
    /// What the store lists.
    pub(super) catalog: Catalog,
}

impl Sources {
    /// What serves: for each name, this replica's file of that name (the first by path),
    /// else the version the store names current, else the built-in.
    pub(super) fn snapshot(&self) -> Snapshot {
        let mut by_name: HashMap<String, Arc<Plugin>> = self.built_in.clone().into_iter().collect();
        let mut pinnable: HashMap<String, Vec<Arc<Plugin>>> = HashMap::new();
        for version in &self.catalog.versions {
            if version.retired_at.is_some() {
                continue;
            }
            if let Some(plugin) = self.stored.get(&version.digest()) {
                pinnable
                    .entry(plugin.info.name.clone())
                    .or_default()
                    .push(plugin.clone());
            }
        }
        for (name, version) in &self.catalog.current {
            let current = pinnable
                .get(name)
                .and_then(|plugins| {
                    plugins
                        .iter()
                        .find(|plugin| plugin.info.version == *version)
                })
                .or_else(|| {
                    self.built_in
                        .get(name)
                        .filter(|plugin| plugin.info.version == *version)
                });
            if let Some(current) = current {
                by_name.insert(name.clone(), current.clone());
            }
        }
        for plugin in self.built_in.values() {
            pinnable
                .entry(plugin.info.name.clone())
                .or_default()
                .push(plugin.clone());
        }
        let mut from_files = HashSet::new();
        for plugin in self.files.values() {
            if from_files.insert(plugin.info.name.clone()) {
                by_name.insert(plugin.info.name.clone(), plugin.clone());
                // Last: a version pin means the published bytes, or the built-in, wherever
                // a file of this replica declares the same version.
                pinnable
                    .entry(plugin.info.name.clone())
                    .or_default()
                    .push(plugin.clone());
            }
        }
        let aliases = alias_map(by_name.iter().map(|(name, plugin)| {
            let built_in = matches!(plugin.source, PluginSource::BuiltIn);
            (name.as_str(), plugin.info.aliases.as_slice(), built_in)
        }));
        Snapshot {
            by_name,
            aliases,
            pinnable,
        }
    }

    /// The file serving `name`, if a file does.
    pub(super) fn file_serving(&self, name: &str) -> Option<&Path> {
        self.files
            .iter()
            .find(|(_, plugin)| plugin.info.name == name)
            .map(|(path, _)| path.as_path())
    }

    /// Any loaded plugin with this digest.
    pub(super) fn by_digest(&self, digest: &str) -> Option<&Arc<Plugin>> {
        self.stored
            .get(digest)
            .or_else(|| {
                self.built_in
                    .values()
                    .find(|plugin| plugin.digest == digest)
            })
            .or_else(|| self.files.values().find(|plugin| plugin.digest == digest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|value| value.to_string()).collect()
    }

    #[test]
    fn a_file_cannot_take_a_built_in_use_case_s_name_or_aliases() {
        let maxcut = strings(&["max-cut", "URN:caseload:usecase:maxcut"]);
        let intruder = strings(&["maxcut", "Max-Cut", "a-intruder", "urn:intruder"]);
        let plugins = [
            ("maxcut", maxcut.as_slice(), true),
            ("a-intruder", intruder.as_slice(), false),
        ];
        let aliases = alias_map(plugins.into_iter());
        assert_eq!(aliases.get("maxcut"), None, "a name is never an alias");
        assert_eq!(aliases["max-cut"], "maxcut", "the built-in keeps its alias");
        assert_eq!(aliases["urn:caseload:usecase:maxcut"], "maxcut");
        assert_eq!(
            aliases["a-intruder"], "a-intruder",
            "an alias equal to its own name"
        );
        assert_eq!(aliases["urn:intruder"], "a-intruder");
        assert_eq!(aliases, alias_map(plugins.into_iter().rev()));
    }

    #[test]
    fn an_alias_two_files_claim_goes_to_the_first_by_name() {
        let claimed = strings(&["shared"]);
        let plugins = [
            ("zeta", claimed.as_slice(), false),
            ("alpha", claimed.as_slice(), false),
        ];
        assert_eq!(alias_map(plugins.into_iter())["shared"], "alpha");
        assert_eq!(alias_map(plugins.into_iter().rev())["shared"], "alpha");
    }
}
