//! The wasmtime wrapper, and the only code that touches wasmtime: one [`Runtime`] (engine,
//! linker, epoch ticker, compile cache) for the process, compiled plugins pre-linked as
//! `InstancePre`, and a fresh `Store` with its own limits for every call into a plugin.

mod cache;
mod engine;
mod evaluate;
mod function_cache;
mod incumbent_budget;
mod log;
mod sandbox;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store, UpdateDeadline};

use self::cache::CompileCache;
use self::engine::engine;
pub use self::engine::{InstanceAllocation, RuntimeConfig};
use self::function_cache::FunctionCache;
pub use self::log::{BoundedLog, LogTail};
use self::sandbox::SandboxState;
use crate::violation::Violation;

/// Host-side bindings generated from the SDK's WIT, the one contract: the part of the `plugin`
/// world every 0.2.x component has (`evaluate`'s, added in 0.2.2, are in [`evaluate`]).
pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "../sdk/wit",
        world: "plugin-base",
    });
}

use self::bindings::exports::caseload::plugin::use_case as wit;
use self::bindings::{PluginBase as PluginBindings, PluginBasePre as PluginPre};
use self::evaluate::EvaluatorPre;
pub use self::evaluate::{EvaluateError, Evaluation};

/// The plugin world this host implements, as `sdk/wit/caseload.wit` declares it (a unit test
/// keeps this in step with the WIT). A component built against an older minor version links
/// too (wasmtime matches 0.2.0 imports to 0.2.2 definitions); any other does not.
pub const PLUGIN_WORLD: &str = "caseload:plugin@0.2.2";

/// How often the ticker thread advances the engine's epoch; deadlines and cancellation are
/// noticed within one tick of CPU-bound guest code.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The limits of one call into a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// The cap on all linear memories of the instance together.
    pub memory_bytes: usize,
    /// Wall-clock time the call may take, from the start of instantiation.
    pub wall_time: Duration,
    /// How much of the log is kept (the newest bytes).
    pub log_bytes: usize,
    /// The largest output accepted.
    pub output_bytes: usize,
    /// How long a run asked to finish now ([`ExecutionObserver::finishing`]) has to return.
    pub finish_grace: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: 512 << 20,
            wall_time: Duration::from_secs(60),
            log_bytes: 64 << 10,
            output_bytes: 64 << 20,
            finish_grace: Duration::from_secs(1),
        }
    }
}

/// Receives what a running plugin reports. Called on the worker's thread, inside the guest's
/// call: implementations must return quickly.
pub trait ExecutionObserver: Send + Sync {
    /// The run begins; `log` is its log, which the guest's stdout and stderr also write to
    /// without a call to this observer.
    fn started(&self, _log: &BoundedLog) {}
    /// The plugin reported progress; `log` is its log so far.
    fn progress(&self, fraction: f64, message: String, log: &BoundedLog);
    /// The plugin wrote a line through the `log` import.
    fn logged(&self, log: &BoundedLog);
    /// Whether the run was asked to finish now: `cancelled()` answers true, and the run has
    /// [`Limits::finish_grace`] from when this was first seen to return.
    fn finishing(&self) -> bool {
        false
    }
    /// The plugin reported a solution as good as `objective` (JSON, at most
    /// [`INCUMBENT_BYTES`], checked before this is called).
    fn incumbent(&self, _objective: f64, _solution: String) {}
}

/// The largest incumbent solution the host takes; a larger one is dropped, and the log says
/// so.
pub const INCUMBENT_BYTES: usize = 1 << 20;

/// What a plugin says about itself (`describe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub aliases: Vec<String>,
    pub description: String,
    pub input_schema: String,
    pub output_schema: String,
    pub media_types: Vec<String>,
}

/// The options of one run, as the plugin receives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunOptions {
    pub time_limit: Duration,
    pub seed: u64,
    pub max_iterations: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// wasmtime could not be configured on this machine.
    #[error("cannot set up the WebAssembly engine: {0:#}")]
    Engine(wasmtime::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not WebAssembly, or WebAssembly but not a component: said plainly,
    /// before a compiler's message about magic numbers.
    #[error("{0}")]
    NotAComponent(String),
    /// The bytes are not a component, or do not compile.
    #[error("not a valid WebAssembly component: {0:#}")]
    Compile(wasmtime::Error),
    /// The component does not implement the `caseload:plugin` world this host speaks: another
    /// version of the WIT, or not a plugin at all.
    #[error(
        "the component does not implement the {PLUGIN_WORLD} world this host speaks ({}): {error:#}",
        world_mismatch(built_against)
    )]
    World {
        /// The `caseload:plugin` versions the component imports or exports.
        built_against: Vec<String>,
        error: wasmtime::Error,
    },
}

