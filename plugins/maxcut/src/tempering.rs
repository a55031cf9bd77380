//! Parallel tempering (replica-exchange Monte Carlo; Swendsen & Wang 1986, Hukushima &
//! Nemoto 1996).
//!
//! A ladder of replicas, each a whole cut, sits at temperatures spaced geometrically from cold
//! to hot. A round gives every replica one Metropolis sweep at its temperature; then
//! neighbouring rungs offer to trade replicas, accepting with the probability that keeps each
//! temperature's Boltzmann distribution. A cut caught in a poor valley climbs the ladder, is
//! shaken loose where it is hot, and comes down somewhere else, so the cold rungs keep finding
//! new deep valleys with no restarts and no cooling schedule. That is what finds the best
//! cuts of frustrated sparse graphs, where annealing settles in the same wide valley run
//! after run (G-set G21: 927 from every anneal, 931 from tempering).
//!
//! On lattice-like graphs each rung can hold two replicas, one per ladder, and the coldest
//! rungs trade clusters between their pair (Houdayer's move, in `metropolis.rs`): that
//! solves the G-set's toroidal grids (G33, G50), where single flips alone stall.
//!
//! On small graphs whose weights span scales, every replica also flips its best block of
//! consecutive nodes after each sweep (`block_move`, in `metropolis.rs`). The move is
//! greedy, so the rungs no longer sample their temperatures exactly; it is what solves Biq
//! Mac's Ising chains, which tempering alone left 0.1 to 1.9 % short of their optima.
//!
//! Nothing depends on the clock but when to stop, so a run with an iteration budget (one
//! iteration per node visited) repeats exactly for its seed, natively or in the sandbox.

use crate::clock::Clock;
use crate::graph::Graph;
use crate::metropolis::{Best, BlockScratch, ClusterScratch, Replica, block_move, cluster_move};
use crate::solution::Solution;
use crate::weight::Weight;
use caseload_quadratic::SplitMix64;
use caseload_quadratic::{Limits, Report};

/// The ladder. The coldest temperature is in units of [`Graph::mean_absolute_weight`], the
/// hottest in units of [`Graph::heavy_weight_scale`] (the same for weights of one size), so
/// that scaling every weight by a constant changes nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct TemperingParameters {
    /// Rungs of the ladder.
    pub replicas: usize,
    pub coldest: f64,
    pub hottest: f64,
    /// Two replicas per rung instead of one, on two ladders, with Houdayer cluster moves
    /// between the pair on the coldest `cluster_rungs` rungs.
    pub cluster_rungs: usize,
    /// After its sweep, every replica flips its best block of consecutive nodes, if one gains
    /// (see [`block_move`]).
    pub block_moves: bool,
}

impl Default for TemperingParameters {
    fn default() -> TemperingParameters {
        TemperingParameters {
            replicas: 16,
            coldest: 0.25,
            hottest: 1.5,
            cluster_rungs: 0,
            block_moves: false,
        }
    }
}

/// Runs the replicas until the budget, the deadline or cancellation, and returns the best cut
/// seen, taken to a local optimum. Gains are kept in whole numbers where the weights allow
/// (see [`crate::weight`]).
///
/// With a `start` (a warm start), every replica begins from it instead of from a random cut.
pub fn parallel_tempering(
    graph: &Graph,
    start: Option<&[bool]>,
    limits: &Limits,
    parameters: &TemperingParameters,
    report: &mut Report<'_>,
) -> Solution {
    if graph.has_small_whole_weights() {
        tempering_in::<i32>(graph, start, limits, parameters, report)
    } else {
        tempering_in::<f64>(graph, start, limits, parameters, report)
    }
}

