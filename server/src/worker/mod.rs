//! The workers: OS threads that claim pending jobs from the store and run them in the
//! sandbox, one execution at a time each, and what this process holds while they do (the
//! jobs it claimed, their leases, the wake-ups of idle workers).

mod claim_filter;
mod claim_turn;
mod context;
mod execute;
mod leases;
mod local_jobs;
mod pool;
mod progress;
mod race;
mod run_clocks;
mod start;
mod wakeup;

pub use self::local_jobs::LocalJobs;
pub use self::pool::{WorkerPool, Workers};