/// Why a call into a plugin produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum CallError {
    /// The call ran past its wall-clock limit.
    #[error("time limit of {0:?} exceeded")]
    Timeout(Duration),
    /// The job was cancelled while the call ran.
    #[error("cancelled")]
    Cancelled,
    /// The instance asked for more memory than its cap.
    #[error("{0}")]
    MemoryLimit(String),
    /// The guest trapped: a panic, an out-of-bounds access, a stack overflow... `summary` is
    /// one line for clients; `details` has wasmtime's whole account, with the guest's
    /// backtrace, for the server's log and `caseload plugin check`; `panic` is the panic the
    /// guest wrote to its stderr before it trapped (Rust's `panicked at <location>:` line
    /// and the message under it), if it wrote one.
    #[error("the plugin trapped: {summary}")]
    Trap {
        summary: String,
        details: String,
        panic: Option<String>,
    },
    /// The plugin rejected the input.
    #[error("the plugin rejected the input")]
    InvalidInput(Vec<Violation>),
    /// The plugin returned an error.
    #[error("the plugin failed: {0}")]
    PluginFailed(String),
    /// The output is larger than the limit.
    #[error("the output is {size} bytes, more than the limit of {limit} bytes")]
    OutputTooLarge { size: usize, limit: usize },
}

/// The result of a run and what the plugin logged meanwhile.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub result: Result<String, CallError>,
    pub log: LogTail,
    /// The most linear memory the instance held, all memories together.
    pub peak_memory_bytes: usize,
}

/// Why the epoch callback stopped a guest.
#[derive(Debug, thiserror::Error)]
enum Interruption {
    #[error("deadline reached")]
    Deadline,
    #[error("cancelled")]
    Cancelled,
}

/// Where a plugin's compiled code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeOrigin {
    /// Compiled now (no cache, no entry, or an entry that was rejected).
    Compiled,
    /// Loaded from the compile cache.
    Cache,
}

impl CodeOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            CodeOrigin::Compiled => "compiled",
            CodeOrigin::Cache => "compile-cache",
        }
    }
}

