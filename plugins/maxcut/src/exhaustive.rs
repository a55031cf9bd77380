//! Exact search for small graphs: every cut, in Gray-code order.

use std::time::Duration;

use crate::clock::Clock;
use crate::graph::Graph;
use crate::solution::Solution;
use caseload_quadratic::{Limits, Report};

/// Graphs with at most this many nodes are enumerated (2^23 cuts, well under a second in the
/// sandbox) and their cut reported optimal.
pub const EXHAUSTIVE_MAX_NODES: usize = 24;

/// How often the enumeration looks at the clock and reports progress, in steps.
const CHECK_EVERY: u64 = 1 << 16;

/// Enumerates every cut with the last node fixed on side 0, flipping one node per step in
/// Gray-code order so that each step costs one node's degree. Optimal unless the deadline or
/// a cancellation cut it short.
pub fn exhaustive(graph: &Graph, limits: &Limits, report: &mut Report<'_>) -> Solution {
    let n = graph.num_nodes();
    let mut clock = Clock::new(limits.deadline);
    let mut sides = vec![false; n];
    let mut gains = graph.flip_gains(&sides);
    let mut cut = 0.0;
    let mut best_cut = 0.0;
    let mut best_sides = sides.clone();
    let mut time_to_best = Duration::ZERO;
    let noise = 1e-9 * graph.mean_absolute_weight();
    let steps: u64 = if n <= 1 { 0 } else { (1u64 << (n - 1)) - 1 };
    let mut completed = true;
    let mut step = 0u64;
    while step < steps {
        step += 1;
        if step.is_multiple_of(CHECK_EVERY) && clock.should_stop(best_cut, &best_sides, report) {
            completed = false;
            break;
        }
        let node = step.trailing_zeros() as usize;
        cut += gains[node];
        graph.flip(&mut sides, &mut gains, node);
        if cut > best_cut + noise {
            best_cut = cut;
            best_sides.copy_from_slice(&sides);
            time_to_best = clock.started.elapsed();
        }
    }
    Solution {
        sides: best_sides,
        optimal: completed,
        algorithm: "exhaustive",
        iterations: step,
        time_to_best,
    }
}
