//! Population annealing (Hukushima & Iba 2003; Machta 2010) for graphs too large for
//! [`crate::tempering`] to keep its ladder connected.
//!
//! A population of replicas cools together, geometrically from a hot temperature to a cold
//! one, by Metropolis sweeps. At each step down in temperature the population is resampled
//! by each replica's Boltzmann weight for the step, `exp((1/T_new - 1/T_old) · cut)`: replicas
//! in deeper valleys are copied, the others dropped, and the population's size stays the
//! same. Annealing alone settles in whichever valley the early cooling picked, and on the
//! G-set's heavy-tailed ±1 graphs (G59, G64) the valley is chosen by high-degree nodes that
//! freeze early; a population holds many such choices and resampling moves the effort to the
//! better ones as they separate. On G64 at 20 s natively, 24 replicas gave a median of 8,730
//! over 12 seeds where one anneal gave 8,701 over 22 (best known 8,751); G55, G59 and G70
//! came out the same or better over 4 seeds. A population of one is simulated annealing
//! (Kirkpatrick, Gelatt & Vecchi 1983).
//!
//! With an iteration budget (`max_iterations`, one iteration per node visited) the
//! temperature follows the visits made, so a run repeats exactly for its seed, natively or in
//! the sandbox. Without one it follows the clock to the deadline. Resampling's weights go
//! through `exp`, which comes from glibc natively and from wasi-libc in the sandbox: a last-bit
//! difference between the two could move a copy only when the running sum lands within that
//! bit of a whole number, and the bench checks that both return the same partition.

use std::time::Duration;

use crate::clock::Clock;
use crate::graph::Graph;
use crate::metropolis::{Best, Replica};
use crate::solution::Solution;
use crate::weight::Weight;
use caseload_quadratic::SplitMix64;
use caseload_quadratic::{Limits, Report};

/// The schedule. The cold end is in units of [`Graph::mean_absolute_weight`], the hot end in
/// units of [`Graph::heavy_weight_scale`] (the same for weights of one size), so that scaling
/// every weight by a constant changes nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnealParameters {
    /// Where the anneal starts: most losing moves are taken.
    pub hot: f64,
    /// Where it ends: a descent that drifts along plateaus.
    pub cold: f64,
    /// Replicas that cool together; fewer where they would not fit in
    /// [`POPULATION_MAX_BYTES`].
    pub population: usize,
}

impl Default for AnnealParameters {
    /// For weights of one size. With ±1 weights a flip gains a whole number; at 0.2 a loss
    /// of 1 is taken 0.7 % of the time and a loss of 2 once in 22,000 tries (in whole
    /// numbers, see [`crate::weight`]), so below it the cut barely moves. From 3 to 0.1
    /// instead, one anneal found G59's best at three quarters of the time (about 0.23); from
    /// 1.5 to 0.2 the search is still improving at the end. At 20 s natively the medians
    /// moved by less than the seeds' spread: G59 6,056 to 6,062 over 11 seeds (best known
    /// 6,086), G64 8,711 to 8,704 over 8 (8,751). Of populations of 16, 24, 48 and 96 on
    /// G64 at 20 s (seeds 1–12: medians 8,713, 8,727.5, 8,711.5 and 8,713.5), 24 came out
    /// best; so did resampling each 0.5 % against each 1 % or 0.25 % (8,722.5, 8,724).
    fn default() -> AnnealParameters {
        AnnealParameters {
            hot: 1.5,
            cold: 0.2,
            population: 24,
        }
    }
}

/// The population's gains and sides stay within this many bytes, so that a graph of millions
/// of nodes anneals fewer replicas rather than running out of guest memory.
pub const POPULATION_MAX_BYTES: usize = 64 << 20;

/// The population is resampled, and the temperature lowered, each time the schedule's
/// temperature has fallen by this fraction since the last step: about 400 steps from 1.5 to
/// 0.2.
const STEP: f64 = 0.005;

/// Where the schedule stands: by visits against the budget, or by the clock.
#[derive(Debug, Clone, Copy)]
enum Pace {
    Iterations { budget: u64 },
    Clock { budget: Duration },
}

/// Anneals the population until the budget, the deadline or cancellation, and returns the best
/// cut seen. Gains are kept in whole numbers where the weights allow (see [`crate::weight`]).
///
/// With a `start` (a warm start), every replica begins from it, and the schedule from
/// [`WARM_HOT`] if that is colder than its own hot end: from the hot end the start would be
/// forgotten in the first sweeps.
pub fn population_annealing(
    graph: &Graph,
    start: Option<&[bool]>,
    limits: &Limits,
    parameters: &AnnealParameters,
    report: &mut Report<'_>,
) -> Solution {
    if graph.has_small_whole_weights() {
        annealing_in::<i32>(graph, start, limits, parameters, report)
    } else {
        annealing_in::<f64>(graph, start, limits, parameters, report)
    }
}

