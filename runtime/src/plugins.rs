//! The plugin registry: which use cases this server runs, by name and alias, each in every
//! version it keeps, with their compiled components and JSON Schemas.
//!
//! Three sources feed it. Built-in plugins are embedded in the binary. Components published
//! to the store are listed by it, every replica the same ([`sync`]), with one current
//! version per use case. `.wasm` files in this replica's plugins directory are loaded at
//! start, reloaded when they change ([`watch`]) and serve unpinned launches of their name
//! on this replica: the development path. Lookups take a snapshot, so a job keeps the
//! plugin it started with however the registry changes afterwards.

pub mod check;
mod dataset;
pub mod history;
pub mod objective;
mod schema;
mod snapshot;
pub mod sync;
mod version;
pub mod view;
pub mod warm_start;
pub mod watch;

pub use self::dataset::{DatasetError, is_json};
use self::history::{PluginEventKind, PluginHistory, Subject};
pub use self::schema::{DATASET_PARAMETERS_KEYWORD, MEDIA_TYPES_KEYWORD};
use self::schema::{
    compile_schema, dataset_parameters, examples, media_type_extensions, parse_schema,
};
use self::snapshot::{Snapshot, Sources};
pub use self::sync::PluginSync;
pub use self::version::{Unresolved, VersionEntry, VersionRequest};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use std::sync::LazyLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::runtime::{CallError, CompiledPlugin, Limits, LoadError, PluginInfo, Runtime};
use crate::store::{Catalog, StoredVersion};

/// The built-in components are embedded zstd-compressed (to a third: the container image
/// has a budget) and decompressed once, on first use.
macro_rules! built_in {
    ($artifact:literal) => {
        LazyLock::new(|| {
            zstd::decode_all(
                &include_bytes!(concat!(env!("OUT_DIR"), "/", $artifact, ".wasm.zst"))[..],
            )
            .expect("build.rs compressed it")
        })
    };
}

/// The max-cut component, built from `plugins/maxcut` by `build.rs`.
pub static MAXCUT_WASM: LazyLock<Vec<u8>> = built_in!("caseload_maxcut");
/// The QUBO / Ising component, built from `plugins/qubo` by `build.rs`.
pub static QUBO_WASM: LazyLock<Vec<u8>> = built_in!("caseload_qubo");
/// The vehicle routing component (CVRP, VRPTW), built from `plugins/vrp` by `build.rs`.
pub static VRP_WASM: LazyLock<Vec<u8>> = built_in!("caseload_vrp");
/// The linear and integer programming component (HiGHS, 5.2 MB; 1.2 compressed), built from
/// `plugins/lp` by `build.rs` where clang for `wasm32-wasi` is installed.
#[cfg(caseload_lp)]
static LP_WASM: LazyLock<Vec<u8>> = built_in!("caseload_lp");

/// Whether this binary has the lp component.
pub const LP_BUILT_IN: bool = cfg!(caseload_lp);

/// The lp component; None in a binary built without clang for `wasm32-wasi`.
pub fn lp_wasm() -> Option<&'static [u8]> {
    #[cfg(caseload_lp)]
    return Some(LP_WASM.as_slice());
    #[cfg(not(caseload_lp))]
    return None;
}

/// How many plugin files load at once, at start and on reload, so that a file whose
/// `describe` runs to its deadline holds back one loader, not the files beside it. Each load
/// holds one instance of the pool while `describe` runs: `concurrent_instances` counts them.
pub const CONCURRENT_LOADS: usize = 4;

/// Where a plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    BuiltIn,
    /// A file in this replica's plugins directory.
    File(PathBuf),
    /// Published to the store: every replica serves it.
    Store,
}

