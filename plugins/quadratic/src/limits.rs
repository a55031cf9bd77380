//! When a search stops, and what it tells its caller while it runs.

use std::time::Instant;

/// When a search stops: at the deadline, or after a budget of iterations. With a budget, a
/// run is reproducible for a given seed, and only the budget stops it.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The search returns its best by then.
    pub deadline: Instant,
    pub max_iterations: Option<u64>,
    pub seed: u64,
}

/// What a search tells its caller as it runs.
pub struct Snapshot<'a> {
    /// The best value so far.
    pub best: f64,
    /// The fraction of the time or budget used.
    pub fraction: f64,
    /// Makes a copy of the assignment with the best value; a caller that reports incumbents
    /// calls it, others do not pay for the copy.
    pub solution: &'a dyn Fn() -> Vec<bool>,
}

/// Called with the search's [`Snapshot`] now and then; returns true when the job has been
/// cancelled and the search should return at once.
pub type Report<'a> = dyn FnMut(&Snapshot<'_>) -> bool + 'a;