/// The engine, the linker, the epoch ticker and the compile cache, shared by every plugin of
/// the process.
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    linker: Arc<Linker<SandboxState>>,
    allocation: InstanceAllocation,
    cache: Option<Arc<CompileCache>>,
    functions: Option<Arc<FunctionCache>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    /// An engine with on-demand allocation and no compile cache.
    pub fn new() -> Result<Runtime, RuntimeError> {
        Runtime::with_config(&RuntimeConfig::default())
    }

    pub fn with_config(runtime_config: &RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let functions = runtime_config.compile_cache_dir.as_ref().and_then(|dir| {
            let dir = dir.join("functions");
            FunctionCache::open(&dir)
                .inspect_err(|error| {
                    tracing::warn!(dir = %dir.display(), %error, "function cache unavailable; compiling every function");
                })
                .ok()
                .map(Arc::new)
        });
        let (engine, allocation) = engine(runtime_config, functions.as_ref())?;
        let cache = match &runtime_config.compile_cache_dir {
            None => None,
            Some(dir) => match CompileCache::open(dir, &engine) {
                Ok(cache) => Some(Arc::new(cache)),
                // Without a cache the server only starts slower.
                Err(error) => {
                    tracing::warn!(dir = %dir.display(), %error, "compile cache unavailable; compiling every plugin");
                    None
                }
            },
        };

        let mut linker = Linker::new(&engine);
        // Rust guests import WASI p2 even when they use none of it; the context each store
        // gets is empty, so linking it grants nothing but clocks, randomness and a log.
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(RuntimeError::Engine)?;
        link_deadline_aware_clock(&mut linker).map_err(RuntimeError::Engine)?;
        PluginBindings::add_to_linker::<SandboxState, HasSelf<SandboxState>>(
            &mut linker,
            |state| state,
        )
        .map_err(RuntimeError::Engine)?;

        if !runtime_config.unchecked {
            spawn_epoch_ticker(&engine);
        }
        Ok(Runtime {
            engine,
            linker: Arc::new(linker),
            allocation,
            cache,
            functions,
        })
    }

    /// How instances are allocated: the pool, or on demand if it could not be reserved.
    pub fn allocation(&self) -> InstanceAllocation {
        self.allocation
    }

    /// Compiles a component (or loads its code from the compile cache) and links it against
    /// the host, ready to instantiate.
    pub fn compile(&self, wasm: &[u8]) -> Result<CompiledPlugin, LoadError> {
        component_header(wasm)?;
        let wasm_sha256 = hex::encode(Sha256::digest(wasm));
        let (component, origin) = match &self.cache {
            None => (self.compile_now(wasm)?, CodeOrigin::Compiled),
            Some(cache) => match cache.load(&self.engine, &wasm_sha256) {
                Ok(Some(component)) => (component, CodeOrigin::Cache),
                outcome => {
                    if let Err(reason) = outcome {
                        tracing::warn!(
                            entry = %cache.entry_path(&wasm_sha256).display(),
                            %reason,
                            "compile cache entry rejected; recompiling"
                        );
                    }
                    let component = self.compile_now(wasm)?;
                    cache.store(&wasm_sha256, &component);
                    (component, CodeOrigin::Compiled)
                }
            },
        };
        let world_error = |error| LoadError::World {
            built_against: plugin_world_versions(&self.engine, &component),
            error,
        };
        let instance_pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(world_error)?;
        // Only components built against 0.2.2 or later export `evaluator`.
        let evaluator = EvaluatorPre::new(instance_pre.clone()).ok();
        let pre = PluginPre::new(instance_pre).map_err(world_error)?;
        // It linked, so it names one 0.2.x version (or several, the newest wins).
        let world = plugin_world_versions(&self.engine, &component)
            .pop()
            .map_or_else(
                || PLUGIN_WORLD.to_owned(),
                |version| format!("caseload:plugin@{version}"),
            );
        Ok(CompiledPlugin {
            engine: self.engine.clone(),
            pre,
            evaluator,
            origin,
            world,
            wasm: Arc::from(wasm),
            wasm_sha256,
        })
    }

    fn compile_now(&self, wasm: &[u8]) -> Result<Component, LoadError> {
        let Some(functions) = &self.functions else {
            return Component::new(&self.engine, wasm).map_err(LoadError::Compile);
        };
        // Other compiles may run meanwhile: the counts are this one's unless they overlap.
        let before = functions.lookups();
        let started = Instant::now();
        let component = Component::new(&self.engine, wasm).map_err(LoadError::Compile)?;
        let after = functions.lookups();
        tracing::info!(
            functions_reused = after.hits - before.hits,
            functions_compiled = after.misses - before.misses,
            seconds = started.elapsed().as_secs_f64(),
            "component compiled"
        );
        Ok(component)
    }
}

/// The bytes a WebAssembly component begins with: the magic `\0asm`, then version 13 of the
/// component layer (a core module has version 1, layer 0).
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Refuses, in words a plugin author reads at once, bytes that are not a component at all.
fn component_header(wasm: &[u8]) -> Result<(), LoadError> {
    if wasm.starts_with(&COMPONENT_HEADER) {
        return Ok(());
    }
    let message = if wasm.is_empty() {
        "the file is empty, not a WebAssembly component".to_owned()
    } else if !wasm.starts_with(&COMPONENT_HEADER[..4]) {
        let shown: String = String::from_utf8_lossy(&wasm[..wasm.len().min(16)])
            .chars()
            .map(|character| {
                if character.is_control() {
                    '.'
                } else {
                    character
                }
            })
            .collect();
        format!(
            "not a WebAssembly file: it does not start with \\0asm (it starts with \"{shown}\"); \
             publish the .wasm file `caseload plugin build` writes"
        )
    } else if wasm.get(4..8) == Some(&[0x01, 0x00, 0x00, 0x00][..]) {
        "a core WebAssembly module, not a component: build for wasm32-wasip2 (`caseload \
         plugin build` does), or wrap the module with `wasm-tools component new`"
            .to_owned()
    } else {
        "a WebAssembly file of a version or layer this host does not read (not a component \
         of the component model's version 13)"
            .to_owned()
    };
    Err(LoadError::NotAComponent(message))
}