impl PluginSource {
    /// What the API calls it: `built-in`, `directory` or `store`.
    pub fn kind(&self) -> &'static str {
        match self {
            PluginSource::BuiltIn => "built-in",
            PluginSource::File(_) => "directory",
            PluginSource::Store => "store",
        }
    }

    /// The file's name (not its directory), for a plugin from the plugins directory.
    pub fn file_name(&self) -> Option<String> {
        match self {
            PluginSource::File(path) => Some(
                path.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            ),
            _ => None,
        }
    }
}

impl std::fmt::Display for PluginSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginSource::File(path) => write!(formatter, "file:{}", path.display()),
            other => formatter.write_str(other.kind()),
        }
    }
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
    /// The input fields a launch may give beside a `data_file_identifier`, from the input
    /// schema's [`DATASET_PARAMETERS_KEYWORD`].
    pub dataset_parameters: Vec<String>,
    /// File extensions (lowercase, no dot) and the media types they stand for, from the input
    /// schema's [`MEDIA_TYPES_KEYWORD`].
    pub extensions: Vec<(String, String)>,
    /// Example inputs, from the input schema's `examples` keyword.
    pub examples: Vec<Value>,
    /// Where its outputs hold their objective, from the output schema's
    /// [`objective::OBJECTIVE_KEYWORD`].
    pub objective: Option<objective::ObjectiveSpec>,
    /// Where a warm start goes in its input, from the input schema's
    /// [`warm_start::WARM_START_KEYWORD`].
    pub warm_start: Option<warm_start::WarmStartSpec>,
    /// How its answer is drawn, from the output schema's [`view::VIEW_KEYWORD`].
    pub view: Option<view::ViewSpec>,
}

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(transparent)]
    Load(#[from] LoadError),
    /// `describe` trapped, timed out or failed.
    #[error("its describe call failed: {0}")]
    Describe(#[from] CallError),
    /// The name is not usable as a `problem_id` (shown capped and escaped).
    #[error("invalid plugin name {0}: use 1 to 64 lowercase letters, digits and '-'")]
    Name(String),
    /// The version is not a semantic version (shown capped and escaped).
    #[error(
        "invalid plugin version {0}: use a semantic version of at most 64 characters \
         (1.2.3, 1.2.3-rc.1, 1.2.3+build.5)"
    )]
    Version(String),
    /// A stored component is not what the store lists it as.
    #[error("{0}")]
    Mismatch(String),
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

/// What [`PluginRegistry::load_file`] did.
#[derive(Debug)]
pub enum FileLoaded {
    /// The file is in service under the name it declares.
    Installed(Arc<Plugin>),
    /// The file holds the bytes already loaded from it; nothing changed.
    Unchanged,
}

#[derive(Debug)]
pub struct PluginRegistry {
    runtime: Runtime,
    limits: Limits,
    /// Taken by every change, so that changes apply one after the other.
    sources: Mutex<Sources>,
    snapshot: RwLock<Arc<Snapshot>>,
    /// The latest changes, for `GET /plugin_events`.
    history: PluginHistory,
}

impl PluginRegistry {
    /// A registry with no plugins; `limits` bound the `describe` call made on load.
    pub fn new(runtime: Runtime, limits: Limits) -> PluginRegistry {
        PluginRegistry {
            runtime,
            limits,
            sources: Mutex::default(),
            snapshot: RwLock::default(),
            history: PluginHistory::default(),
        }
    }

    /// The runtime plugins are compiled by.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Loads the built-in plugins, then every `.wasm` file in `plugins_dir` (if it exists).
    pub fn load_all(&self, plugins_dir: &Path) -> Result<(), PluginError> {
        self.load_built_ins()?;
        self.load_dir(plugins_dir)
    }

    /// Loads the plugins embedded in the binary.
    pub fn load_built_ins(&self) -> Result<(), PluginError> {
        for wasm in [
            MAXCUT_WASM.as_slice(),
            QUBO_WASM.as_slice(),
            VRP_WASM.as_slice(),
        ]
        .into_iter()
        .chain(lp_wasm())
        {
            let plugin = Arc::new(self.load(wasm, PluginSource::BuiltIn)?);
            let mut sources = self.lock_sources();
            sources
                .built_in
                .insert(plugin.info.name.clone(), plugin.clone());
            self.publish(&sources);
            self.loaded(&plugin, None);
        }
        Ok(())
    }

