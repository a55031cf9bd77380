//! The wasmtime engine as the process sets it up: pooled instances if asked and possible,
//! on-demand otherwise, epoch interruption on (off in sandbox processes), the component model.

use std::path::PathBuf;
use std::sync::Arc;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::RuntimeError;
use super::function_cache::FunctionCache;

/// How the engine is set up: see [`Runtime::with_config`](super::Runtime::with_config).
#[derive(Debug, Clone, Default)]
pub struct RuntimeConfig {
    pub(super) pooling: Option<PoolSize>,
    pub(super) compile_cache_dir: Option<PathBuf>,
    /// Compiled code without epoch checks: for sandbox processes, which are killed to stop
    /// a guest, and for measuring what the checks cost.
    pub(super) unchecked: bool,
}

/// What the pooling allocator reserves room for.
#[derive(Debug, Clone, Copy)]
pub(super) struct PoolSize {
    memory_bytes: usize,
    concurrent_instances: u32,
}

impl RuntimeConfig {
    /// Instances come from a pool reserved once, with room for `concurrent_instances`
    /// instances at a time, each memory up to `memory_bytes`, instead of a fresh `mmap` per
    /// call. If the machine cannot reserve the pool (a `ulimit -v`, a 32-bit address space),
    /// the engine falls back to on-demand allocation and says so in the log.
    pub fn with_pooling(mut self, memory_bytes: usize, concurrent_instances: u32) -> Self {
        self.pooling = Some(PoolSize {
            memory_bytes,
            concurrent_instances,
        });
        self
    }

    /// Compiled code is kept in `dir`, keyed by the component's sha256 and the engine's
    /// compatibility hash, so that a restart does not recompile; and each function's code in
    /// `dir/functions`, so that a component that changed compiles only the functions that did.
    pub fn with_compile_cache(mut self, dir: PathBuf) -> Self {
        self.compile_cache_dir = Some(dir);
        self
    }

    /// Compiles guests without the epoch checks in their loops and function entries, so
    /// that nothing inside the process stops a guest before it returns: no time limit, no
    /// cancel. A sandbox process (`sandbox_process`) runs its guests so, and the server
    /// kills the whole process to stop one; the max-cut bench uses it to measure what the
    /// checks cost.
    pub fn without_epoch_checks(mut self) -> Self {
        self.unchecked = true;
        self
    }
}

/// How the engine allocates instances, once set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceAllocation {
    /// From a pool reserved at start, for this many instances at a time.
    Pooling { concurrent_instances: u32 },
    /// A fresh allocation for each instance.
    OnDemand,
}

/// The engine: pooled instances if asked and possible, on-demand otherwise.
/// With `functions`, Cranelift keeps each function's code there and reuses it.
pub(super) fn engine(
    runtime_config: &RuntimeConfig,
    functions: Option<&Arc<FunctionCache>>,
) -> Result<(Engine, InstanceAllocation), RuntimeError> {
    let base_config = || {
        let mut config = base_config(runtime_config);
        if let Some(functions) = functions {
            config
                .enable_incremental_compilation(functions.clone())
                .map_err(RuntimeError::Engine)?;
        }
        Ok::<_, RuntimeError>(config)
    };
    if let Some(size) = runtime_config.pooling {
        let mut config = base_config()?;
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool_config(size)));
        match Engine::new(&config) {
            Ok(engine) => {
                return Ok((
                    engine,
                    InstanceAllocation::Pooling {
                        concurrent_instances: size.concurrent_instances,
                    },
                ));
            }
            Err(error) => tracing::warn!(
                error = format!("{error:#}"),
                "cannot reserve the instance pool; allocating instances on demand"
            ),
        }
    }
    let engine = Engine::new(&base_config()?).map_err(RuntimeError::Engine)?;
    Ok((engine, InstanceAllocation::OnDemand))
}

/// The engine's settings before the choice of instance allocation.
pub(super) fn base_config(runtime_config: &RuntimeConfig) -> Config {
    let mut config = Config::new();
    // Off only where something else stops the guest: it is what stops a guest that loops
    // without calling the host.
    config.epoch_interruption(!runtime_config.unchecked);
    config.wasm_component_model(true);
    config
}

/// The pool's limits. Each call instantiates one component and drops it when it returns, so
/// `concurrent_instances` component instances are enough when it counts every call that can
/// run at once (see `serve`). The per-component counts are generous for what
/// `wasm32-wasip2` produces (a main module and a few adapter shims, one memory): a plugin
/// beyond them fails to instantiate, and the log says which limit it hit.
fn pool_config(size: PoolSize) -> PoolingAllocationConfig {
    /// A wasm32 memory cannot grow past 4 GiB, and the default reservation is that.
    const MAX_MEMORY: usize = 4 << 30;
    const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
    const MEMORIES_PER_COMPONENT: u32 = 4;
    const TABLES_PER_COMPONENT: u32 = 16;
    /// Each memory and table keeps this much resident after a call and is reset in place,
    /// with `memset`, instead of given back with `madvise` (a TLB shootdown on every core,
    /// then a fault per page at the next call). Enough for a tiny job's whole memory (a
    /// 256 KiB stack, its data and heap); at most this much RSS per pooled memory.
    const KEEP_RESIDENT: usize = 4 << 20;
    let instances = size.concurrent_instances.max(1);
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(instances)
        .total_core_instances(instances * CORE_INSTANCES_PER_COMPONENT)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        // Components from wasm32-wasip2 have one memory; two per instance leaves room.
        .total_memories(instances * 2)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .total_tables(instances * TABLES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        // The cap of `SummedMemoryLimiter` holds for one memory alone too: the pool's slots
        // must let one memory reach it.
        .max_memory_size(size.memory_bytes.clamp(64 << 10, MAX_MEMORY))
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(KEEP_RESIDENT)
        .pagemap_scan(wasmtime::Enabled::Auto);
    pool
}