/// The versions of the `caseload:plugin` package a component imports or exports, e.g.
/// `["0.1.0"]`: which world it was built against.
fn plugin_world_versions(engine: &Engine, component: &Component) -> Vec<String> {
    let component_type = component.component_type();
    let mut versions: Vec<String> = component_type
        .imports(engine)
        .map(|(name, _)| name)
        .chain(component_type.exports(engine).map(|(name, _)| name))
        .filter_map(|name| name.strip_prefix("caseload:plugin/"))
        .filter_map(|interface| interface.split_once('@'))
        .map(|(_, version)| version.to_owned())
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// Why a component did not link, in a client's words: which world it was built against.
fn world_mismatch(built_against: &[String]) -> String {
    let ours = PLUGIN_WORLD.trim_start_matches("caseload:plugin@");
    match built_against {
        [] => {
            "it imports and exports no caseload:plugin interface: is it a caseload plugin?".into()
        }
        versions if versions.iter().all(|version| version == ours) => {
            "it was built against this version, but its interfaces differ: \
             was the WIT file edited?"
                .into()
        }
        versions => format!(
            "it was built against caseload:plugin@{}, and this host loads plugins built \
             against any {}.x; rebuild it with this release's SDK (`caseload plugin new` \
             writes it)",
            versions.join(", @"),
            ours.rsplit_once('.').map_or(ours, |(line, _)| line)
        ),
    }
}

/// The WASI monotonic clock's subscriptions as wasmtime-wasi implements them, but never
/// waiting past the call's deadline (see [`SandboxState::clamp_wait`]). These two functions
/// are the only ways a guest can wait on time; stdin is empty, the log never blocks and
/// sockets are denied, so no other WASI call can hold a worker past its deadline.
fn link_deadline_aware_clock(linker: &mut Linker<SandboxState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::clocks::WasiClocksView;
    use wasmtime_wasi::p2::bindings::clocks::monotonic_clock::Host as MonotonicClock;

    /// The interface as `add_to_linker_sync` names it (wasmtime-wasi 50).
    const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.12";

    linker.allow_shadowing(true);
    let mut clock = linker.instance(MONOTONIC_CLOCK)?;
    clock.func_wrap(
        "subscribe-duration",
        |mut store: wasmtime::StoreContextMut<'_, SandboxState>, (nanos,): (u64,)| {
            let state = store.data_mut();
            let wait = state.clamp_wait(Duration::from_nanos(nanos));
            let pollable = state.clocks().subscribe_duration(wait.as_nanos() as u64)?;
            Ok((pollable,))
        },
    )?;
    clock.func_wrap(
        "subscribe-instant",
        |mut store: wasmtime::StoreContextMut<'_, SandboxState>, (when,): (u64,)| {
            let state = store.data_mut();
            let now = state.clocks().now()?;
            let wait = state.clamp_wait(Duration::from_nanos(when.saturating_sub(now)));
            let pollable = state.clocks().subscribe_duration(wait.as_nanos() as u64)?;
            Ok((pollable,))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// One thread for the whole process advances the epoch; it stops when the engine is dropped.
fn spawn_epoch_ticker(engine: &Engine) {
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("epoch-ticker".into())
        .spawn(move || {
            while let Some(engine) = engine.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .expect("the epoch ticker thread starts");
}

/// A compiled, pre-linked plugin. Each call instantiates it in a fresh `Store`.
#[derive(Clone)]
pub struct CompiledPlugin {
    engine: Engine,
    pre: PluginPre<SandboxState>,
    /// The `evaluator` export, if the component has one (built against 0.2.2 or later).
    evaluator: Option<EvaluatorPre<SandboxState>>,
    origin: CodeOrigin,
    /// The world it was built against, e.g. `caseload:plugin@0.2.0`.
    world: String,
    /// The component's bytes, for a sandbox process that compiles them for itself.
    wasm: Arc<[u8]>,
    /// The hex sha256 of `wasm`.
    wasm_sha256: String,
}

impl std::fmt::Debug for CompiledPlugin {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CompiledPlugin")
            .finish_non_exhaustive()
    }
}

impl CompiledPlugin {
    /// Whether the code was compiled now or loaded from the compile cache.
    pub fn code_origin(&self) -> CodeOrigin {
        self.origin
    }

    /// The world it was built against, e.g. `caseload:plugin@0.2.0`: this host's
    /// [`PLUGIN_WORLD`] or an older minor version of it, whose imports are a part of ours.
    pub fn world(&self) -> &str {
        &self.world
    }

    /// The component's bytes, as compiled.
    pub fn wasm(&self) -> &[u8] {
        &self.wasm
    }

    /// The hex sha256 of [`CompiledPlugin::wasm`].
    pub fn wasm_sha256(&self) -> &str {
        &self.wasm_sha256
    }

    /// Calls `describe`.
    pub fn describe(&self, limits: &Limits) -> Result<PluginInfo, CallError> {
        let mut call = self.call(limits, Arc::default(), None);
        let info = call
            .invoke(|plugin, store| plugin.caseload_plugin_use_case().call_describe(store))
            .map_err(|error| call.classify(error))?;
        Ok(PluginInfo {
            name: info.name,
            version: info.version,
            aliases: info.aliases,
            description: info.description,
            input_schema: info.input_schema,
            output_schema: info.output_schema,
            media_types: info.media_types,
        })
    }

    /// Calls `decode`: turns a dataset file of a media type the plugin reads into its JSON
    /// input.
    pub fn decode(
        &self,
        media_type: &str,
        data: &[u8],
        limits: &Limits,
    ) -> Result<String, CallError> {
        let mut call = self.call(limits, Arc::default(), None);
        let result = call
            .invoke(|plugin, store| {
                plugin
                    .caseload_plugin_use_case()
                    .call_decode(store, media_type, data)
            })
            .map_err(|error| call.classify(error))?;
        result.map_err(|violations| CallError::InvalidInput(convert_violations(violations)))
    }

    /// Calls `validate`: the semantic checks a schema cannot express.
    pub fn validate(&self, input: &str, limits: &Limits) -> Result<(), CallError> {
        let mut call = self.call(limits, Arc::default(), None);
        let result = call
            .invoke(|plugin, store| {
                plugin
                    .caseload_plugin_use_case()
                    .call_validate(store, input)
            })
            .map_err(|error| call.classify(error))?;
        result.map_err(|violations| CallError::InvalidInput(convert_violations(violations)))
    }

    /// Calls `run`, the job itself.
    pub fn run(
        &self,
        input: &str,
        options: &RunOptions,
        limits: &Limits,
        cancelled: Arc<AtomicBool>,
        observer: Arc<dyn ExecutionObserver>,
    ) -> RunReport {
        let mut call = self.call(limits, cancelled, Some(observer));
        let wit_options = wit::RunOptions {
            time_limit_ms: options.time_limit.as_millis() as u64,
            seed: options.seed,
            max_iterations: options.max_iterations,
        };
        let result = match call.invoke(|plugin, store| {
            plugin
                .caseload_plugin_use_case()
                .call_run(store, input, wit_options)
        }) {
            // Stopped (a cancel, a lost lease, the server stopping) while it ran: what it
            // returned on hearing `cancelled()` does not count, as if the epoch check had
            // trapped first.
            Ok(Ok(_)) if call.store.data().is_cancelled() => Err(CallError::Cancelled),
            Ok(Ok(output)) if output.len() > limits.output_bytes => {
                Err(CallError::OutputTooLarge {
                    size: output.len(),
                    limit: limits.output_bytes,
                })
            }
            Ok(Ok(output)) => Ok(output),
            Ok(Err(wit::PluginError::InvalidInput(violations))) => {
                Err(CallError::InvalidInput(convert_violations(violations)))
            }
            Ok(Err(wit::PluginError::Failed(message))) => Err(CallError::PluginFailed(message)),
            Err(error) => Err(call.classify(error)),
        };
        RunReport {
            result,
            log: call.log.tail(),
            peak_memory_bytes: call.store.data().limiter.used_bytes(),
        }
    }

    fn call(
        &self,
        limits: &Limits,
        cancelled: Arc<AtomicBool>,
        observer: Option<Arc<dyn ExecutionObserver>>,
    ) -> Call {
        let log = BoundedLog::new(limits.log_bytes);
        if let Some(observer) = &observer {
            observer.started(&log);
        }
        let deadline = Instant::now() + limits.wall_time;
        let state = SandboxState::new(limits, deadline, log.clone(), cancelled, observer);
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        let finish_grace = limits.finish_grace;
        let mut finish_by: Option<Instant> = None;
        store.epoch_deadline_callback(move |context| {
            if context.data().is_cancelled() {
                return Err(Interruption::Cancelled.into());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Interruption::Deadline.into());
            }
            // Asked to finish: the plugin hears `cancelled()` and has its grace to return;
            // one that does not ends as a cancelled run does.
            if context.data().is_finishing() {
                match finish_by {
                    None => finish_by = Some(now + finish_grace),
                    Some(by) if now >= by => return Err(Interruption::Cancelled.into()),
                    Some(_) => {}
                }
            }
            Ok(UpdateDeadline::Continue(1))
        });
        store.set_epoch_deadline(1);
        Call {
            store,
            pre: self.pre.clone(),
            log,
            wall_time: limits.wall_time,
        }
    }
}

/// One call in progress: its store, and what is needed to explain how it ended.
struct Call {
    store: Store<SandboxState>,
    pre: PluginPre<SandboxState>,
    log: BoundedLog,
    wall_time: Duration,
}

impl Call {
    fn invoke<R>(
        &mut self,
        call: impl FnOnce(&PluginBindings, &mut Store<SandboxState>) -> wasmtime::Result<R>,
    ) -> wasmtime::Result<R> {
        let plugin = self.pre.instantiate(&mut self.store)?;
        call(&plugin, &mut self.store)
    }

    fn classify(&self, error: wasmtime::Error) -> CallError {
        if let Some(interruption) = error.downcast_ref::<Interruption>() {
            return match interruption {
                Interruption::Deadline => CallError::Timeout(self.wall_time),
                Interruption::Cancelled => CallError::Cancelled,
            };
        }
        if let Some(exceeded) = self.store.data().limiter.refused() {
            return CallError::MemoryLimit(exceeded.to_string());
        }
        let mut details = format!("{error:?}");
        if details.len() > 4096 {
            let mut cut = 4096;
            while !details.is_char_boundary(cut) {
                cut -= 1;
            }
            details.truncate(cut);
            details.push_str(" …");
        }
        let summary = match error.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::UnreachableCodeReached) => {
                "wasm `unreachable` instruction executed (a panic, if the execution's log \
                 shows one)"
                    .to_owned()
            }
            Some(trap) => trap.to_string(),
            None => error
                .root_cause()
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        };
        CallError::Trap {
            summary,
            details,
            panic: last_panic(&self.log.tail().text),
        }
    }
}

