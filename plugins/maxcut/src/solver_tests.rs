//! The solver's tests, run natively: the bookkeeping every heuristic relies on, the exact
//! parts against brute force, and determinism.

use std::time::{Duration, Instant};

use caseload_quadratic::Snapshot;

use crate::anneal::{AnnealParameters, population_annealing};
use crate::clock::Clock;
use crate::exhaustive::exhaustive;
use crate::graph::Graph;
use crate::metropolis::{Best, BlockScratch, ClusterScratch, Replica, block_move, cluster_move};
use crate::reduce::reduce;
use crate::solution::Solution;
use crate::solver::{Strategy, cut_qubo, solve, solve_kernel};
use crate::tempering::{TemperingParameters, parallel_tempering};
use crate::weight::Weight;
use caseload_quadratic::Limits;
use caseload_quadratic::SplitMix64;
use caseload_quadratic::TabuParameters;

/// A random graph on `n` nodes with edge probability `density` and weights that are negative,
/// fractional or both.
fn random_graph(n: usize, density: f64, seed: u64) -> Graph {
    let mut random = SplitMix64::new(seed);
    let mut edges = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if random.unit() < density {
                edges.push((i, j, random_weight(&mut random)));
            }
        }
    }
    Graph::from_edges(n, &edges)
}

/// Quarters from -3.5 to 3.5, never zero.
fn random_weight(random: &mut SplitMix64) -> f64 {
    let quarters = random.below(28) as f64 - 14.0;
    if quarters >= 0.0 {
        (quarters + 1.0) / 4.0
    } else {
        quarters / 4.0
    }
}

/// A sparse graph full of nodes of degree one and two (paths, pendant trees, subdivided
/// edges) around a small dense core, so that the reductions have work to do.
fn sparse_graph(n: usize, seed: u64) -> Graph {
    let mut random = SplitMix64::new(seed);
    let mut edges = Vec::new();
    let core = 6.min(n);
    for i in 0..core {
        for j in i + 1..core {
            if random.unit() < 0.6 {
                edges.push((i, j, random_weight(&mut random)));
            }
        }
    }
    for node in core..n {
        // Attach to one or two earlier nodes: leaves, paths and series chains.
        let first = random.below(node as u64) as usize;
        edges.push((node, first, random_weight(&mut random)));
        if random.unit() < 0.5 {
            let second = random.below(node as u64) as usize;
            edges.push((node, second, random_weight(&mut random)));
        }
    }
    Graph::from_edges(n, &edges)
}

