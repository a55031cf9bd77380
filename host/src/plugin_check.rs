//! `caseload plugin check`: loads plugin files as the server would and says, for each, what it
//! would serve or why the server would refuse it, before it is dropped into a plugins directory.

use std::path::PathBuf;
use std::time::Duration;

use crate::plugins::{Plugin, PluginRegistry, PluginSource};
use crate::runtime::{Limits, Runtime, RuntimeConfig};

/// Checks each file: compiled, linked against the plugin world, `describe` answered within
/// 5 s under the default memory cap, name valid, schemas compiled; the steps a hot reload
/// takes. Prints one report per file and returns whether every file would load.
pub fn check_plugins(files: &[PathBuf]) -> anyhow::Result<bool> {
    let runtime = Runtime::with_config(&RuntimeConfig::default())?;
    let describe_limits = Limits {
        wall_time: Duration::from_secs(5),
        ..Limits::default()
    };
    let registry = PluginRegistry::new(runtime, describe_limits);
    registry.load_built_ins()?;
    let built_ins = registry.list();
    let mut all_load = true;
    for path in files {
        let loaded = std::fs::read(path)
            .map_err(|error| format!("cannot read it: {error}"))
            .and_then(|wasm| {
                registry
                    .load(&wasm, PluginSource::File(path.clone()))
                    .map_err(|error| format!("{error:#}"))
            });
        match loaded {
            Ok(plugin) => println!("{}: {}", path.display(), report(&plugin, &built_ins)),
            Err(why) => {
                all_load = false;
                println!("{}: refused: {why}", path.display());
            }
        }
    }
    Ok(all_load)
}

/// What a loadable plugin would serve, and where it meets a built-in use case.
fn report(plugin: &Plugin, built_ins: &[std::sync::Arc<Plugin>]) -> String {
    let info = &plugin.info;
    let mut lines = vec![format!("loads: {} {}", info.name, info.version)];
    if !info.aliases.is_empty() {
        lines.push(format!("  aliases: {}", info.aliases.join(", ")));
    }
    lines.push(format!(
        "  dataset media types: {}",
        info.media_types.join(", ")
    ));
    if !plugin.dataset_parameters.is_empty() {
        lines.push(format!(
            "  parameters beside a dataset: {}",
            plugin.dataset_parameters.join(", ")
        ));
    }
    for built_in in built_ins {
        if built_in.info.name == info.name {
            lines.push(format!(
                "  replaces the built-in {} while the file is in the plugins directory",
                info.name
            ));
            continue;
        }
        for alias in &info.aliases {
            let taken = alias.eq_ignore_ascii_case(&built_in.info.name)
                || built_in
                    .info
                    .aliases
                    .iter()
                    .any(|other| other.eq_ignore_ascii_case(alias));
            if taken {
                lines.push(format!(
                    "  alias {alias} already means the built-in {}, which keeps it",
                    built_in.info.name
                ));
            }
        }
    }
    lines.join("\n")
}
