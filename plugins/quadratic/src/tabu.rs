//! One-flip tabu search with perturbed restarts from the best solution.

use std::time::{Duration, Instant};

use crate::candidates::Candidates;
use crate::elite::{Elite, relink};
use crate::kick::greedy_kick;
use crate::limits::{Limits, Report, Snapshot};
use crate::qubo::Qubo;
use crate::random::SplitMix64;

/// How often progress is reported, and the host asked whether to stop (a cancel, or a
/// finish that wants the best so far), at most: often enough that a finish answers within
/// tens of milliseconds.
const REPORT_INTERVAL: Duration = Duration::from_millis(20);

/// The clock is read about once per this much work, counted as the values an iteration reads
/// (see [`Candidates::work_per_iteration`]): every 1,024 iterations on small problems, every
/// few on large dense ones, so the deadline is kept at any size.
const CLOCK_EVERY_WORK: f64 = 65_536.0;

/// The search's settings, as fractions of the number of variables `n` where they scale.
#[derive(Debug, Clone, PartialEq)]
pub struct TabuParameters {
    /// Each phase draws its tenure (how many iterations a flipped variable stays tabu)
    /// log-uniformly between `tenure_min · n` and `tenure_max · n`. No one tenure serves every
    /// kind of problem: `n / 100` finds Beasley's QUBOs' best-known values within a second,
    /// and leaves dense signed max-cut graphs 0.5–1 % short; `n / 20` does the opposite.
    /// Drawn anew each phase, the search spends part of its time near each.
    pub tenure_min: f64,
    pub tenure_max: f64,
    /// A random extra tenure below this, per flip, so that no two variables leave the tabu
    /// list on the same iteration.
    pub tenure_jitter: u64,
    /// A phase ends after `patience · n` iterations (at least [`TabuParameters::min_patience`])
    /// without a new best of its own.
    pub patience: f64,
    pub min_patience: u64,
    /// A new phase starts from a solution with `perturb_min · n` plus a random number below
    /// `perturb_span · n` of its variables flipped: which solution, and which variables, the
    /// [`Kick`] says.
    pub perturb_min: f64,
    pub perturb_span: f64,
    /// A kick flips at least this many variables (all of them, if there are fewer): on a
    /// small function a fraction of `n` may be no flip at all, and a phase that starts where
    /// the last one's best was walks back into the same basin.
    pub perturb_at_least: usize,
    /// When the next phase's perturbation grows, and by how much.
    pub perturb_growth: Growth,
    /// How many of the best distinct solutions the phases ended at are kept (0: none), and
    /// the chance that a phase starts from a point on the path between two of them
    /// ([`crate::elite`]) instead of from the best solution kicked. Until the pool is full,
    /// phases start from random solutions instead, so that it holds several basins.
    pub elite: usize,
    pub relink: f64,
    /// A phase end closer than `elite_near · n` variables to a member of the pool takes that
    /// member's place if it is better, and no other: the pool keeps distinct basins, not
    /// many points of one.
    pub elite_near: f64,
    /// Where a phase that does not start from the elite pool starts.
    pub kick: Kick,
}

/// Where a new phase starts, unless it starts on a path between two elite solutions: a kick
/// of `perturb_min · n` plus a random number below `perturb_span · n` flips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kick {
    /// The best solution, with that many variables flipped at random.
    RandomFromBest,
    /// The best solution of the phase that ended, with that many variables flipped one at a
    /// time, each drawn from the `among` whose flips are worth most (cost least) of those the
    /// kick has not flipped yet ([`crate::kick`], after Palubeckis's iterated tabu search,
    /// 2006). It leaves the basin while keeping most of what the phase found, so the next
    /// phase starts near its quality and away from where it was.
    GreedyFromPhaseBest { among: usize },
    /// [`Kick::RandomFromBest`] while the kick is smaller than its most (see
    /// [`TabuParameters::perturb_growth`]), [`Kick::GreedyFromPhaseBest`] once it has grown to
    /// [`MAX_PERTURB_GROWTH`] times its size drawn: the search closes in on its best while
    /// that pays, and leaves the basin greedily once larger random kicks have stopped finding
    /// anything.
    GreedyWhenStuck { among: usize },
}