fn brute_force(graph: &Graph) -> f64 {
    let n = graph.num_nodes();
    (0..1u64 << n)
        .map(|mask| {
            let sides: Vec<bool> = (0..n).map(|bit| mask >> bit & 1 == 1).collect();
            graph.cut_value(&sides)
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

fn limits(seed: u64, max_iterations: Option<u64>) -> Limits {
    Limits {
        deadline: Instant::now() + Duration::from_secs(60),
        max_iterations,
        seed,
    }
}

fn never_cancelled(_: &Snapshot<'_>) -> bool {
    false
}

fn assert_close(found: f64, expected: f64, context: &str) {
    assert!(
        (found - expected).abs() < 1e-9,
        "{context}: {found} instead of {expected}"
    );
}

#[test]
fn incremental_gains_equal_recomputed_gains() {
    for seed in 0..5 {
        let graph = random_graph(40, 0.3, seed);
        let mut random = SplitMix64::new(seed + 100);
        let mut sides: Vec<bool> = (0..40).map(|_| random.next_u64() & 1 == 1).collect();
        let mut gains = graph.flip_gains(&sides);
        let mut cut = graph.cut_value(&sides);
        for _ in 0..2_000 {
            let node = random.below(40) as usize;
            cut += gains[node];
            graph.flip(&mut sides, &mut gains, node);
        }
        for (incremental, recomputed) in gains.iter().zip(graph.flip_gains(&sides)) {
            assert_close(*incremental, recomputed, "gain");
        }
        assert_close(cut, graph.cut_value(&sides), "cut");
    }
}

#[test]
fn sweeps_keep_the_cut_and_the_best_in_step() {
    // Fractional weights in floats, whole ones in whole numbers (`crate::weight`).
    let fractional = random_graph(50, 0.2, 7);
    assert!(!fractional.has_small_whole_weights());
    check_sweeps::<f64>(&fractional);
    let whole = random_graph_integral(50, 0.2, 7);
    assert!(whole.has_small_whole_weights());
    check_sweeps::<i32>(&whole);
}

/// Whatever a replica does at whatever temperature, its gains are its sides' gains, its cut
/// is its sides' cut, and the best is a cut some replica had.
fn check_sweeps<W: Weight>(graph: &Graph) {
    let n = graph.num_nodes();
    let mut random = SplitMix64::new(1);
    let clock = Clock::new(Instant::now() + Duration::from_secs(60));
    let acceptances: Vec<W::Acceptance> = [0.1, 1.0, 5.0].map(W::acceptance).into();
    let mut replicas: Vec<Replica<W>> = (0..3)
        .map(|_| Replica::random(graph, &mut random))
        .collect();
    let mut best = Best::new(0, &mut replicas[0], W::noise(1.0), &clock);
    let mut scratch = ClusterScratch::new(n);
    let check = |replica: &Replica<W>, context: &str| {
        let sides = replica.sides();
        assert_close(replica.cut.to_f64(), graph.cut_value(&sides), context);
        for (kept, recomputed) in replica.gains().into_iter().zip(graph.flip_gains(&sides)) {
            assert_close(kept.to_f64(), recomputed, context);
        }
    };
    for round in 0..300 {
        for (index, acceptance) in acceptances.iter().enumerate() {
            // Trade replicas now and then, as tempering does.
            let index = (index + round / 7) % 3;
            replicas[index].sweep(graph, acceptance, &mut random, &mut best, index);
            check(&replicas[index], "after a sweep");
        }
        // A cluster move between two replicas changes each cut but not their sum.
        let before = (replicas[1].cut + replicas[2].cut).to_f64();
        cluster_move(
            graph,
            &mut replicas,
            (1, 2),
            &mut random,
            &mut scratch,
            &mut best,
        );
        let after = (replicas[1].cut + replicas[2].cut).to_f64();
        assert_close(after, before, "sum of the pair");
        for replica in &replicas {
            check(replica, "after a cluster move");
        }
        assert_close(best.cut.to_f64(), graph.cut_value(&best.sides), "best cut");
        assert!(
            replicas
                .iter()
                .all(|replica| replica.cut <= best.cut + W::noise(1.0))
        );
    }
}

#[test]
fn whole_number_chances_follow_the_boltzmann_factor() {
    // The table the whole-number kernel takes losing moves by, and how often it takes them.
    for temperature in [0.25, 1.5, 7.0] {
        let thresholds = <i32 as Weight>::acceptance(temperature);
        let mut random = SplitMix64::new(3);
        for loss in 1..40 {
            let expected = (-f64::from(loss) / temperature).exp();
            let draws = 200_000;
            let taken = (0..draws)
                .filter(|_| !i32::refuses(-loss, &thresholds, &mut random))
                .count() as f64;
            let tolerance = 5.0 * (expected / f64::from(draws)).sqrt() + 1e-9;
            assert!(
                (taken / f64::from(draws) - expected).abs() <= tolerance,
                "T = {temperature}, loss {loss}: taken {taken} of {draws}, expected {expected}"
            );
        }
    }
}

#[test]
fn exhaustive_matches_brute_force() {
    for seed in 0..20 {
        let graph = random_graph(3 + (seed as usize % 10), 0.6, seed);
        let solution = exhaustive(&graph, &limits(seed, None), &mut never_cancelled);
        assert!(solution.optimal);
        assert_close(
            graph.cut_value(&solution.sides),
            brute_force(&graph),
            "exhaustive",
        );
    }
}

#[test]
fn reductions_keep_the_maximum_cut() {
    for seed in 0..30 {
        let graph = sparse_graph(8 + seed as usize % 10, seed);
        let kernel = reduce(&graph);
        assert!(kernel.removed() > 0, "the last node added always goes");
        // The kernel's best cut plus the constant is the graph's best cut...
        assert_close(
            brute_force(&kernel.graph) + kernel.constant,
            brute_force(&graph),
            &format!("seed {seed}"),
        );
        // ...and every kernel cut extends to a cut worth exactly that much more.
        let mut random = SplitMix64::new(seed);
        for _ in 0..20 {
            let kernel_sides: Vec<bool> = (0..kernel.graph.num_nodes())
                .map(|_| random.next_u64() & 1 == 1)
                .collect();
            let sides = kernel.extend(&kernel_sides);
            assert_close(
                graph.cut_value(&sides),
                kernel.graph.cut_value(&kernel_sides) + kernel.constant,
                &format!("seed {seed}, extended cut"),
            );
        }
    }
}

#[test]
fn a_reducible_graph_is_solved_exactly_whatever_its_size() {
    // A 2,000-node cycle of positive and negative weights reduces to nothing: its best cut
    // is proven, far beyond the reach of enumeration. An odd cycle of unit weights cuts all
    // edges but one.
    let n = 2_001;
    let edges: Vec<(usize, usize, f64)> = (0..n).map(|i| (i, (i + 1) % n, 1.0)).collect();
    let graph = Graph::from_edges(n, &edges);
    let (solution, kernel) = solve(&graph, None, &limits(1, None), &mut never_cancelled);
    assert_eq!(kernel.nodes, 0);
    assert!(solution.optimal);
    assert_eq!(graph.cut_value(&solution.sides), (n - 1) as f64);
}

/// The heuristics on small graphs whose optimum brute force knows.
fn check_heuristic(run: impl Fn(&Graph, &Limits) -> Solution, name: &str) {
    for seed in 0..6 {
        let graph = random_graph(16, 0.5, 200 + seed);
        let solution = run(&graph, &limits(seed, Some(400_000)));
        assert!(
            (390_000..=400_000).contains(&solution.iterations),
            "{name} spends its budget, not more: {}",
            solution.iterations
        );
        assert_close(
            graph.cut_value(&solution.sides),
            brute_force(&graph),
            &format!("{name}, seed {seed}"),
        );
    }
}

#[test]
fn tempering_finds_small_optima() {
    check_heuristic(
        |graph, limits| {
            parallel_tempering(
                graph,
                None,
                limits,
                &TemperingParameters::default(),
                &mut never_cancelled,
            )
        },
        "tempering",
    );
}

/// A ring whose couplings decay with distance, as in Biq Mac's Ising chains: a few heavy
/// edges between neighbours, many light ones across.
fn decaying_ring(n: usize, seed: u64) -> Graph {
    let mut random = SplitMix64::new(seed);
    let mut edges = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let distance = (j - i).min(n - (j - i)) as f64;
            let weight = ((random.unit() * 2.0 - 1.0) * 100_000.0 / distance.powf(2.5)).round();
            edges.push((i, j, weight));
        }
    }
    Graph::from_edges(n, &edges)
}

#[test]
fn the_ladder_spans_light_and_heavy_edges() {
    // Weights of one size: both scales are that size, and the ladder is as the parameters say.
    let uniform = Graph::from_edges(4, &[(0, 1, 3.0), (1, 2, -3.0), (2, 3, 3.0)]);
    assert_eq!(uniform.mean_absolute_weight(), 3.0);
    assert_eq!(uniform.heavy_weight_scale(), 3.0);
    // Heavy-tailed weights: the heavy scale sits far above the mean.
    let ring = decaying_ring(20, 3);
    assert!(ring.heavy_weight_scale() > 5.0 * ring.mean_absolute_weight());
    // Tempering over the widened ladder still finds the optimum of small rings.
    assert_tempering_solves_rings(16, &TemperingParameters::default());
}

/// Tempering with these parameters finds the optimum of decaying rings of `n` nodes.
fn assert_tempering_solves_rings(n: usize, parameters: &TemperingParameters) {
    for seed in 0..4 {
        let ring = decaying_ring(n, seed);
        let solution = parallel_tempering(
            &ring,
            None,
            &limits(seed, Some(400_000)),
            parameters,
            &mut never_cancelled,
        );
        assert_close(
            ring.cut_value(&solution.sides),
            brute_force(&ring),
            &format!("ring of {n}, seed {seed}"),
        );
    }
}

#[test]
fn block_moves_flip_the_best_block() {
    check_block_moves::<f64>(&random_graph(14, 0.6, 5), 0);
    check_block_moves::<f64>(&decaying_ring(14, 6), 1);
    check_block_moves::<i32>(&random_graph_integral(14, 0.6, 5), 2);
}

/// Each move is checked against every block's gain recomputed from scratch, so the gains the
/// replica keeps through block moves and sweeps must stay right too.
fn check_block_moves<W: Weight>(graph: &Graph, which: u64) {
    let clock = Clock::new(Instant::now() + Duration::from_secs(60));
    let shaking = W::acceptance(2.0);
    let n = graph.num_nodes();
    let mut random = SplitMix64::new(which);
    let mut replica: Replica<W> = Replica::random(graph, &mut random);
    let mut best = Best::new(0, &mut replica, W::noise(1.0), &clock);
    let mut scratch = BlockScratch::new(n);
    for round in 0..40 {
        let sides = replica.sides();
        let before = graph.cut_value(&sides);
        let mut best_gain = 0.0f64;
        for start in 0..n {
            for end in start + 1..=n {
                let mut flipped = sides.clone();
                for side in &mut flipped[start..end] {
                    *side = !*side;
                }
                best_gain = best_gain.max(graph.cut_value(&flipped) - before);
            }
        }
        let moved = block_move(graph, &mut replica, &mut scratch, &mut best, 0);
        let context = format!("graph {which}, round {round}");
        assert_eq!(moved, best_gain > 1e-9, "{context}");
        assert_close(replica.cut.to_f64(), before + best_gain, &context);
        assert_close(
            replica.cut.to_f64(),
            graph.cut_value(&replica.sides()),
            &context,
        );
        assert!(
            best.cut.to_f64() >= replica.cut.to_f64() - 1e-9,
            "{context}"
        );
        // Shake the replica so that the next move has work to do.
        replica.sweep(graph, &shaking, &mut random, &mut best, 0);
    }
}

#[test]
fn block_moves_solve_decaying_chains() {
    assert_tempering_solves_rings(
        18,
        &TemperingParameters {
            block_moves: true,
            ..TemperingParameters::default()
        },
    );
}

#[test]
fn annealing_finds_small_optima() {
    let parameters = AnnealParameters {
        population: 4,
        ..AnnealParameters::default()
    };
    check_heuristic(
        |graph, limits| {
            population_annealing(graph, None, limits, &parameters, &mut never_cancelled)
        },
        "annealing",
    );
}

#[test]
fn tabu_search_finds_small_optima() {
    check_heuristic(
        |graph, limits| {
            solve_kernel(
                graph,
                &Strategy::Tabu(TabuParameters::default()),
                None,
                limits,
                &mut never_cancelled,
            )
        },
        "tabu",
    );
}

#[test]
fn the_cut_qubo_is_the_negated_cut() {
    let graph = random_graph_integral(30, 0.4, 5);
    let qubo = cut_qubo(&graph);
    let mut random = SplitMix64::new(1);
    for _ in 0..20 {
        let sides: Vec<bool> = (0..30).map(|_| random.next_u64() & 1 == 1).collect();
        assert_close(-qubo.value(&sides), graph.cut_value(&sides), "a random cut");
    }
}

#[test]
fn cluster_moves_find_small_optima() {
    // A ring with chords of mixed signs: sparse enough to count as a lattice.
    for seed in 0..4 {
        let mut random = SplitMix64::new(seed);
        let n = 18;
        let edges: Vec<(usize, usize, f64)> = (0..n)
            .flat_map(|i| [(i, (i + 1) % n), (i, (i + 5) % n)])
            .map(|(i, j)| (i, j, random_weight(&mut random)))
            .collect();
        let graph = Graph::from_edges(n, &edges);
        let strategy = Strategy::Tempering(TemperingParameters {
            cluster_rungs: 8,
            ..TemperingParameters::default()
        });
        let solution = solve_kernel(
            &graph,
            &strategy,
            None,
            &limits(seed, Some(400_000)),
            &mut never_cancelled,
        );
        assert_close(
            graph.cut_value(&solution.sides),
            brute_force(&graph),
            &format!("seed {seed}"),
        );
    }
}

#[test]
fn each_kind_of_kernel_gets_its_strategy() {
    let ring = |n: usize| {
        Graph::from_edges(
            n,
            &(0..n)
                .flat_map(|i| [(i, (i + 1) % n, 1.0), (i, (i + 2) % n, 1.0)])
                .collect::<Vec<_>>(),
        )
    };
    let fractional = {
        let edges: Vec<(usize, usize, f64)> = (0..100)
            .flat_map(|i| (1..4).map(move |k| (i, (i + k) % 100, 0.5)))
            .collect();
        Graph::from_edges(100, &edges)
    };
    let check = |graph: &Graph, expected: &str| {
        let strategy = Strategy::for_kernel(graph);
        let described = match &strategy {
            Strategy::Exhaustive => "exhaustive".to_owned(),
            Strategy::Tempering(parameters) => format!(
                "tempering {} rungs from {}, {} with clusters{}",
                parameters.replicas,
                parameters.coldest,
                parameters.cluster_rungs,
                if parameters.block_moves {
                    ", block moves"
                } else {
                    ""
                }
            ),
            Strategy::Annealing(parameters) => format!("annealing to {}", parameters.cold),
            Strategy::Tabu(_) => "tabu".to_owned(),
        };
        assert_eq!(described, expected, "{} nodes", graph.num_nodes());
    };
    check(&random_graph(20, 0.5, 1), "exhaustive");
    // Degree 4: lattice-like, with more rungs as the ring grows.
    check(
        &ring(1_000),
        "tempering 16 rungs from 0.25, 8 with clusters",
    );
    check(
        &ring(20_000),
        "tempering 32 rungs from 0.25, 16 with clusters",
    );
    // A grid with weights of many sizes gets a colder ladder.
    let mut random = SplitMix64::new(4);
    let mixed: Vec<(usize, usize, f64)> = (0..400)
        .flat_map(|i| [(i, (i + 1) % 400), (i, (i + 20) % 400)])
        .map(|(i, j)| (i, j, (random.unit() - 0.5) * 1_000.0))
        .collect();
    check(
        &Graph::from_edges(400, &mixed),
        "tempering 16 rungs from 0.1, 8 with clusters",
    );
    // Dense (a tenth of the pairs or more): tabu search.
    check(&random_graph(200, 0.2, 1), "tabu");
    check(&random_graph_integral(600, 0.15, 2), "tabu");
    // Denser than a lattice: tempering up to 4,000 nodes, whatever the weights, and
    // annealing above.
    check(
        &random_graph(300, 0.05, 1),
        "tempering 16 rungs from 0.25, 0 with clusters",
    );
    check(&fractional, "tempering 16 rungs from 0.25, 0 with clusters");
    // Couplings that decay with distance: block moves, up to a thousand nodes.
    check(
        &decaying_ring(300, 1),
        "tempering 16 rungs from 0.25, 0 with clusters, block moves",
    );
    // Weights from -3 to 3 spread 1.17: still one size to the schedule. Quarters from -3.5
    // to 3.5 spread 1.29, and the anneal ends colder.
    check(&random_graph_integral(4_500, 0.002, 1), "annealing to 0.2");
    check(&random_graph(4_500, 0.002, 1), "annealing to 0.1");
}

/// Like [`random_graph`], with weights from -3 to 3, never zero.
fn random_graph_integral(n: usize, density: f64, seed: u64) -> Graph {
    let mut random = SplitMix64::new(seed);
    let mut edges = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if random.unit() < density {
                let weight = random.below(6) as f64 - 3.0;
                edges.push((i, j, if weight >= 0.0 { weight + 1.0 } else { weight }));
            }
        }
    }
    Graph::from_edges(n, &edges)
}