    /// Loads every plugin file in `plugins_dir` (if it exists). A file that fails to load is
    /// logged and skipped: one broken plugin must not keep the others from serving.
    pub fn load_dir(&self, plugins_dir: &Path) -> Result<(), PluginError> {
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
            .filter(|path| is_plugin_file_name(path) && path.is_file())
            .collect();
        paths.sort();
        self.load_files(paths);
        Ok(())
    }

    /// Loads the files in `paths`, [`CONCURRENT_LOADS`] at a time, and returns when all are
    /// loaded or refused. Each is published as soon as it is ready; the order of two files
    /// declaring one name does not depend on which loads first (the first by path serves).
    fn load_files(&self, paths: Vec<PathBuf>) {
        let loaders = CONCURRENT_LOADS.min(paths.len());
        let queue = Mutex::new(paths.into_iter());
        let load_queued = || {
            loop {
                let next = queue
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .next();
                let Some(path) = next else { break };
                if let Err(error) = self.load_file(&path) {
                    self.file_rejected(&path, &error);
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..loaders {
                let spawned = std::thread::Builder::new()
                    .name("plugin-loader".into())
                    .spawn_scoped(scope, load_queued);
                if let Err(error) = spawned {
                    tracing::warn!(%error, "cannot start a plugin loader thread; loading with fewer");
                    break;
                }
            }
            // This thread is a loader too, so that the files load even if no thread started.
            load_queued();
        });
    }

    /// Loads (or reloads) the plugin in `path` and puts it in service under the name it
    /// declares, replacing what the file held before. On any error nothing changes: the
    /// previous version, if any, keeps serving.
    pub fn load_file(&self, path: &Path) -> Result<FileLoaded, PluginError> {
        let bytes = std::fs::read(path).map_err(|source| PluginError::Io {
            path: path.to_owned(),
            source,
        })?;
        let digest = digest(&bytes);
        let previous = self.lock_sources().files.get(path).cloned();
        if previous
            .as_ref()
            .is_some_and(|previous| previous.digest == digest)
        {
            return Ok(FileLoaded::Unchanged);
        }
        // Compiled and described outside the lock: lookups never wait for a compile. Files
        // load concurrently, but never one path twice at once (`load_files` takes each path
        // once; the reloader waits for a path's load before it looks at the path again), so
        // `previous` is still the file's when this one is put in.
        let plugin = Arc::new(self.load(&bytes, PluginSource::File(path.to_owned()))?);
        let mut sources = self.lock_sources();
        sources.files.insert(path.to_owned(), plugin.clone());
        self.publish(&sources);
        self.loaded(&plugin, previous.as_deref());
        if previous
            .as_ref()
            .is_some_and(|previous| previous.info.name != plugin.info.name)
        {
            self.log_name_restored(&sources, previous.as_deref());
        }
        if let Some(serving) = sources.file_serving(&plugin.info.name)
            && serving != path
        {
            tracing::warn!(
                name = %plugin.info.name,
                path = %path.display(),
                serving = %serving.display(),
                "two plugin files declare the same name; the first by file name serves"
            );
        }
        Ok(FileLoaded::Installed(plugin))
    }

    /// Takes the plugin loaded from `path` out of service (the file is gone). A built-in or
    /// another file of the same name serves again. Returns the plugin removed.
    pub fn unload_file(&self, path: &Path) -> Option<Arc<Plugin>> {
        let mut sources = self.lock_sources();
        let removed = sources.files.remove(path)?;
        self.publish(&sources);
        tracing::info!(
            name = %removed.info.name,
            version = %removed.info.version,
            path = %path.display(),
            "plugin file removed; use case unloaded"
        );
        self.history.record(
            PluginEventKind::Removed,
            Subject {
                name: Some(&removed.info.name),
                version: Some(&removed.info.version),
                digest: Some(&removed.digest),
                file: Some(path),
                reason: None,
            },
        );
        self.log_name_restored(&sources, Some(&removed));
        Some(removed)
    }

    /// Logs a file that could not be loaded and keeps why, for `GET /plugin_events`.
    pub fn file_rejected(&self, path: &Path, error: &PluginError) {
        tracing::error!(
            path = %path.display(),
            %error,
            "plugin file rejected; the previous version, if any, keeps serving"
        );
        self.history.record(
            PluginEventKind::Refused,
            Subject {
                file: Some(path),
                reason: Some(error.to_string()),
                ..Subject::default()
            },
        );
    }

    fn loaded(&self, plugin: &Plugin, previous: Option<&Plugin>) {
        log_loaded(plugin, previous);
        self.history.record(
            if previous.is_some() {
                PluginEventKind::Replaced
            } else {
                PluginEventKind::Loaded
            },
            Subject {
                name: Some(&plugin.info.name),
                version: Some(&plugin.info.version),
                digest: Some(&plugin.digest),
                file: match &plugin.source {
                    PluginSource::File(path) => Some(path),
                    PluginSource::BuiltIn | PluginSource::Store => None,
                },
                reason: None,
            },
        );
    }

    /// The paths of the plugins loaded from files.
    pub fn file_paths(&self) -> Vec<PathBuf> {
        self.lock_sources().files.keys().cloned().collect()
    }

    /// Says what serves a name once the file that served it no longer does.
    fn log_name_restored(&self, sources: &Sources, gone: Option<&Plugin>) {
        let Some(gone) = gone else { return };
        match self.current().by_name.get(&gone.info.name) {
            Some(plugin) => tracing::info!(
                name = %plugin.info.name,
                version = %plugin.info.version,
                source = %plugin.source,
                "use case served by its other source again"
            ),
            None if sources.file_serving(&gone.info.name).is_none() => {
                tracing::info!(name = %gone.info.name, "use case no longer served");
            }
            None => {}
        }
    }

    /// Compiles a component, asks it to describe itself and compiles its schemas.
    pub fn load(&self, wasm: &[u8], source: PluginSource) -> Result<Plugin, PluginError> {
        let component = self.runtime.compile(wasm)?;
        let info = component.describe(&self.limits)?;
        let valid_name = !info.name.is_empty()
            && info.name.len() <= MAX_NAME_CHARS
            && info
                .name
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
        if !valid_name {
            return Err(PluginError::Name(shown(&info.name)));
        }
        // Semantic versioning's grammar: no newline to forge a log line, no NUL, no path or
        // digest look-alike.
        if info.version.len() > MAX_NAME_CHARS || semver::Version::parse(&info.version).is_err() {
            return Err(PluginError::Version(shown(&info.version)));
        }
        let input_schema_value = parse_schema("input", &info.input_schema)?;
        let input_schema = compile_schema("input", &input_schema_value)?;
        let dataset_parameters = dataset_parameters(&input_schema_value)?;
        let extensions = media_type_extensions(&input_schema_value, &info.media_types)?;
        let examples = examples(&input_schema_value);
        let warm_start =
            warm_start::WarmStartSpec::parse(&input_schema_value).map_err(|message| {
                PluginError::Schema {
                    which: "input",
                    message,
                }
            })?;
        let output_schema_value = parse_schema("output", &info.output_schema)?;
        let output_schema = compile_schema("output", &output_schema_value)?;
        let objective =
            objective::ObjectiveSpec::parse(&output_schema_value).map_err(|message| {
                PluginError::Schema {
                    which: "output",
                    message,
                }
            })?;
        let view =
            view::ViewSpec::parse(&output_schema_value).map_err(|message| PluginError::Schema {
                which: "output",
                message,
            })?;
        Ok(Plugin {
            digest: digest(wasm),
            info,
            source,
            loaded_at: chrono::Utc::now(),
            component,
            input_schema,
            output_schema,
            dataset_parameters,
            extensions,
            examples,
            objective,
            warm_start,
            view,
        })
    }

    /// The current plugin of a name or alias (case-insensitive), without a version.
    pub fn resolve(&self, problem_id: &str) -> Option<Arc<Plugin>> {
        let snapshot = self.current();
        let name = snapshot.name_of(problem_id)?;
        snapshot.by_name.get(&name).cloned()
    }

    /// The plugin a launch's `problem_id` names: its name or an alias, and after `@` a
    /// version or a digest (else the current version).
    pub fn resolve_request(&self, problem_id: &str) -> Result<Arc<Plugin>, Unresolved> {
        let (id, request) = VersionRequest::split(problem_id);
        let snapshot = self.current();
        let no_use_case = || Unresolved::NoUseCase(problem_id.to_owned());
        let name = snapshot.name_of(id).ok_or_else(no_use_case)?;
        let pinnable = snapshot.pinnable.get(&name);
        let found = match &request {
            VersionRequest::Current => {
                return snapshot.by_name.get(&name).cloned().ok_or_else(no_use_case);
            }
            VersionRequest::Version(version) => pinnable.and_then(|plugins| {
                plugins
                    .iter()
                    .find(|plugin| plugin.info.version == *version)
            }),
            VersionRequest::Digest(digest) => {
                pinnable.and_then(|plugins| plugins.iter().find(|plugin| plugin.digest == *digest))
            }
        };
        found.cloned().ok_or_else(|| {
            let mut available: Vec<String> = pinnable
                .into_iter()
                .flatten()
                .map(|plugin| plugin.info.version.clone())
                .collect();
            // The store's versions not compiled here yet serve pins as well.
            let sources = self.lock_sources();
            for version in &sources.catalog.versions {
                if version.name == name
                    && version.retired_at.is_none()
                    && !available.contains(&version.version)
                {
                    available.push(version.version.clone());
                }
            }
            available.dedup();
            Unresolved::NoVersion {
                name,
                requested: request.recorded().unwrap_or_default(),
                available,
            }
        })
    }

    /// The store's version a pinned `problem_id` names (`name@1.3.0`, `name@sha256:…`),
    /// not retired, whether or not this replica has compiled it yet.
    pub fn listed(&self, problem_id: &str) -> Option<StoredVersion> {
        let (id, request) = VersionRequest::split(problem_id);
        let name = self
            .current()
            .name_of(id)
            .unwrap_or_else(|| id.to_lowercase());
        let sources = self.lock_sources();
        sources
            .catalog
            .versions
            .iter()
            .filter(|version| version.retired_at.is_none() && version.name == name)
            .find(|version| match &request {
                VersionRequest::Version(wanted) => version.version == *wanted,
                VersionRequest::Digest(digest) => version.digest() == *digest,
                VersionRequest::Current => false,
            })
            .cloned()
    }

    /// Any plugin this replica has loaded with this digest (`sha256:<hex>`), retired
    /// versions included: what a job bound to it runs.
    pub fn by_digest(&self, digest: &str) -> Option<Arc<Plugin>> {
        self.lock_sources().by_digest(digest).cloned()
    }

    /// Every version of the use case `name` (a name or alias) this replica knows: the
    /// store's (retired ones too), the built-in, this replica's file. `None` if there is no
    /// such use case.
    pub fn versions(&self, problem_id: &str) -> Option<Vec<VersionEntry>> {
        let snapshot = self.current();
        let (id, _) = VersionRequest::split(problem_id);
        let name = snapshot.name_of(id)?;
        let serving = snapshot.by_name.get(&name);
        let is_current =
            |plugin: &Plugin| serving.is_some_and(|serving| serving.digest == plugin.digest);
        let sources = self.lock_sources();
        let registry_current = sources
            .catalog
            .current
            .iter()
            .find(|(current, _)| *current == name)
            .map(|(_, version)| version.clone());
        // A file of this name in this replica's plugins directory serves here, whatever the
        // registry says.
        let directory_file = serving
            .filter(|serving| matches!(serving.source, PluginSource::File(_)))
            .and_then(|serving| serving.source.file_name());
        let mut entries = Vec::new();
        for stored in sources
            .catalog
            .versions
            .iter()
            .filter(|stored| stored.name == name)
        {
            let digest = stored.digest();
            let loaded = sources.stored.get(&digest);
            let named_current = registry_current.as_deref() == Some(stored.version.as_str());
            entries.push(VersionEntry {
                name: name.clone(),
                version: stored.version.clone(),
                current: loaded.is_some_and(|plugin| is_current(plugin)),
                registry_current: named_current,
                shadowed_by: directory_file.clone().filter(|_| named_current),
                digest,
                world: stored.world.clone(),
                source: PluginSource::Store.kind(),
                file: None,
                size: Some(stored.size),
                published_at: Some(stored.published_at),
                published_by: stored.published_by.clone(),
                retired: stored.retired_at.is_some(),
                loaded: loaded.is_some(),
            });
        }
        let others = sources.built_in.get(&name).into_iter().chain(
            sources
                .files
                .values()
                .filter(|plugin| plugin.info.name == name),
        );
        for plugin in others {
            entries.push(VersionEntry {
                name: name.clone(),
                version: plugin.info.version.clone(),
                digest: plugin.digest.clone(),
                world: plugin.component.world().to_owned(),
                source: plugin.source.kind(),
                file: plugin.source.file_name(),
                size: None,
                published_at: None,
                published_by: None,
                current: is_current(plugin),
                registry_current: false,
                shadowed_by: None,
                retired: false,
                loaded: true,
            });
        }
        Some(entries)
    }

    /// The built-in use case of this name, if there is one.
    pub fn built_in(&self, name: &str) -> Option<Arc<Plugin>> {
        self.lock_sources().built_in.get(name).cloned()
    }

    /// What the store lists, as last read.
    pub fn catalog(&self) -> Catalog {
        self.lock_sources().catalog.clone()
    }

    /// Whether the store's component with this digest is compiled here.
    pub fn has_stored(&self, digest: &str) -> bool {
        self.lock_sources().stored.contains_key(digest)
    }

    /// Compiles a component from the store and checks that it is the one expected: its
    /// digest, and where `listed`, the name and version the store lists it under. Not put
    /// in service: [`PluginRegistry::add_stored`] does that.
    pub fn load_stored(
        &self,
        wasm: &[u8],
        digest: &str,
        listed: Option<&StoredVersion>,
    ) -> Result<Plugin, PluginError> {
        let plugin = self.load(wasm, PluginSource::Store)?;
        if plugin.digest != digest {
            return Err(PluginError::Mismatch(format!(
                "the store's bytes for {digest} hash to {}",
                plugin.digest
            )));
        }
        if let Some(listed) = listed
            && (listed.name != plugin.info.name || listed.version != plugin.info.version)
        {
            return Err(PluginError::Mismatch(format!(
                "listed as {} {}, it describes itself as {} {}",
                listed.name, listed.version, plugin.info.name, plugin.info.version
            )));
        }
        Ok(plugin)
    }

    /// Keeps a component from the store, compiled, for the jobs bound to it and, if the
    /// store lists it, for new launches.
    pub fn add_stored(&self, plugin: Arc<Plugin>) {
        let mut sources = self.lock_sources();
        sources.stored.insert(plugin.digest.clone(), plugin.clone());
        self.publish(&sources);
        tracing::info!(
            name = %plugin.info.name,
            version = %plugin.info.version,
            digest = %plugin.digest,
            code = %plugin.component.code_origin().as_str(),
            "stored plugin loaded"
        );
    }

    /// Takes what the store lists now: its current versions serve from this snapshot on.
    pub fn set_catalog(&self, catalog: Catalog) {
        let mut sources = self.lock_sources();
        if sources.catalog == catalog {
            return;
        }
        sources.catalog = catalog;
        self.publish(&sources);
    }

    /// The events recorded since the last call, for the store.
    pub fn take_events(&self) -> Vec<crate::store::PluginEvent> {
        self.history.take()
    }

    /// Gives back events the store could not take, to be written with the next ones.
    pub fn put_back_events(&self, events: Vec<crate::store::PluginEvent>) {
        self.history.put_back(events);
    }

    /// Logs a stored component this replica cannot serve (an engine difference, bytes that
    /// are not what the store lists) and keeps why, for `GET /plugin_events`. The other
    /// versions serve on.
    pub fn stored_refused(
        &self,
        digest: &str,
        listed: Option<&StoredVersion>,
        error: &PluginError,
    ) {
        tracing::error!(
            %digest,
            name = listed.map(|listed| listed.name.as_str()),
            version = listed.map(|listed| listed.version.as_str()),
            %error,
            "stored plugin refused on this replica; the other versions serve on"
        );
        self.history.record(
            PluginEventKind::Refused,
            Subject {
                name: listed.map(|listed| listed.name.as_str()),
                version: listed.map(|listed| listed.version.as_str()),
                digest: Some(digest),
                reason: Some(error.to_string()),
                ..Subject::default()
            },
        );
    }

    /// The media type a served use case declares for files with this extension (any case,
    /// without its dot). Built-ins are asked first, then the others by name, so the answer is
    /// the same after every reload.
    pub fn media_type_for_extension(&self, extension: &str) -> Option<String> {
        let extension = extension.to_ascii_lowercase();
        let mut plugins = self.list();
        plugins.sort_by_key(|plugin| !matches!(plugin.source, PluginSource::BuiltIn));
        plugins.iter().find_map(|plugin| {
            plugin
                .extensions
                .iter()
                .find(|(declared, _)| *declared == extension)
                .map(|(_, media_type)| media_type.clone())
        })
    }

    /// Every plugin in service, by name.
    pub fn list(&self) -> Vec<Arc<Plugin>> {
        let mut plugins: Vec<_> = self.current().by_name.values().cloned().collect();
        plugins.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        plugins
    }

    /// Replaces the snapshot in one step: a lookup sees the old set or the new one.
    fn publish(&self, sources: &Sources) {
        let snapshot = Arc::new(sources.snapshot());
        *self
            .snapshot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = snapshot;
    }

    fn lock_sources(&self) -> std::sync::MutexGuard<'_, Sources> {
        self.sources
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn current(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// A name the plugins directory loads: `*.wasm`, not hidden. `name.wasm.tmp` and
/// `.name.wasm` are not, so that a copy written under such a name and renamed into place
/// is only ever loaded whole.
pub fn is_plugin_file_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.ends_with(".wasm") && !name.starts_with('.'))
}

/// `sha256:<hex>` of a component's bytes: what `GET /problem` shows as its `digest`.
pub fn digest(wasm: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(wasm)))
}

fn log_loaded(plugin: &Plugin, previous: Option<&Plugin>) {
    tracing::info!(
        name = %plugin.info.name,
        version = %plugin.info.version,
        digest = %plugin.digest,
        source = %plugin.source,
        code = %plugin.component.code_origin().as_str(),
        replaced = previous.map(|previous| previous.info.version.as_str()),
        "plugin loaded"
    );
}

/// The longest plugin name or version.
const MAX_NAME_CHARS: usize = 64;

/// A name or version a plugin described itself with, as a message may quote it: its first
/// 64 characters, escaped, in quotes.
fn shown(text: &str) -> String {
    let capped: String = text.chars().take(MAX_NAME_CHARS).collect();
    let cut = if capped.len() < text.len() { "…" } else { "" };
    format!("{capped:?}{cut}")
}
