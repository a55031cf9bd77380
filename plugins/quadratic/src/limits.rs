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

/// Called with the best value so far and the fraction of the time or budget used; returns
/// true when the job has been cancelled and the search should return at once.
pub type Report<'a> = dyn FnMut(f64, f64) -> bool + 'a;