#[test]
fn whole_numbers_only_where_the_weights_fit_them() {
    let graph = |weight: f64| Graph::from_edges(3, &[(0, 1, 1.0), (1, 2, weight)]);
    assert!(graph(-64.0).has_small_whole_weights());
    assert!(!graph(65.0).has_small_whole_weights());
    assert!(!graph(0.5).has_small_whole_weights());
    assert!(!graph(1e12).has_small_whole_weights());
}

#[test]
fn runs_repeat_exactly_for_a_seed_and_budget() {
    // Whole weights run in `i32`, fractional ones in `f64`.
    for graph in [
        random_graph_integral(120, 0.05, 3),
        random_graph(120, 0.05, 3),
    ] {
        check_runs_repeat(&graph);
    }
}

fn check_runs_repeat(graph: &Graph) {
    let tempering = TemperingParameters::default();
    let strategies = [
        Strategy::Tempering(tempering.clone()),
        Strategy::Tempering(TemperingParameters {
            cluster_rungs: 8,
            ..tempering.clone()
        }),
        Strategy::Tempering(TemperingParameters {
            block_moves: true,
            ..tempering
        }),
        Strategy::Annealing(AnnealParameters::default()),
    ];
    for strategy in &strategies {
        let run = || {
            solve_kernel(
                graph,
                strategy,
                None,
                &limits(9, Some(300_000)),
                &mut never_cancelled,
            )
        };
        let (first, second) = (run(), run());
        assert_eq!(first.sides, second.sides, "{strategy:?}");
        assert_eq!(first.iterations, second.iterations, "{strategy:?}");
        assert!(first.iterations <= 300_000, "{strategy:?}");
    }
}

