//! The solver as the use case calls it: reduce the graph to its kernel, solve the kernel
//! exactly when it is small and heuristically otherwise, extend the answer to the whole graph.

use caseload_quadratic::{
    Growth, Kick, Limits, Qubo, Report, Snapshot, TabuParameters, tabu_search_from,
};

use crate::anneal::{AnnealParameters, population_annealing};
use crate::exhaustive::{EXHAUSTIVE_MAX_NODES, exhaustive};
use crate::graph::Graph;
use crate::reduce::reduce;
use crate::solution::Solution;
use crate::tempering::{TemperingParameters, parallel_tempering};

/// Kernels at least this dense (edges over pairs of nodes) get tabu search on the cut as a
/// QUBO, whatever their size, unless block moves suit them better (see
/// [`BLOCK_MIN_WEIGHT_SPREAD`]). On dense graphs with signed weights (500–1,000 nodes, densities
/// 0.3–0.5, weights −10…10) tempering ends 0.5–2.2 % below MQLib's BURER2002 at 10 s, and
/// tabu search above it; the G-set's densest graphs (6 %) stay with tempering, tuned on them.
pub const TABU_MIN_DENSITY: f64 = 0.1;

/// How much each phase of tabu search on a dense kernel that found no new best grows the next
/// one's perturbation (see [`TabuParameters::perturb_growth`]).
pub const TABU_PERTURB_GROWTH: f64 = 1.3;

/// The elite pool of tabu search on a dense kernel, and the chance that a phase starts on a
/// path between two of its solutions (see [`TabuParameters::elite`]). On dense graphs with
/// signed weights (900–1,100 nodes, densities 0.3–0.45, weights −10…10; not the ones
/// `scripts/dense-set.sh` writes) at 5 s, seeds 1–3 ended within 0.1 % of each other on 8 of
/// 10 graphs with them, against 0 of 10 with kicks of the best solution alone.
pub const TABU_ELITE: usize = 10;
pub const TABU_RELINK: f64 = 0.5;

/// How near (a fraction of the nodes) a phase end must be to a pool member to take only its
/// place (see [`TabuParameters::elite_near`]). On the same ten graphs at 10 s: seeds within
/// 0.1 % on 9 of 10 with 0.05, against 8 of 10 without.
pub const TABU_ELITE_NEAR: f64 = 0.05;

/// How tabu search on a dense kernel kicks a phase that does not start from the pool: the
/// best solution with random flips until the kick has grown to its most, then the phase's best
/// with each flip drawn from the five worth most (see [`Kick::GreedyWhenStuck`]).
pub const TABU_KICK: Kick = Kick::GreedyWhenStuck { among: 5 };

/// Kernels with more nodes than this are annealed, unless they are lattice-like: a ladder of
/// sixteen rungs stops trading replicas once the energy gaps between rungs, which grow with the
/// number of nodes, dwarf a replica's fluctuations (swap rates of 0 to 2 % on G55–G81).
pub const TEMPERING_MAX_NODES: usize = 4_000;

/// Kernels whose mean degree is at most this are lattice-like (the G-set's toroidal grids
/// have degree 4): tempered at any size, with two replicas per rung and cluster moves
/// between them. On denser graphs the disagreeing nodes of two replicas percolate and the
/// clusters degenerate into swapping whole replicas.
pub const LATTICE_MAX_MEAN_DEGREE: f64 = 4.5;

/// Kernels with at most this many nodes whose weights span scales (see
/// [`BLOCK_MIN_WEIGHT_SPREAD`]) are tempered with block moves, which cost `O(n²)` per replica
/// per round whatever the number of edges.
pub const BLOCK_MAX_NODES: usize = 1_000;

/// How far above the light edges' scale ([`Graph::mean_absolute_weight`]) the heavy edges'
/// ([`Graph::heavy_weight_scale`]) must be for block moves: about 100 on Biq Mac's Ising
/// chains, whose couplings decay with distance; 1 for the G-set's ±1 weights, 1.3 for
/// uniform weights, 1.6 for Gaussian ones (Biq Mac's toroidal grids, where the moves did
/// not help).
pub const BLOCK_MIN_WEIGHT_SPREAD: f64 = 3.0;

