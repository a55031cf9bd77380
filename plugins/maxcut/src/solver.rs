//! The solver as the use case calls it: reduce the graph to its kernel, solve the kernel
//! exactly when it is small and heuristically otherwise, extend the answer to the whole graph.

use std::time::{Duration, Instant};

use crate::anneal::{AnnealParameters, simulated_annealing};
use crate::exhaustive::{EXHAUSTIVE_MAX_NODES, exhaustive};
use crate::graph::Graph;
use crate::reduce::reduce;
use crate::tempering::{TemperingParameters, parallel_tempering};

/// Kernels with more nodes than this are annealed rather than tempered: a ladder of sixteen
/// replicas stops trading cuts once a cut's energy spread is small next to the gaps between
/// rungs, which grow with the number of nodes.
pub const TEMPERING_MAX_NODES: usize = 4_000;

/// How often progress is reported to the host at most.
const REPORT_INTERVAL: Duration = Duration::from_millis(250);

#[derive(Debug, Clone)]
pub struct SolveLimits {
    /// The solver returns its best cut by then.
    pub deadline: Instant,
    /// A budget of iterations; with it, a run is reproducible for a given seed.
    pub max_iterations: Option<u64>,
    pub seed: u64,
}

#[derive(Debug, Clone)]
pub struct Solution {
    /// The side of each node.
    pub sides: Vec<bool>,
    /// True only when the cut is proven maximum: the kernel was enumerated to the end.
    pub optimal: bool,
    pub algorithm: &'static str,
    pub iterations: u64,
    pub time_to_best: Duration,
}

/// Called with the best cut so far and the fraction of the time used; returns true when the
/// job has been cancelled and the solver should return at once.
pub type Report<'a> = dyn FnMut(f64, f64) -> bool + 'a;

/// What [`solve`] did beside the solution, for the log.
#[derive(Debug, Clone, Copy)]
pub struct KernelSize {
    pub nodes: usize,
    pub edges: usize,
}

/// Reduces the graph to its kernel (see [`crate::reduce`]), solves the kernel exactly when it
/// has at most [`EXHAUSTIVE_MAX_NODES`] nodes, by parallel tempering up to
/// [`TEMPERING_MAX_NODES`] and by simulated annealing above, and extends the answer to the
/// whole graph.
pub fn solve(
    graph: &Graph,
    limits: &SolveLimits,
    report: &mut Report<'_>,
) -> (Solution, KernelSize) {
    let kernel = reduce(graph);
    let size = KernelSize {
        nodes: kernel.graph.num_nodes(),
        edges: kernel.graph.num_edges(),
    };
    let constant = kernel.constant;
    let mut report_whole = |kernel_cut: f64, fraction: f64| report(kernel_cut + constant, fraction);
    let solution = if size.nodes <= EXHAUSTIVE_MAX_NODES {
        exhaustive(&kernel.graph, limits, &mut report_whole)
    } else if size.nodes <= TEMPERING_MAX_NODES {
        let parameters = TemperingParameters::default();
        parallel_tempering(&kernel.graph, limits, &parameters, &mut report_whole)
    } else {
        let parameters = AnnealParameters::default();
        simulated_annealing(&kernel.graph, limits, &parameters, &mut report_whole)
    };
    let solution = Solution {
        sides: kernel.extend(&solution.sides),
        ..solution
    };
    (solution, size)
}

/// Tracks time and progress reports for one run.
pub(crate) struct Clock {
    pub(crate) started: Instant,
    deadline: Instant,
    last_report: Instant,
}

impl Clock {
    pub(crate) fn new(deadline: Instant) -> Clock {
        let now = Instant::now();
        Clock {
            started: now,
            deadline,
            last_report: now,
        }
    }

    fn fraction(&self, now: Instant) -> f64 {
        let budget = self
            .deadline
            .saturating_duration_since(self.started)
            .as_secs_f64();
        if budget <= 0.0 {
            1.0
        } else {
            (now - self.started).as_secs_f64() / budget
        }
    }

    /// Reports progress if it is time to, and tells whether the run must stop now.
    pub(crate) fn should_stop(&mut self, best_cut: f64, report: &mut Report<'_>) -> bool {
        let now = Instant::now();
        if now >= self.deadline {
            return true;
        }
        if now - self.last_report >= REPORT_INTERVAL {
            self.last_report = now;
            return report(best_cut, self.fraction(now));
        }
        false
    }
}