#[test]
fn cancellation_stops_the_search() {
    let graph = random_graph(300, 0.05, 8);
    let started = Instant::now();
    let (solution, _) = solve(&graph, None, &limits(1, None), &mut |_| true);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(solution.sides.len(), 300);
}

#[test]
fn reports_carry_a_cut_of_the_whole_graph_of_the_value_reported() {
    // Pendant nodes reduce away: the search runs on the kernel, and what it reports is
    // extended to the whole graph.
    let graph = sparse_graph(400, 3);
    let mut reports = 0;
    let (_, kernel) = solve(&graph, None, &limits(1, None), &mut |snapshot| {
        reports += 1;
        let sides = (snapshot.solution)();
        assert_eq!(sides.len(), graph.num_nodes());
        assert_close(graph.cut_value(&sides), snapshot.best, "the reported cut");
        reports == 3
    });
    assert!(kernel.nodes < graph.num_nodes());
    assert_eq!(reports, 3);
}

#[test]
fn a_warm_start_is_never_lost() {
    // Every strategy, from a start it cannot see the end of: cancelled at once, and after a
    // short budget.
    let sparse = random_graph(300, 0.02, 4);
    let dense = random_graph(120, 0.3, 5);
    let grid = Graph::from_edges(
        400,
        &(0..400)
            .flat_map(|i| [(i, (i + 1) % 400, 1.0), (i, (i + 20) % 400, -1.0)])
            .collect::<Vec<_>>(),
    );
    for graph in [&sparse, &dense, &grid] {
        let (first, _) = solve(graph, None, &limits(1, Some(50_000)), &mut never_cancelled);
        let start_cut = graph.cut_value(&first.sides);
        let (kept, _) = solve(graph, Some(&first.sides), &limits(2, None), &mut |_| true);
        assert!(graph.cut_value(&kept.sides) >= start_cut);
        let (more, _) = solve(
            graph,
            Some(&first.sides),
            &limits(2, Some(200_000)),
            &mut never_cancelled,
        );
        assert!(graph.cut_value(&more.sides) >= start_cut);
    }
    for strategy in [
        Strategy::Annealing(AnnealParameters::default()),
        Strategy::Tempering(TemperingParameters::default()),
    ] {
        let (first, _) = solve(
            &sparse,
            None,
            &limits(1, Some(20_000)),
            &mut never_cancelled,
        );
        let solution = solve_kernel(
            &sparse,
            &strategy,
            Some(&first.sides),
            &limits(3, Some(200_000)),
            &mut never_cancelled,
        );
        assert!(sparse.cut_value(&solution.sides) >= sparse.cut_value(&first.sides));
    }
}