impl Kick {
    /// The kick a phase makes when the kick has grown to `strength` times its size drawn:
    /// [`Kick::GreedyWhenStuck`] is one of the other two, the rest are themselves.
    fn at_strength(self, strength: f64) -> Kick {
        match self {
            Kick::GreedyWhenStuck { among } if strength >= MAX_PERTURB_GROWTH => {
                Kick::GreedyFromPhaseBest { among }
            }
            Kick::GreedyWhenStuck { .. } => Kick::RandomFromBest,
            kick => kick,
        }
    }
}

/// When a kick grows: each time the rule holds at the end of a phase, the next kick is the
/// factor times the last one (at most [`MAX_PERTURB_GROWTH`] times as drawn); when it does not
/// hold, the next kick is as drawn. A phase that ends where an earlier one did has not left
/// its basin, and a stronger kick is what leaves it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    /// Every kick as drawn.
    Never,
    /// After each phase that found no new best solution.
    WhileNoNewBest(f64),
    /// After each phase whose best is the value the phase before it ended at: the search
    /// walked back to the same solution. On a large function phases seldom meet twice, and
    /// their kicks keep the size drawn; on a small one this is what stops the cycle.
    WhileEndsRepeat(f64),
}

/// The most a perturbation grows by [`TabuParameters::perturb_growth`].
pub const MAX_PERTURB_GROWTH: f64 = 4.0;

/// How a phase ended, as [`Growth`] reads it.
#[derive(Debug, Clone, Copy)]
struct PhaseEnd {
    /// It found a solution better than any before it.
    new_best: bool,
    /// Its best is the value the phase before it ended at.
    as_before: bool,
}

impl Growth {
    /// The next kick's size, as a multiple of the size drawn, after a phase that ended so
    /// with the last kick `strength` times its size drawn.
    fn next_strength(self, strength: f64, end: PhaseEnd) -> f64 {
        let factor = match self {
            Growth::Never => None,
            Growth::WhileNoNewBest(factor) => (!end.new_best).then_some(factor),
            Growth::WhileEndsRepeat(factor) => end.as_before.then_some(factor),
        };
        factor.map_or(1.0, |factor| (strength * factor).min(MAX_PERTURB_GROWTH))
    }
}

impl Default for TabuParameters {
    fn default() -> TabuParameters {
        TabuParameters {
            tenure_min: 0.01,
            tenure_max: 0.08,
            tenure_jitter: 10,
            patience: 20.0,
            min_patience: 10_000,
            perturb_min: 0.03,
            perturb_span: 0.10,
            perturb_at_least: 0,
            perturb_growth: Growth::Never,
            elite: 0,
            relink: 0.0,
            elite_near: 0.0,
            kick: Kick::RandomFromBest,
        }
    }
}

/// What a tabu search found.
#[derive(Debug, Clone)]
pub struct Found {
    pub x: Vec<bool>,
    /// `f(x)`.
    pub value: f64,
    /// Iterations made: one flip each.
    pub iterations: u64,
    pub time_to_best: Duration,
}

/// One-flip tabu search with restarts from the best solution, perturbed, in the manner of
/// Glover, Lü and Hao's diversification-driven tabu search (2010): each iteration makes the
/// best flip that is not tabu, or a tabu one that beats the best found. After a phase without
/// a new best, the search restarts from the best solution with some variables flipped, and a
/// tenure of its own (see [`TabuParameters`]). The decisions depend only on the seed and the
/// iteration count; the clock only stops the search. `report` gets the best value so far.
pub fn tabu_search(
    qubo: &Qubo,
    limits: &Limits,
    parameters: &TabuParameters,
    report: &mut Report<'_>,
) -> Found {
    tabu_search_from(qubo, None, limits, parameters, report)
}