/// The longest panic message kept from a log.
const MAX_PANIC_MESSAGE: usize = 2048;

/// The last panic a Rust guest reported in its log: from its `panicked at <location>:` line
/// to the `note:` line the standard library ends it with (or the log's end), as
/// `panicked at src/lib.rs:7:5: <message>`.
fn last_panic(log: &str) -> Option<String> {
    let start = log.rfind("panicked at ")?;
    let report = &log[start..];
    let (location, rest) = report.split_once('\n').unwrap_or((report, ""));
    let message: Vec<&str> = rest
        .lines()
        .take_while(|line| !line.starts_with("note: "))
        .collect();
    let mut panic = format!("{} {}", location.trim_end(), message.join("\n").trim_end());
    if panic.len() > MAX_PANIC_MESSAGE {
        let mut cut = MAX_PANIC_MESSAGE;
        while !panic.is_char_boundary(cut) {
            cut -= 1;
        }
        panic.truncate(cut);
        panic.push_str(" …");
    }
    Some(panic.trim_end().to_owned())
}

/// The WIT boundary: a plugin's violations become the host's.
fn convert_violations(violations: Vec<wit::Violation>) -> Vec<Violation> {
    violations
        .into_iter()
        .map(|violation| Violation::new(violation.pointer, violation.message))
        .collect()
}

