//! The wasmtime wrapper, and the only code that touches wasmtime: one [`Runtime`] (engine,
//! linker, epoch ticker) for the process, compiled plugins pre-linked as `InstancePre`, and a
//! fresh `Store` with its own limits for every call into a plugin.

mod log;
mod sandbox;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, Store, UpdateDeadline};

pub use self::log::{BoundedLog, LogTail};
use self::sandbox::{MemoryLimitExceeded, SandboxState};

/// Host-side bindings generated from the SDK's WIT world, the one contract.
pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "../sdk/wit",
        world: "plugin",
    });
}

use self::bindings::exports::caseload::plugin::use_case as wit;
use self::bindings::{Plugin as PluginBindings, PluginPre};

/// How often the ticker thread advances the engine's epoch; deadlines and cancellation are
/// noticed within one tick of CPU-bound guest code.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The limits of one call into a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The cap on all linear memories of the instance together.
    pub memory_bytes: usize,
    /// Wall-clock time the call may take, from the start of instantiation.
    pub wall_time: Duration,
    /// How much of the log is kept (the newest bytes).
    pub log_bytes: usize,
    /// The largest output accepted.
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: 512 << 20,
            wall_time: Duration::from_secs(60),
            log_bytes: 64 << 10,
            output_bytes: 64 << 20,
        }
    }
}

/// Receives what a running plugin reports. Called on the worker's thread, inside the guest's
/// call: implementations must return quickly.
pub trait ExecutionObserver: Send + Sync {
    /// The plugin reported progress; `log` is its log so far.
    fn progress(&self, fraction: f64, message: String, log: &BoundedLog);
    /// The plugin wrote a line through the `log` import.
    fn logged(&self, log: &BoundedLog);
}

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

/// One problem with an input, at a JSON pointer into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

/// The options of one run, as the plugin receives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// The bytes are not a component, or do not compile.
    #[error("not a valid WebAssembly component: {0:#}")]
    Compile(wasmtime::Error),
    /// The component does not implement the `caseload:plugin` world this host speaks.
    #[error("the component does not match the caseload:plugin world: {0:#}")]
    World(wasmtime::Error),
}

/// Why a call into a plugin produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// The guest trapped: a panic, an out-of-bounds access, a stack overflow...
    #[error("the plugin trapped: {0}")]
    Trap(String),
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
}

/// Why the epoch callback stopped a guest.
#[derive(Debug, thiserror::Error)]
enum Interruption {
    #[error("deadline reached")]
    Deadline,
    #[error("cancelled")]
    Cancelled,
}

/// The engine, the linker and the epoch ticker, shared by every plugin of the process.
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    linker: Arc<Linker<SandboxState>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    pub fn new() -> Result<Runtime, RuntimeError> {
        let mut config = Config::new();
        // Never off: it is what stops a guest that loops without calling the host.
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        let engine = Engine::new(&config).map_err(RuntimeError::Engine)?;

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

        spawn_epoch_ticker(&engine);
        Ok(Runtime {
            engine,
            linker: Arc::new(linker),
        })
    }

    /// Compiles a component and links it against the host, ready to instantiate.
    pub fn compile(&self, wasm: &[u8]) -> Result<CompiledPlugin, LoadError> {
        let component = Component::new(&self.engine, wasm).map_err(LoadError::Compile)?;
        let instance_pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(LoadError::World)?;
        let pre = PluginPre::new(instance_pre).map_err(LoadError::World)?;
        Ok(CompiledPlugin {
            engine: self.engine.clone(),
            pre,
        })
    }
}

/// The WASI monotonic clock's subscriptions as wasmtime-wasi implements them, but never
/// waiting past the call's deadline (see [`SandboxState::clamp_wait`]). These two functions
/// are the only ways a guest can wait on time; stdin is empty, the log never blocks and
/// sockets are denied, so no other WASI call can hold a worker past its deadline.
fn link_deadline_aware_clock(linker: &mut Linker<SandboxState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::clocks::WasiClocksView;
    use wasmtime_wasi::p2::bindings::clocks::monotonic_clock::Host as MonotonicClock;

    /// The interface as `add_to_linker_sync` names it (wasmtime-wasi 48).
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
}

impl std::fmt::Debug for CompiledPlugin {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CompiledPlugin")
            .finish_non_exhaustive()
    }
}

impl CompiledPlugin {
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
        }
    }

    fn call(
        &self,
        limits: &Limits,
        cancelled: Arc<AtomicBool>,
        observer: Option<Arc<dyn ExecutionObserver>>,
    ) -> Call {
        let log = BoundedLog::new(limits.log_bytes);
        let deadline = Instant::now() + limits.wall_time;
        let state = SandboxState::new(limits, deadline, log.clone(), cancelled, observer);
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.epoch_deadline_callback(move |context| {
            if context.data().is_cancelled() {
                return Err(Interruption::Cancelled.into());
            }
            if Instant::now() >= deadline {
                return Err(Interruption::Deadline.into());
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
        if let Some(exceeded) = error.downcast_ref::<MemoryLimitExceeded>() {
            return CallError::MemoryLimit(exceeded.to_string());
        }
        let mut message = format!("{error:?}");
        if message.len() > 4096 {
            let mut cut = 4096;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push_str(" …");
        }
        CallError::Trap(message)
    }
}

fn convert_violations(violations: Vec<wit::Violation>) -> Vec<Violation> {
    violations
        .into_iter()
        .map(|violation| Violation {
            pointer: violation.pointer,
            message: violation.message,
        })
        .collect()
}
