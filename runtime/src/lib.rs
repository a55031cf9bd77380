//! Where plugins run: the wasmtime engine and its sandbox (`runtime`), the sandbox processes
//! that run long jobs apart from the server (`sandbox_process`), and the plugins themselves
//! (`plugins`): the built-in components, the registry's and the plugins directory's, loaded,
//! checked and watched. Below the API and the workers, above the store (whose plugin
//! catalog it reads).
//!
//! # Invariants in full
//!
//! What ARCHITECTURE.md says in a line each, with the detail.
//!
//! - Only `runtime/src/runtime/` touches wasmtime. Everything else sees `Runtime`, `CompiledPlugin`,
//!   `Limits`, `CallError`.
//! - One `Engine` per process; one fresh `Store` per call (describe, validate, run). No `Store` is
//!   ever shared between jobs.
//! - The instance pool has a slot for every call that can run at once: one per worker, one per
//!   submission-time call (`validate` and `decode` share a semaphore of one per CPU), one per
//!   plugin loader's `describe` (`CONCURRENT_LOADS`, 4), plus four. A new kind of concurrent call must be counted in
//!   `concurrent_instances` (`lib.rs`). Where the pool cannot be reserved, the engine allocates on
//!   demand and logs it.
//! - A running job keeps the `Arc<Plugin>` it resolved when it started; a reload publishes a new
//!   snapshot and never touches a plugin in use. A submission and its run may therefore see two
//!   versions: the job records the one that ran.
//! - A plugin file serves only after it compiled, linked against `caseload:plugin@0.2.x`, answered
//!   `describe` and its schemas compiled; until then (and if it never does) the previous version
//!   serves. What serves a name: a file, else the built-in; of two files, the first by path.
//!   A name is never an alias of another plugin; a contested alias goes to the built-in, else
//!   to the first plugin by name (`alias_map` in `plugins.rs`).
//! - Compiled code from the cache is used only after its sha256 matches the one stored with it
//!   (`Component::deserialize` in `runtime/cache.rs`). The workspace's other `unsafe` calls:
//!   `malloc_trim` in the server's `api/body_budget.rs`, and SIGPIPE's default action
//!   restored for the commands in the binary's `main.rs`.
//! - In the server's process, epoch interruption is always on; one ticker thread advances it
//!   every 10 ms. A call's deadline and cancellation are checked in the epoch callback. A
//!   sandbox process's engine has none: the server stops its guest by killing the process (at
//!   the call's wall time from when the run is sent, on the same cancel flag, after the same
//!   finish grace), and starts another for the next run. Loading a component into a process
//!   (once per process, from the compile cache after the first) comes before the run is sent.
//!   What a killed guest reported in its last 10 ms is lost with it. Epoch checks only run while
//!   wasm runs, so the WASI clock subscriptions (the only way a guest can block in the host:
//!   stdin is empty, the log never blocks, sockets are denied) are shadowed by versions that
//!   never wait past the call's deadline.
//! - Memory caps are summed over all memories of an instance (`SummedMemoryLimiter`). A grow
//!   over the cap is refused (`memory.grow` returns -1), never trapped by the limiter, so a guest
//!   can ask whether something fits; a call that then traps is reported as out of memory. A
//!   launch's `validate` runs under the cap the job would run under (its `memory_limit_mib`
//!   included); an upload's `decode` under the use case's.
//! - Guest code runs only on worker OS threads, `spawn_blocking` threads or in a sandbox
//!   process, never on a tokio worker. Only `run` goes to a sandbox process; `describe`,
//!   `decode` and `validate` stay in the server's.

pub mod limits;
pub mod plugins;
pub mod runtime;
pub mod sandbox_process;
pub mod violation;

pub use caseload_store as store;
pub use caseload_store::{objective, options};

/// Where the build left the test guests (`build.rs`): the components the tests and
/// benchmarks load from files. Never embedded.
pub const TEST_GUESTS_DIR: &str = env!("CASELOAD_TEST_GUESTS_DIR");