/// [`tabu_search`] from a given solution (a warm start) instead of a random one: the search
/// returns it, or better. A start of the wrong length is ignored.
pub fn tabu_search_from(
    qubo: &Qubo,
    start: Option<&[bool]>,
    limits: &Limits,
    parameters: &TabuParameters,
    report: &mut Report<'_>,
) -> Found {
    let n = qubo.num_variables();
    let started = Instant::now();
    let total = limits.deadline.saturating_duration_since(started);
    let mut random = SplitMix64::new(limits.seed);
    let mut x: Vec<bool> = match start {
        Some(start) if start.len() == n => start.to_vec(),
        _ => (0..n).map(|_| random.next_u64() & 1 == 1).collect(),
    };
    let mut value = qubo.value(&x);
    let mut best = Found {
        x: x.clone(),
        value,
        iterations: 0,
        time_to_best: Duration::ZERO,
    };
    if n == 0 {
        return best;
    }
    let (low, high) = (parameters.tenure_min.ln(), parameters.tenure_max.ln());
    let draw_tenure = |random: &mut SplitMix64| {
        ((n as f64 * (low + (high - low) * random.unit()).exp()) as u64).max(1)
    };
    let mut tenure = draw_tenure(&mut random);
    let patience = ((parameters.patience * n as f64) as u64).max(parameters.min_patience);
    let mut candidates = Candidates::new(qubo, &x);
    let mut iteration = 0u64;
    let mut phase_best = value;
    let mut since_phase_best = 0u64;
    let mut strength = 1.0f64;
    let mut last_phase_best = f64::NAN;
    let mut best_at_phase_start = best.value;
    let mut elite = Elite::new(
        parameters.elite,
        (parameters.elite_near * n as f64) as usize,
    );
    // The flips since the phase's best, to go back to it for the pool or a greedy kick.
    let back_to_phase_best = parameters.elite > 0
        || matches!(
            parameters.kick,
            Kick::GreedyFromPhaseBest { .. } | Kick::GreedyWhenStuck { .. }
        );
    let mut since_phase_best_flips: Vec<usize> = Vec::new();
    let mut last_report = started;
    let clock_every =
        (CLOCK_EVERY_WORK / candidates.work_per_iteration(qubo)).clamp(1.0, 1024.0) as u64;
    loop {
        if limits
            .max_iterations
            .is_some_and(|budget| iteration >= budget)
        {
            break;
        }
        if iteration.is_multiple_of(clock_every) {
            let now = Instant::now();
            if limits.max_iterations.is_none() && now >= limits.deadline {
                break;
            }
            if now.duration_since(last_report) >= REPORT_INTERVAL {
                last_report = now;
                let fraction = match limits.max_iterations {
                    Some(budget) => iteration as f64 / budget as f64,
                    None => {
                        now.duration_since(started).as_secs_f64() / total.as_secs_f64().max(1e-9)
                    }
                };
                let snapshot = Snapshot {
                    best: best.value,
                    fraction: fraction.min(1.0),
                    solution: &|| best.x.clone(),
                };
                if report(&snapshot) {
                    break;
                }
            }
        }
        iteration += 1;
        // The best admissible flip; ties go to the first, after a random rotation of the scan.
        let offset = random.below(n as u64) as usize;
        let Some(chosen) = candidates.best(iteration, offset, value, best.value) else {
            // Everything is tabu and nothing beats the best: wait the tenures out.
            continue;
        };
        value += candidates.gain(chosen);
        candidates.flip(qubo, &mut x, chosen, iteration);
        candidates.make_tabu(
            chosen,
            iteration + tenure + random.below(parameters.tenure_jitter.max(1)) + 1,
        );
        if value < best.value {
            best.x.clone_from(&x);
            best.value = value;
            best.iterations = iteration;
            best.time_to_best = started.elapsed();
        }
        if value < phase_best {
            phase_best = value;
            since_phase_best = 0;
            since_phase_best_flips.clear();
        } else {
            since_phase_best += 1;
            if back_to_phase_best {
                since_phase_best_flips.push(chosen);
            }
        }
        if since_phase_best >= patience {
            strength = parameters.perturb_growth.next_strength(
                strength,
                PhaseEnd {
                    new_best: best.value < best_at_phase_start,
                    as_before: phase_best == last_phase_best,
                },
            );
            last_phase_best = phase_best;
            best_at_phase_start = best.value;
            if back_to_phase_best {
                for &i in since_phase_best_flips.iter().rev() {
                    x[i] = !x[i];
                }
                since_phase_best_flips.clear();
                elite.offer(phase_best, &x);
            }
            let pair = if elite.len() >= 2 && random.unit() < parameters.relink {
                elite.pair(&mut random)
            } else {
                None
            };
            if let Some((from, to)) = pair {
                relink(qubo, &mut candidates, &mut x, from, to);
            } else if elite.len() < parameters.elite {
                // The pool fills from random starts, so that its paths cross other basins.
                for xi in x.iter_mut() {
                    *xi = random.next_u64() & 1 == 1;
                }
            } else {
                let flips = (n as f64 * parameters.perturb_min) as usize
                    + random.below(((n as f64 * parameters.perturb_span) as u64).max(1)) as usize;
                let flips = ((flips as f64 * strength) as usize)
                    .max(parameters.perturb_at_least)
                    .min(n);
                match parameters.kick.at_strength(strength) {
                    Kick::RandomFromBest | Kick::GreedyWhenStuck { .. } => {
                        x.clone_from(&best.x);
                        for _ in 0..flips {
                            let i = random.below(n as u64) as usize;
                            x[i] = !x[i];
                        }
                    }
                    Kick::GreedyFromPhaseBest { among } => {
                        greedy_kick(qubo, &mut x, flips, among, &mut random);
                    }
                }
            }
            value = qubo.value(&x);
            candidates.restart(qubo, &x);
            tenure = draw_tenure(&mut random);
            phase_best = value;
            since_phase_best = 0;
        }
    }
    best.iterations = iteration;
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exhaustive::exhaustive;
    use crate::qubo::random_qubo;

    /// The least value over every assignment, each computed from scratch.
    fn brute_force(qubo: &Qubo) -> f64 {
        let n = qubo.num_variables();
        (0..1u32 << n)
            .map(|bits| {
                let x: Vec<bool> = (0..n).map(|i| (bits >> i) & 1 == 1).collect();
                qubo.value(&x)
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// A search with `parameters` finds the brute-force optimum of small functions, and
    /// repeats itself, move for move, from the same seed and budget.
    fn check_repeats_and_finds_the_optimum(parameters: &TabuParameters) {
        for seed in 1..=3 {
            let qubo = random_qubo(12, seed);
            let found = tabu_search(&qubo, &limits(seed, 20_000), parameters, &mut |_| false);
            assert_eq!(found.value, brute_force(&qubo), "seed {seed}");
        }
        let qubo = random_qubo(80, 9);
        let first = tabu_search(&qubo, &limits(3, 50_000), parameters, &mut |_| false);
        let second = tabu_search(&qubo, &limits(3, 50_000), parameters, &mut |_| false);
        assert_eq!(first.x, second.x);
        assert_eq!(qubo.value(&first.x), first.value);
    }

    fn limits(seed: u64, budget: u64) -> Limits {
        Limits {
            deadline: Instant::now() + Duration::from_secs(60),
            max_iterations: Some(budget),
            seed,
        }
    }

    #[test]
    fn enumeration_and_tabu_search_find_the_brute_force_optimum() {
        for seed in 1..=6 {
            let qubo = random_qubo(12, seed);
            let optimum = brute_force(&qubo);
            let (x, steps) = exhaustive(&qubo);
            assert_eq!(qubo.value(&x), optimum, "seed {seed}");
            assert_eq!(steps, (1 << 12) - 1);

            let found = tabu_search(
                &qubo,
                &limits(seed, 20_000),
                &TabuParameters::default(),
                &mut |_| false,
            );
            assert_eq!(found.value, optimum, "seed {seed}");
            assert_eq!(qubo.value(&found.x), found.value);
        }
    }

    #[test]
    fn pairs_given_twice_add_up() {
        let once = Qubo::new(vec![1.0, -2.0], &[(0, 1, 3.0)]);
        let twice = Qubo::new(vec![1.0, -2.0], &[(0, 1, 1.0), (1, 0, 2.0)]);
        for x in [[false, false], [true, false], [false, true], [true, true]] {
            assert_eq!(once.value(&x), twice.value(&x));
        }
        assert_eq!(twice.value(&[true, true]), 2.0);
    }

    #[test]
    fn a_seed_and_a_budget_repeat_a_search() {
        let qubo = random_qubo(60, 9);
        let parameters = TabuParameters::default();
        let first = tabu_search(&qubo, &limits(3, 5_000), &parameters, &mut |_| false);
        let second = tabu_search(&qubo, &limits(3, 5_000), &parameters, &mut |_| false);
        assert_eq!(first.x, second.x);
        assert_eq!(first.iterations, 5_000);
        let other = tabu_search(&qubo, &limits(4, 5_000), &parameters, &mut |_| false);
        assert_eq!(qubo.value(&other.x), other.value);
    }

    #[test]
    fn a_search_that_relinks_repeats_and_finds_the_optimum() {
        let parameters = TabuParameters {
            elite: 10,
            relink: 0.5,
            // Short phases, so that the pool fills and paths are walked within the budget.
            min_patience: 100,
            patience: 2.0,
            ..TabuParameters::default()
        };
        check_repeats_and_finds_the_optimum(&parameters);
    }

    #[test]
    fn a_search_with_greedy_kicks_repeats_and_finds_the_optimum() {
        let parameters = TabuParameters {
            kick: Kick::GreedyFromPhaseBest { among: 5 },
            perturb_min: 0.002,
            perturb_span: 0.1,
            // Short phases, so that many kicks are made within the budget.
            min_patience: 100,
            patience: 2.0,
            ..TabuParameters::default()
        };
        check_repeats_and_finds_the_optimum(&parameters);
    }

    #[test]
    fn a_search_that_kicks_greedily_once_stuck_repeats_and_finds_the_optimum() {
        let parameters = TabuParameters {
            kick: Kick::GreedyWhenStuck { among: 5 },
            // Kicks grow after every phase with no new best, so that they reach their most and
            // turn greedy within the budget.
            perturb_growth: Growth::WhileNoNewBest(1.3),
            min_patience: 100,
            patience: 2.0,
            ..TabuParameters::default()
        };
        check_repeats_and_finds_the_optimum(&parameters);
    }

    #[test]
    fn a_kick_turns_greedy_only_once_it_has_grown_to_its_most() {
        let stuck = Kick::GreedyWhenStuck { among: 5 };
        let greedy = Kick::GreedyFromPhaseBest { among: 5 };
        // (kick, strength, the kick made)
        let cases = [
            (stuck, 1.0, Kick::RandomFromBest),
            (stuck, 3.9, Kick::RandomFromBest),
            (stuck, MAX_PERTURB_GROWTH, greedy),
            (
                Kick::RandomFromBest,
                MAX_PERTURB_GROWTH,
                Kick::RandomFromBest,
            ),
            (greedy, 1.0, greedy),
        ];
        for (kick, strength, made) in cases {
            assert_eq!(kick.at_strength(strength), made, "{kick:?} at {strength}");
        }
    }

    #[test]
    fn kicks_grow_while_the_rule_holds_and_reset_when_it_does_not() {
        let end = |new_best, as_before| PhaseEnd {
            new_best,
            as_before,
        };
        // (rule, strength before, how the phase ended, strength after)
        let cases = [
            (Growth::Never, 1.0, end(false, true), 1.0),
            (Growth::WhileNoNewBest(2.0), 1.0, end(false, false), 2.0),
            (
                Growth::WhileNoNewBest(2.0),
                2.0,
                end(false, true),
                MAX_PERTURB_GROWTH,
            ),
            (
                Growth::WhileNoNewBest(2.0),
                4.0,
                end(false, false),
                MAX_PERTURB_GROWTH,
            ),
            (Growth::WhileNoNewBest(2.0), 2.0, end(true, false), 1.0),
            (Growth::WhileEndsRepeat(1.5), 1.0, end(false, true), 1.5),
            (Growth::WhileEndsRepeat(1.5), 1.5, end(true, true), 2.25),
            (Growth::WhileEndsRepeat(1.5), 2.25, end(false, false), 1.0),
        ];
        for (growth, before, phase, after) in cases {
            assert_eq!(
                growth.next_strength(before, phase),
                after,
                "{growth:?} {phase:?}"
            );
        }
    }

    #[test]
    fn a_warm_start_is_never_lost() {
        let qubo = random_qubo(200, 5);
        let parameters = TabuParameters::default();
        let first = tabu_search(&qubo, &limits(1, 20_000), &parameters, &mut |_| false);
        // Cancelled at once: what comes back is the start itself.
        let kept = tabu_search_from(
            &qubo,
            Some(&first.x),
            &limits(2, 20_000),
            &parameters,
            &mut |_| true,
        );
        assert!(kept.value <= first.value);
        let more = tabu_search_from(
            &qubo,
            Some(&first.x),
            &limits(2, 20_000),
            &parameters,
            &mut |_| false,
        );
        assert!(more.value <= first.value);
        assert_eq!(qubo.value(&more.x), more.value);
    }

    #[test]
    fn a_cancellation_stops_the_search() {
        let qubo = random_qubo(200, 1);
        let limits = Limits {
            deadline: Instant::now() + Duration::from_secs(600),
            max_iterations: None,
            seed: 1,
        };
        // The first report that hears of the cancellation is the last.
        let mut reports = 0;
        let found = tabu_search(
            &qubo,
            &limits,
            &TabuParameters::default(),
            &mut |snapshot| {
                reports += 1;
                // What it reports is an assignment with the value it reports.
                assert_eq!(qubo.value(&(snapshot.solution)()), snapshot.best);
                true
            },
        );
        assert_eq!(reports, 1);
        assert_eq!(qubo.value(&found.x), found.value);
    }
}
