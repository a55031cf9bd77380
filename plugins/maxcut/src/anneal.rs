//! Simulated annealing (Kirkpatrick, Gelatt & Vecchi 1983) for graphs too large for
//! [`crate::tempering`] to keep its ladder connected.
//!
//! One replica cools geometrically from a hot temperature to a cold one by Metropolis sweeps,
//! a fixed number of times in the budget, each time from a fresh random cut; the best cut
//! seen is kept. On large sparse graphs one long anneal beats many short ones (G-set G81 at
//! 30 s: 0.40 % from best-known against 0.72 % for sixteen).
//!
//! With an iteration budget (`max_iterations`, one iteration per node visited) the
//! temperature follows the visits made, so a run repeats exactly for its seed, natively or in
//! the sandbox. Without one it follows the clock to the deadline.

use std::time::Duration;

use crate::graph::Graph;
use crate::metropolis::{Best, Replica};
use crate::random::SplitMix64;
use crate::solver::{Clock, Report, Solution, SolveLimits};
use crate::weight::Weight;

/// The schedule. The cold end is in units of [`Graph::mean_absolute_weight`], the hot end in
/// units of [`Graph::heavy_weight_scale`] (the same for weights of one size), so that scaling
/// every weight by a constant changes nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnealParameters {
    /// Where each anneal starts: most losing moves are taken.
    pub hot: f64,
    /// Where it ends: a descent that drifts along plateaus.
    pub cold: f64,
    /// Anneals in the budget.
    pub anneals: u32,
}

impl Default for AnnealParameters {
    /// For weights of one size. With ±1 weights a flip gains a whole number; at 0.2 a loss
    /// of 1 is taken 0.7 % of the time and a loss of 2 once in 22,000 tries (in whole
    /// numbers, see [`crate::weight`]), so below it the cut barely moves. From 3 to 0.1
    /// instead, G59's best came at three quarters of the time (about 0.23); from 1.5 to 0.2
    /// the search is still improving at the end. At 20 s natively the medians moved by less than the seeds' spread: G59 6,056
    /// to 6,062 over 11 seeds (best known 6,086), G64 8,711 to 8,704 over 8 (8,751).
    fn default() -> AnnealParameters {
        AnnealParameters {
            hot: 1.5,
            cold: 0.2,
            anneals: 1,
        }
    }
}

/// Where the schedule stands: by visits against the budget, or by the clock.
#[derive(Debug, Clone, Copy)]
enum Pace {
    Iterations { per_anneal: u64 },
    Clock { per_anneal: Duration },
}

/// Runs the anneals until the budget, the deadline or cancellation, and returns the best cut
/// seen. Gains are kept in whole numbers where the weights allow (see [`crate::weight`]).
pub fn simulated_annealing(
    graph: &Graph,
    limits: &SolveLimits,
    parameters: &AnnealParameters,
    report: &mut Report<'_>,
) -> Solution {
    if graph.has_small_whole_weights() {
        annealing_in::<i32>(graph, limits, parameters, report)
    } else {
        annealing_in::<f64>(graph, limits, parameters, report)
    }
}

fn annealing_in<W: Weight>(
    graph: &Graph,
    limits: &SolveLimits,
    parameters: &AnnealParameters,
    report: &mut Report<'_>,
) -> Solution {
    let n = graph.num_nodes();
    let mut clock = Clock::new(limits.deadline);
    let mut random = SplitMix64::new(limits.seed);
    let unit = graph.mean_absolute_weight();
    let (hot, cold) = (
        parameters.hot * graph.heavy_weight_scale(),
        parameters.cold * unit,
    );
    let anneals = parameters.anneals.max(1);
    let pace = match limits.max_iterations {
        Some(budget) => Pace::Iterations {
            per_anneal: (budget / u64::from(anneals)).max(1),
        },
        None => Pace::Clock {
            per_anneal: limits.deadline.saturating_duration_since(clock.started) / anneals,
        },
    };
    // Look at the clock about every 65,536 visits, and at least once a sweep.
    let sweeps_per_check = (65_536 / n.max(1)).max(1) as u64;

    let mut replica: Replica<W> = Replica::random(graph, &mut random);
    let mut best = Best::new(0, &mut replica, W::noise(unit), &clock);
    let mut iterations = 0u64;
    'anneals: for anneal in 0..anneals as usize {
        if anneal > 0 {
            replica = Replica::random(graph, &mut random);
        }
        let started_at = (iterations, clock.started.elapsed());
        let mut acceptance = W::acceptance(hot);
        let mut sweep = 0u64;
        loop {
            if limits
                .max_iterations
                .is_some_and(|budget| iterations + n as u64 > budget)
            {
                break 'anneals;
            }
            if sweep.is_multiple_of(sweeps_per_check) {
                if clock.should_stop(best.cut.to_f64(), report) {
                    break 'anneals;
                }
                let done = match pace {
                    Pace::Iterations { per_anneal } => {
                        (iterations - started_at.0) as f64 / per_anneal as f64
                    }
                    Pace::Clock { per_anneal } => {
                        (clock.started.elapsed().saturating_sub(started_at.1)).as_secs_f64()
                            / per_anneal.as_secs_f64()
                    }
                };
                if done >= 1.0 {
                    break;
                }
                acceptance = W::acceptance(hot * (cold / hot).powf(done));
            }
            replica.sweep(graph, &acceptance, &mut random, &mut best, anneal);
            iterations += n as u64;
            sweep += 1;
        }
        // The cold end is nearly a descent; finish it.
        replica.descend(graph, &mut best, anneal);
    }
    // An anneal cut short by the deadline may have left the best short of a local optimum.
    Replica::from_sides(graph, &best.sides).descend(graph, &mut best, anneals as usize);
    Solution {
        sides: best.sides,
        optimal: false,
        algorithm: "simulated-annealing",
        iterations,
        time_to_best: best.found_at,
    }
}