/// Where an anneal from a warm start begins, in units of [`Graph::mean_absolute_weight`]: with
/// ±1 weights a loss of 2 is taken 1.8 % of the time, enough to rearrange the start's
/// clusters, too little to melt them.
pub const WARM_HOT: f64 = 0.5;

fn annealing_in<W: Weight>(
    graph: &Graph,
    start: Option<&[bool]>,
    limits: &Limits,
    parameters: &AnnealParameters,
    report: &mut Report<'_>,
) -> Solution {
    let n = graph.num_nodes();
    let mut clock = Clock::new(limits.deadline);
    let mut random = SplitMix64::new(limits.seed);
    let unit = graph.mean_absolute_weight();
    let hot = parameters.hot * graph.heavy_weight_scale();
    let (hot, cold) = match start {
        Some(_) => (hot.min(WARM_HOT * unit), parameters.cold * unit),
        None => (hot, parameters.cold * unit),
    };
    let population = parameters
        .population
        .min(POPULATION_MAX_BYTES / Replica::<W>::bytes(n.max(1)))
        .max(1);
    let pace = match limits.max_iterations {
        Some(budget) => Pace::Iterations { budget },
        None => Pace::Clock {
            budget: limits.deadline.saturating_duration_since(clock.started),
        },
    };
    let visits_per_sweep = (n * population) as u64;
    // Look at the clock about every 65,536 visits, and at least once a sweep of the whole
    // population.
    let sweeps_per_check = (65_536 / visits_per_sweep.max(1)).max(1);

    let mut replicas: Vec<Replica<W>> = (0..population)
        .map(|_| match start {
            Some(start) => Replica::from_sides(graph, start),
            None => Replica::random(graph, &mut random),
        })
        .collect();
    let mut best = Best::new(0, &mut replicas[0], W::noise(unit), &clock);
    let mut resampling = Resampling::new(population);
    let mut temperature = hot;
    let mut acceptance = W::acceptance(temperature);
    let mut iterations = 0u64;
    let mut sweep = 0u64;
    // The fraction of the schedule done, by the budget or the clock.
    let mut done = 0.0;
    loop {
        if limits
            .max_iterations
            .is_some_and(|budget| iterations + visits_per_sweep > budget)
        {
            break;
        }
        if sweep.is_multiple_of(sweeps_per_check) {
            if clock.should_stop(best.cut.to_f64(), &best.sides, report) {
                break;
            }
            done = match pace {
                Pace::Iterations { budget } => iterations as f64 / budget as f64,
                Pace::Clock { budget } => {
                    clock.started.elapsed().as_secs_f64() / budget.as_secs_f64()
                }
            };
            let scheduled = hot * (cold / hot).powf(done.min(1.0));
            if scheduled <= temperature * (1.0 - STEP) {
                resampling.resample(
                    &mut replicas,
                    1.0 / scheduled - 1.0 / temperature,
                    &mut random,
                    &mut best,
                );
                temperature = scheduled;
                acceptance = W::acceptance(temperature);
            }
        }
        for (index, replica) in replicas.iter_mut().enumerate() {
            replica.sweep(graph, &acceptance, &mut random, &mut best, index);
        }
        iterations += visits_per_sweep;
        sweep += 1;
    }
    // Near the cold end each replica is nearly a local optimum; finish them. A run cancelled
    // while the population is still hot skips this, since a descent from there costs many
    // sweeps of every replica.
    if done >= 0.95 {
        for (index, replica) in replicas.iter_mut().enumerate() {
            replica.descend(graph, &mut best, index);
        }
    }
    // The best cut a replica passed through need not be a local optimum.
    Replica::from_sides(graph, &best.sides).descend(graph, &mut best, population);
    Solution {
        sides: best.sides,
        optimal: false,
        algorithm: "population-annealing",
        iterations,
        time_to_best: best.found_at,
    }
}

/// What resampling needs between steps, so that it allocates nothing.
struct Resampling {
    weights: Vec<f64>,
    copies: Vec<usize>,
}

impl Resampling {
    fn new(population: usize) -> Resampling {
        Resampling {
            weights: vec![0.0; population],
            copies: vec![0; population],
        }
    }