/// Kernels whose weights spread at least this much (see [`BLOCK_MIN_WEIGHT_SPREAD`]) have
/// weights of many sizes: lattice-like ones get a colder ladder, annealed ones a colder end,
/// both at [`MIXED_WEIGHT_COLDEST`].
pub const MIXED_WEIGHT_SPREAD: f64 = 1.2;

/// Where the ladder or the schedule ends, in units of [`Graph::mean_absolute_weight`], for
/// weights of many sizes: their gains come arbitrarily close to zero, and the cold end must
/// reach below the small ones.
pub const MIXED_WEIGHT_COLDEST: f64 = 0.1;

/// What [`solve`] did beside the solution, for the log.
#[derive(Debug, Clone, Copy)]
pub struct KernelSize {
    pub nodes: usize,
    pub edges: usize,
}

/// How a kernel is solved.
#[derive(Debug, Clone, PartialEq)]
pub enum Strategy {
    /// Every cut, for kernels of up to [`EXHAUSTIVE_MAX_NODES`] nodes.
    Exhaustive,
    /// Parallel tempering, with block moves where they help.
    Tempering(TemperingParameters),
    /// Population annealing (simulated annealing for a population of one).
    Annealing(AnnealParameters),
    /// Tabu search on the cut as a QUBO, for dense kernels.
    Tabu(TabuParameters),
}

impl Strategy {
    /// The strategy for a kernel, by its size and density (see [`TEMPERING_MAX_NODES`] and
    /// [`LATTICE_MAX_MEAN_DEGREE`]).
    pub fn for_kernel(graph: &Graph) -> Strategy {
        let n = graph.num_nodes();
        if n <= EXHAUSTIVE_MAX_NODES {
            return Strategy::Exhaustive;
        }
        let mean_degree = 2.0 * graph.num_edges() as f64 / n as f64;
        let spread = graph.heavy_weight_scale() / graph.mean_absolute_weight();
        let block_moves = n <= BLOCK_MAX_NODES && spread >= BLOCK_MIN_WEIGHT_SPREAD;
        if mean_degree / (n - 1) as f64 >= TABU_MIN_DENSITY && !block_moves {
            return Strategy::Tabu(TabuParameters {
                perturb_growth: Growth::WhileNoNewBest(TABU_PERTURB_GROWTH),
                elite: TABU_ELITE,
                relink: TABU_RELINK,
                elite_near: TABU_ELITE_NEAR,
                kick: TABU_KICK,
                ..TabuParameters::default()
            });
        }
        let mixed_weights = spread >= MIXED_WEIGHT_SPREAD;
        if mean_degree <= LATTICE_MAX_MEAN_DEGREE {
            // The ladder needs more rungs as the graph grows (measured on G67, G77 and G81:
            // 32 rungs beat 16 and 24 at 20,000 nodes), as the square root of its size.
            let rungs = (16.0 * (n as f64 / 5_000.0).sqrt()).clamp(16.0, 48.0) as usize;
            // With weights of one size on a grid of degree 4 (the G-set's) a flip gains a
            // multiple of twice the weight,
            // and a ladder reaching below a quarter of it only freezes sooner. With weights of
            // many sizes (Biq Mac's Gaussian grids) gains come arbitrarily close to zero, and
            // the cold end must reach below the small ones: t2g20_6666 at 2 s, natively,
            // reached its optimum on 6 seeds of 6 from 0.1, on none from 0.25.
            let coldest = if mixed_weights {
                MIXED_WEIGHT_COLDEST
            } else {
                TemperingParameters::default().coldest
            };
            return Strategy::Tempering(TemperingParameters {
                replicas: rungs,
                cluster_rungs: rungs / 2,
                coldest,
                ..TemperingParameters::default()
            });
        }
        if n <= TEMPERING_MAX_NODES {
            return Strategy::Tempering(TemperingParameters {
                block_moves,
                ..TemperingParameters::default()
            });
        }
        let cold = if mixed_weights {
            MIXED_WEIGHT_COLDEST
        } else {
            AnnealParameters::default().cold
        };
        Strategy::Annealing(AnnealParameters {
            cold,
            ..AnnealParameters::default()
        })
    }
}

