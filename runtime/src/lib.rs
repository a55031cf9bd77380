//! Where plugins run: the wasmtime engine and its sandbox (`runtime`), the sandbox processes
//! that run long jobs apart from the server (`sandbox_process`), and the plugins themselves
//! (`plugins`): the built-in components, the registry's and the plugins directory's, loaded,
//! checked and watched. Below the API and the workers, above the store (whose plugin
//! catalog it reads).

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
