//! The plugin registry: which use cases this server runs, by name and alias, with their
//! compiled components and JSON Schemas.
//!
//! Built-in plugins are embedded in the binary; `.wasm` files in the plugins directory are
//! loaded at start and override a built-in of the same name. Lookups take a snapshot, so a job
//! keeps the plugin it started with however the registry changes afterwards.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::runtime::{CallError, CompiledPlugin, Limits, LoadError, PluginInfo, Runtime};

/// The max-cut component, built from `plugins/maxcut` by `build.rs`.
pub const MAXCUT_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/caseload_maxcut.wasm"));

/// Where a plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    BuiltIn,
    File(PathBuf),
}

/// A loaded use case.
#[derive(Debug)]
pub struct Plugin {
    pub info: PluginInfo,
    /// `sha256:<hex>` of the component's bytes.
    pub digest: String,
    pub source: PluginSource,
    pub loaded_at: chrono::DateTime<chrono::Utc>,
    pub component: CompiledPlugin,
    pub input_schema: jsonschema::Validator,
    pub output_schema: jsonschema::Validator,
}

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(transparent)]
    Load(#[from] LoadError),
    /// `describe` trapped, timed out or failed.
    #[error("describe failed: {0}")]
    Describe(#[from] CallError),
    /// The name is not usable as a `problem_id`.
    #[error("invalid plugin name {0:?}: use lowercase letters, digits and '-'")]
    Name(String),
    /// One of the plugin's JSON Schemas does not parse or compile.
    #[error("invalid {which} schema: {message}")]
    Schema {
        which: &'static str,
        message: String,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a dataset cannot be a plugin's input.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The plugin does not read files of this media type.
    #[error("{name} reads {accepted} datasets, not {media_type}")]
    Unsupported {
        name: String,
        media_type: String,
        accepted: String,
    },
    /// A JSON dataset that is not UTF-8 text.
    #[error("the dataset is declared {0} but is not UTF-8 text")]
    NotText(String),
    /// `decode` failed or rejected the file.
    #[error(transparent)]
    Decode(CallError),
}

/// True for `application/json` and `…+json`: a JSON dataset is the input itself.
pub fn is_json(media_type: &str) -> bool {
    media_type == "application/json" || media_type.ends_with("+json")
}

impl Plugin {
    /// The JSON input a dataset file stands for: JSON as it is, another media type the plugin
    /// declares through its `decode`, under `limits`. The same at submission and at run time.
    pub fn dataset_input(
        &self,
        media_type: &str,
        bytes: Vec<u8>,
        limits: &Limits,
    ) -> Result<String, DatasetError> {
        if is_json(media_type) {
            return String::from_utf8(bytes).map_err(|_| DatasetError::NotText(media_type.into()));
        }
        if !self
            .info
            .media_types
            .iter()
            .any(|accepted| accepted == media_type)
        {
            return Err(DatasetError::Unsupported {
                name: self.info.name.clone(),
                media_type: media_type.to_owned(),
                accepted: self.info.media_types.join(", "),
            });
        }
        self.component
            .decode(media_type, &bytes, limits)
            .map_err(DatasetError::Decode)
    }
}

/// The plugins in service now; replaced whole on every change.
#[derive(Debug, Default)]
struct Snapshot {
    by_name: HashMap<String, Arc<Plugin>>,
    /// Alias (lowercased) to name.
    aliases: HashMap<String, String>,
}

#[derive(Debug)]
pub struct PluginRegistry {
    runtime: Runtime,
    limits: Limits,
    snapshot: RwLock<Arc<Snapshot>>,
}

impl PluginRegistry {
    /// A registry with no plugins; `limits` bound the `describe` call made on load.
    pub fn new(runtime: Runtime, limits: Limits) -> PluginRegistry {
        PluginRegistry {
            runtime,
            limits,
            snapshot: RwLock::default(),
        }
    }

    /// Loads the built-in plugins, then every `.wasm` file in `plugins_dir` (if it exists).
    /// A file that fails to load is logged and skipped: one broken plugin must not keep the
    /// others from serving.
    pub fn load_all(&self, plugins_dir: &Path) -> Result<(), PluginError> {
        self.install(self.load(MAXCUT_WASM, PluginSource::BuiltIn)?);
        let entries = match std::fs::read_dir(plugins_dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(PluginError::Io {
                    path: plugins_dir.to_owned(),
                    source,
                });
            }
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| {
                path.extension()
                    .is_some_and(|extension| extension == "wasm")
            })
            .collect();
        paths.sort();
        for path in paths {
            match self.load_file(&path) {
                Ok(plugin) => self.install(plugin),
                Err(error) => {
                    tracing::error!(path = %path.display(), %error, "plugin rejected");
                }
            }
        }
        Ok(())
    }

    fn load_file(&self, path: &Path) -> Result<Plugin, PluginError> {
        let bytes = std::fs::read(path).map_err(|source| PluginError::Io {
            path: path.to_owned(),
            source,
        })?;
        self.load(&bytes, PluginSource::File(path.to_owned()))
    }

    /// Compiles a component, asks it to describe itself and compiles its schemas.
    pub fn load(&self, wasm: &[u8], source: PluginSource) -> Result<Plugin, PluginError> {
        let component = self.runtime.compile(wasm)?;
        let info = component.describe(&self.limits)?;
        let valid_name = !info.name.is_empty()
            && info
                .name
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
        if !valid_name {
            return Err(PluginError::Name(info.name));
        }
        let input_schema = compile_schema("input", &info.input_schema)?;
        let output_schema = compile_schema("output", &info.output_schema)?;
        Ok(Plugin {
            digest: format!("sha256:{}", hex::encode(Sha256::digest(wasm))),
            info,
            source,
            loaded_at: chrono::Utc::now(),
            component,
            input_schema,
            output_schema,
        })
    }

    /// Puts a plugin in service under its name and aliases, replacing any of the same name.
    pub fn install(&self, plugin: Plugin) {
        let plugin = Arc::new(plugin);
        let mut guard = self
            .snapshot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut by_name = guard.by_name.clone();
        by_name.insert(plugin.info.name.clone(), plugin.clone());
        let mut aliases = HashMap::new();
        for (name, plugin) in &by_name {
            for alias in &plugin.info.aliases {
                aliases.insert(alias.to_lowercase(), name.clone());
            }
        }
        tracing::info!(
            name = %plugin.info.name,
            version = %plugin.info.version,
            digest = %plugin.digest,
            source = ?plugin.source,
            "plugin loaded"
        );
        *guard = Arc::new(Snapshot { by_name, aliases });
    }

    /// The plugin a `problem_id` names: its name, or one of its aliases (case-insensitive).
    pub fn resolve(&self, problem_id: &str) -> Option<Arc<Plugin>> {
        let snapshot = self.current();
        let key = problem_id.to_lowercase();
        let name = snapshot.aliases.get(&key).unwrap_or(&key);
        snapshot.by_name.get(name).cloned()
    }

    /// Every plugin in service, by name.
    pub fn list(&self) -> Vec<Arc<Plugin>> {
        let mut plugins: Vec<_> = self.current().by_name.values().cloned().collect();
        plugins.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        plugins
    }

    fn current(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

fn compile_schema(which: &'static str, text: &str) -> Result<jsonschema::Validator, PluginError> {
    let schema: Value = serde_json::from_str(text).map_err(|error| PluginError::Schema {
        which,
        message: error.to_string(),
    })?;
    jsonschema::validator_for(&schema).map_err(|error| PluginError::Schema {
        which,
        message: error.to_string(),
    })
}