/// Reduces the graph to its kernel (see [`crate::reduce`]), solves the kernel as
/// [`Strategy::for_kernel`] says, and extends the answer to the whole graph.
///
/// A `start` (a warm start: one side per node of the whole graph) is where the search
/// begins, on the kernel's nodes; the answer is never a smaller cut than the start's.
pub fn solve(
    graph: &Graph,
    start: Option<&[bool]>,
    limits: &Limits,
    report: &mut Report<'_>,
) -> (Solution, KernelSize) {
    let kernel = reduce(graph);
    let size = KernelSize {
        nodes: kernel.graph.num_nodes(),
        edges: kernel.graph.num_edges(),
    };
    let constant = kernel.constant;
    let start = start.filter(|start| start.len() == graph.num_nodes());
    let kernel_start: Option<Vec<bool>> =
        start.map(|start| kernel.original.iter().map(|&node| start[node]).collect());
    let mut report_whole = |snapshot: &Snapshot<'_>| {
        report(&Snapshot {
            best: snapshot.best + constant,
            fraction: snapshot.fraction,
            solution: &|| kernel.extend(&(snapshot.solution)()),
        })
    };
    let solution = solve_kernel(
        &kernel.graph,
        &Strategy::for_kernel(&kernel.graph),
        kernel_start.as_deref(),
        limits,
        &mut report_whole,
    );
    let solution = Solution {
        sides: kernel.extend(&solution.sides),
        ..solution
    };
    match start {
        Some(start) if graph.cut_value(start) > graph.cut_value(&solution.sides) => {
            let solution = Solution {
                sides: start.to_vec(),
                optimal: false,
                time_to_best: std::time::Duration::ZERO,
                ..solution
            };
            (solution, size)
        }
        _ => (solution, size),
    }
}

/// Solves a graph with the given strategy, from `start` where the strategy searches from one.
pub fn solve_kernel(
    graph: &Graph,
    strategy: &Strategy,
    start: Option<&[bool]>,
    limits: &Limits,
    report: &mut Report<'_>,
) -> Solution {
    match strategy {
        Strategy::Exhaustive => exhaustive(graph, limits, report),
        Strategy::Annealing(parameters) => {
            population_annealing(graph, start, limits, parameters, report)
        }
        Strategy::Tempering(parameters) => {
            parallel_tempering(graph, start, limits, parameters, report)
        }
        Strategy::Tabu(parameters) => tabu(graph, start, limits, parameters, report),
    }
}

/// The cut as a QUBO to minimise: a cut is `Σ w_ij·(x_i + x_j − 2·x_i·x_j)` over the edges,
/// so its negation has `linear[i] = −Σ_j w_ij` and a weight of `2·w_ij` per edge.
pub fn cut_qubo(graph: &Graph) -> Qubo {
    let mut pairs = Vec::with_capacity(graph.num_edges());
    let linear = (0..graph.num_nodes())
        .map(|i| {
            let mut bias = 0.0;
            for (j, weight) in graph.neighbours(i) {
                bias -= weight;
                if i < j {
                    pairs.push((i, j, 2.0 * weight));
                }
            }
            bias
        })
        .collect();
    Qubo::new(linear, &pairs)
}

fn tabu(
    graph: &Graph,
    start: Option<&[bool]>,
    limits: &Limits,
    parameters: &TabuParameters,
    report: &mut Report<'_>,
) -> Solution {
    let qubo = cut_qubo(graph);
    let found = tabu_search_from(&qubo, start, limits, parameters, &mut |snapshot| {
        report(&Snapshot {
            best: -snapshot.best,
            ..*snapshot
        })
    });
    Solution {
        sides: found.x,
        optimal: false,
        algorithm: "tabu-search",
        iterations: found.iterations,
        time_to_best: found.time_to_best,
    }
}