#[cfg(test)]
mod header_tests {
    use super::*;

    #[test]
    fn bytes_that_are_no_component_are_said_so_plainly() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "empty"),
            (b"PK\x03\x04zip file", "not a WebAssembly file"),
            (b"\0asm\x01\0\0\0", "core WebAssembly module"),
            (b"\0asm not really", "version or layer"),
        ];
        for (bytes, says) in cases {
            let message = component_header(bytes).expect_err("refused").to_string();
            assert!(message.contains(says), "{bytes:?}: {message}");
            assert!(!message.contains("0x"), "{message}");
        }
        assert!(component_header(&COMPONENT_HEADER).is_ok());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_read_from_the_log_it_was_written_to() {
        let log = "running\nthread '<unnamed>' panicked at src/lib.rs:217:27:\n\
                   the guest panics\non two lines\nnote: run with `RUST_BACKTRACE=1` \
                   environment variable to display a backtrace\n";
        assert_eq!(
            last_panic(log).as_deref(),
            Some("panicked at src/lib.rs:217:27: the guest panics\non two lines")
        );
        assert_eq!(
            last_panic("panicked at src/a.rs:1:1:\nfirst\npanicked at src/b.rs:2:2:\nlast")
                .as_deref(),
            Some("panicked at src/b.rs:2:2: last")
        );
        assert_eq!(last_panic("nothing went wrong\n"), None);
        let long = format!("panicked at a.rs:1:1:\n{}", "é".repeat(MAX_PANIC_MESSAGE));
        assert!(last_panic(&long).is_some_and(|panic| panic.len() <= MAX_PANIC_MESSAGE + 4));
    }

    /// A component whose bytes changed but not its code (a plugin rebuilt with new data, as
    /// an interpreter with the author's script in its snapshot is) misses the compile cache
    /// and compiles none of its functions again.
    #[test]
    fn a_changed_component_reuses_the_functions_it_shares() {
        let dir = tempfile::tempdir().expect("a directory");
        let runtime = Runtime::with_config(
            &RuntimeConfig::default().with_compile_cache(dir.path().to_owned()),
        )
        .expect("an engine");
        let functions = runtime.functions.clone().expect("a function cache");
        let first = runtime
            .compile(crate::plugins::MAXCUT_WASM.as_slice())
            .expect("compiles");
        assert_eq!(first.origin, CodeOrigin::Compiled);
        // Functions with the same body (adapters, trampolines) hit even in the first compile.
        let cold = functions.lookups();
        assert!(cold.misses > 100, "{cold:?}");

        // The same component with a custom section at its end: other bytes, the same code.
        let mut changed = crate::plugins::MAXCUT_WASM.as_slice().to_vec();
        let name = b"caseload-test";
        let payload = b"another build";
        changed.extend([0, (1 + name.len() + payload.len()) as u8, name.len() as u8]);
        changed.extend(name);
        changed.extend(payload);
        let second = Runtime::with_config(
            &RuntimeConfig::default().with_compile_cache(dir.path().to_owned()),
        )
        .expect("an engine");
        let compiled = second.compile(&changed).expect("compiles");
        assert_eq!(
            compiled.origin,
            CodeOrigin::Compiled,
            "not the component's entry"
        );
        let warm = second
            .functions
            .as_ref()
            .expect("a function cache")
            .lookups();
        // Cranelift stores most functions, not all: 5 to 11 % of max-cut's are compiled again,
        // depending on the build.
        assert_eq!(warm.hits + warm.misses, cold.hits + cold.misses, "{warm:?}");
        assert!(
            warm.misses * 4 < cold.misses,
            "cold {cold:?}, warm {warm:?}"
        );
    }

    #[test]
    fn the_world_version_is_the_wit_files() {
        let wit = include_str!("../../../sdk/wit/caseload.wit");
        let package = format!("package {PLUGIN_WORLD};");
        assert!(
            wit.contains(&package),
            "sdk/wit/caseload.wit does not declare {package}"
        );
    }

    #[test]
    fn a_refusal_names_the_world_a_component_was_built_against() {
        let runtime = Runtime::new().expect("an engine");
        let component = Component::new(&runtime.engine, crate::plugins::MAXCUT_WASM.as_slice())
            .expect("max-cut compiles");
        assert_eq!(
            plugin_world_versions(&runtime.engine, &component),
            [PLUGIN_WORLD.trim_start_matches("caseload:plugin@")]
        );
        let other = world_mismatch(&["0.3.0".to_owned()]);
        assert!(
            other.contains("built against caseload:plugin@0.3.0")
                && other.contains("plugins built against any 0.2.x"),
            "{other}"
        );
        assert!(world_mismatch(&[]).contains("no caseload:plugin interface"));
    }
}