fn tempering_in<W: Weight>(
    graph: &Graph,
    start: Option<&[bool]>,
    limits: &Limits,
    parameters: &TemperingParameters,
    report: &mut Report<'_>,
) -> Solution {
    let n = graph.num_nodes();
    let mut clock = Clock::new(limits.deadline);
    let mut random = SplitMix64::new(limits.seed);
    let (light, heavy) = (graph.mean_absolute_weight(), graph.heavy_weight_scale());
    let (coldest, hottest) = (parameters.coldest * light, parameters.hottest * heavy);
    // Rungs as the parameters say over their own span, and more, at the same spacing, where
    // the weights' sizes spread the ladder wider.
    let widening = (hottest / coldest).ln() / (parameters.hottest / parameters.coldest).ln();
    let rungs = ((parameters.replicas as f64 * widening.max(1.0)).round() as usize).max(2);
    let temperatures: Vec<f64> = (0..rungs)
        .map(|rung| {
            let position = rung as f64 / (rungs - 1) as f64;
            coldest * (hottest / coldest).powf(position)
        })
        .collect();
    let acceptances: Vec<W::Acceptance> = temperatures
        .iter()
        .map(|&temperature| W::acceptance(temperature))
        .collect();
    let ladders = if parameters.cluster_rungs > 0 { 2 } else { 1 };
    let mut replicas: Vec<Replica<W>> = (0..rungs * ladders)
        .map(|_| match start {
            Some(start) => Replica::from_sides(graph, start),
            None => Replica::random(graph, &mut random),
        })
        .collect();
    let mut best = Best::new(0, &mut replicas[0], W::noise(light), &clock);
    // `ladder[rung]` is the replica at that rung's temperature; trades swap entries.
    let mut ladder: Vec<Vec<usize>> = (0..ladders)
        .map(|which| (which * rungs..(which + 1) * rungs).collect())
        .collect();
    let mut scratch = ClusterScratch::new(n);
    let mut blocks = BlockScratch::new(if parameters.block_moves { n } else { 0 });

    // A block move visits every node once more.
    let passes = if parameters.block_moves { 2 } else { 1 };
    let visits_per_round = (n * rungs * ladders * passes) as u64;
    // Look at the clock about every 65,536 visits, and at least once a round.
    let rounds_per_check = (65_536 / visits_per_round).max(1);
    let mut iterations = 0u64;
    let mut round = 0u64;
    loop {
        if limits
            .max_iterations
            .is_some_and(|budget| iterations + visits_per_round > budget)
        {
            break;
        }
        if round.is_multiple_of(rounds_per_check)
            && clock.should_stop(best.cut.to_f64(), &best.sides, report)
        {
            break;
        }
        for ladder in &ladder {
            for (rung, acceptance) in acceptances.iter().enumerate() {
                let index = ladder[rung];
                replicas[index].sweep(graph, acceptance, &mut random, &mut best, index);
                if parameters.block_moves {
                    block_move(graph, &mut replicas[index], &mut blocks, &mut best, index);
                }
            }
        }
        iterations += visits_per_round;
        if let [first, second] = &ladder[..] {
            for (&a, &b) in first.iter().zip(second).take(parameters.cluster_rungs) {
                cluster_move(
                    graph,
                    &mut replicas,
                    (a, b),
                    &mut random,
                    &mut scratch,
                    &mut best,
                );
            }
        }
        // Alternate between trading rungs (0, 1), (2, 3)... and (1, 2), (3, 4)...
        for ladder in &mut ladder {
            for low in ((round % 2) as usize..rungs - 1).step_by(2) {
                let (cold, hot) = (ladder[low], ladder[low + 1]);
                let exponent = (1.0 / temperatures[low] - 1.0 / temperatures[low + 1])
                    * (replicas[hot].cut - replicas[cold].cut).to_f64();
                if exponent >= 0.0 || random.unit() < exponent.exp() {
                    ladder.swap(low, low + 1);
                }
            }
        }
        round += 1;
    }

    // The best cut a replica passed through need not be a local optimum.
    Replica::from_sides(graph, &best.sides).descend(graph, &mut best, replicas.len());
    Solution {
        sides: best.sides,
        optimal: false,
        algorithm: "parallel-tempering",
        iterations,
        time_to_best: best.found_at,
    }
}