    /// Replaces the population by one drawn in proportion to `exp(step · cut)`, by systematic
    /// resampling (one uniform draw, so each replica gets the floor or the ceiling of its
    /// expected number of copies). A replica with copies to spare fills the place of one
    /// with none; the population keeps its size.
    fn resample<W: Weight>(
        &mut self,
        replicas: &mut [Replica<W>],
        step: f64,
        random: &mut SplitMix64,
        best: &mut Best<W>,
    ) {
        let population = replicas.len();
        let top = replicas
            .iter()
            .map(|replica| replica.cut.to_f64())
            .fold(f64::NEG_INFINITY, f64::max);
        for (weight, replica) in self.weights.iter_mut().zip(replicas.iter()) {
            *weight = (step * (replica.cut.to_f64() - top)).exp();
        }
        let scale = population as f64 / self.weights.iter().sum::<f64>();
        let offset = random.unit();
        let (mut cumulative, mut taken) = (0.0, 0usize);
        for (copies, weight) in self.copies.iter_mut().zip(&self.weights) {
            cumulative += weight * scale;
            // Rounding may leave the sum a hair off `population`; never go past it. The
            // weights are never negative, so `through` never falls.
            let through = ((cumulative + offset) as usize).min(population);
            *copies = through - taken;
            taken = through;
        }
        let mut donor = 0;
        for place in 0..population {
            if self.copies[place] > 0 {
                continue;
            }
            while donor < population && self.copies[donor] <= 1 {
                donor += 1;
            }
            if donor == population {
                // Copies fell short by rounding: this replica stays.
                break;
            }
            self.copies[donor] -= 1;
            self.copies[place] = 1;
            let (from, to) = if donor < place {
                let (left, right) = replicas.split_at_mut(place);
                (&left[donor], &mut right[0])
            } else {
                let (left, right) = replicas.split_at_mut(donor);
                (&right[0], &mut left[place])
            };
            to.clone_from(from);
            best.replaced(place);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A ring of 40 nodes with chords of the other sign, and random cuts of it.
    fn ring_and_cuts(count: usize) -> (Graph, Vec<Replica<i32>>) {
        let edges: Vec<(usize, usize, f64)> = (0..40)
            .flat_map(|i| [(i, (i + 1) % 40, 1.0), (i, (i + 7) % 40, -1.0)])
            .collect();
        let graph = Graph::from_edges(40, &edges);
        let mut random = SplitMix64::new(5);
        let replicas = (0..count)
            .map(|_| Replica::random(&graph, &mut random))
            .collect();
        (graph, replicas)
    }

    fn best_of(replicas: &mut [Replica<i32>], index: usize) -> Best<i32> {
        Best::new(index, &mut replicas[index], 0, &Clock::new(Instant::now()))
    }

    #[test]
    fn each_replica_gets_the_floor_or_the_ceiling_of_its_expected_copies() {
        let (_, mut replicas) = ring_and_cuts(64);
        let originals: Vec<(Vec<bool>, i32)> = replicas
            .iter()
            .map(|replica| (replica.sides(), replica.cut))
            .collect();
        for (i, (sides, _)) in originals.iter().enumerate() {
            assert!(originals[..i].iter().all(|(other, _)| other != sides));
        }
        let mut best = best_of(&mut replicas, 0);
        let step = 0.3;
        let top = originals
            .iter()
            .map(|&(_, cut)| cut)
            .max()
            .expect("replicas");
        let weights: Vec<f64> = originals
            .iter()
            .map(|&(_, cut)| (step * f64::from(cut - top)).exp())
            .collect();
        let total: f64 = weights.iter().sum();

        Resampling::new(64).resample(&mut replicas, step, &mut SplitMix64::new(2), &mut best);

        let mut placed = 0;
        for ((sides, cut), weight) in originals.iter().zip(&weights) {
            let copies = replicas.iter().filter(|r| &r.sides() == sides).count();
            let expected = 64.0 * weight / total;
            assert!(
                copies == expected.floor() as usize || copies == expected.ceil() as usize,
                "a cut of {cut} got {copies} copies where {expected:.2} were expected"
            );
            placed += copies;
        }
        assert_eq!(placed, 64, "every replica is a copy of one before");
        // Copies carry their gains: every replica's cut is its sides' cut.
        for replica in &replicas {
            let original = originals
                .iter()
                .find(|(sides, _)| *sides == replica.sides());
            assert_eq!(replica.cut, original.expect("a copy").1);
        }
    }

    #[test]
    fn a_cold_step_keeps_only_the_largest_cut_and_the_best_stays_whole() {
        let (graph, mut replicas) = ring_and_cuts(16);
        let top = (0..16).max_by_key(|&i| replicas[i].cut).expect("replicas");
        let lowest = (0..16).min_by_key(|&i| replicas[i].cut).expect("replicas");
        assert!(replicas[lowest].cut < replicas[top].cut);
        // The best is taken from the top replica and then from the lowest, so the top one has
        // no moves recorded and the lowest is where the best last came from.
        let mut best = best_of(&mut replicas, top);
        best.take(lowest, &mut replicas[lowest]);

        Resampling::new(16).resample(&mut replicas, 1e3, &mut SplitMix64::new(1), &mut best);
        let top_sides = replicas[top].sides();
        for replica in &replicas {
            assert_eq!(replica.sides(), top_sides);
            assert_eq!(graph.cut_value(&replica.sides()), f64::from(replica.cut));
        }
        // The lowest replica's place now holds a copy of the top one. Taking the best from it
        // must copy it whole: its record of moves is the top replica's, not its own.
        best.take(lowest, &mut replicas[lowest]);
        assert_eq!(best.sides, top_sides);
    }
}
