//! The solver as the use case calls it: the model as a QUBO to minimise (a SPIN model through
//! `x = (1 + s) / 2`, a maximisation through the negated energy), enumerated when it is small
//! and searched by tabu search otherwise; the sample given back in the model's own terms.

use std::time::{Duration, Instant};

use caseload_sdk::RunContext;

use crate::model::{Bqm, Sense, Vartype};
use crate::random::SplitMix64;

/// Models with at most this many variables are enumerated, and their answer is proven best.
pub const EXHAUSTIVE_MAX_VARIABLES: usize = 20;

/// How often progress is reported to the host at most.
const REPORT_INTERVAL: Duration = Duration::from_millis(250);

/// What a solve found.
#[derive(Debug, Clone)]
pub struct Solved {
    /// Each variable's value, in the model's vartype.
    pub sample: Vec<i8>,
    pub optimal: bool,
    pub algorithm: &'static str,
    pub iterations: u64,
    pub time_to_best: Duration,
}

/// A QUBO to minimise: `f(x) = constant + Σ linear[i]·x_i + Σ weight·x_i·x_j`, the pairs in
/// compressed sparse rows, each listed under both its variables.
#[derive(Debug, Clone)]
pub struct Qubo {
    pub linear: Vec<f64>,
    pub starts: Vec<usize>,
    pub neighbours: Vec<u32>,
    pub weights: Vec<f64>,
}

impl Qubo {
    /// The minimisation the model stands for, in 0/1 variables.
    pub fn from_model(model: &Bqm) -> Qubo {
        let binary = model.with_vartype(Vartype::Binary);
        let sign = match model.sense {
            Sense::Minimize => 1.0,
            Sense::Maximize => -1.0,
        };
        let n = binary.num_variables;
        let mut degree = vec![0usize; n];
        for &(i, j, _) in &binary.quadratic {
            degree[i] += 1;
            degree[j] += 1;
        }
        let mut starts = Vec::with_capacity(n + 1);
        starts.push(0);
        for count in &degree {
            starts.push(starts.last().copied().unwrap_or(0) + count);
        }
        let total = starts[n];
        let mut neighbours = vec![0u32; total];
        let mut weights = vec![0.0; total];
        let mut next = starts[..n].to_vec();
        for &(i, j, weight) in &binary.quadratic {
            for (from, to) in [(i, j), (j, i)] {
                neighbours[next[from]] = to as u32;
                weights[next[from]] = sign * weight;
                next[from] += 1;
            }
        }
        Qubo {
            linear: binary.linear.iter().map(|bias| sign * bias).collect(),
            starts,
            neighbours,
            weights,
        }
    }

    pub fn num_variables(&self) -> usize {
        self.linear.len()
    }

    /// `linear[i] + Σ weight·x_j` over `i`'s pairs: what setting `x_i` to 1 adds.
    fn local_fields(&self, x: &[bool]) -> Vec<f64> {
        (0..self.num_variables())
            .map(|i| {
                self.linear[i]
                    + (self.starts[i]..self.starts[i + 1])
                        .filter(|&edge| x[self.neighbours[edge] as usize])
                        .map(|edge| self.weights[edge])
                        .sum::<f64>()
            })
            .collect()
    }

    /// Flips `x_k`, keeping the neighbours' local fields.
    fn flip(&self, x: &mut [bool], fields: &mut [f64], k: usize) {
        let sign = if x[k] { -1.0 } else { 1.0 };
        x[k] = !x[k];
        for edge in self.starts[k]..self.starts[k + 1] {
            fields[self.neighbours[edge] as usize] += sign * self.weights[edge];
        }
    }

    /// The change of `f` if `x_i` flipped.
    fn gain(x: &[bool], fields: &[f64], i: usize) -> f64 {
        if x[i] { -fields[i] } else { fields[i] }
    }
}

/// Solves the model within the context's deadline or iteration budget.
pub fn solve(model: &Bqm, context: &RunContext) -> Solved {
    let qubo = Qubo::from_model(model);
    let limits = Limits {
        deadline: context.deadline(),
        max_iterations: context.max_iterations(),
        seed: context.seed(),
    };
    // The minimised QUBO leaves out the binary model's constant; progress is in the model's
    // own energies.
    let constant = model.with_vartype(Vartype::Binary).offset;
    let mut report = |best: f64, fraction: f64| {
        let energy = match model.sense {
            Sense::Minimize => constant + best,
            Sense::Maximize => constant - best,
        };
        context.progress(fraction, &format!("best energy so far: {energy}"));
        context.cancelled()
    };
    let (x, optimal, algorithm, iterations, time_to_best) =
        if qubo.num_variables() <= EXHAUSTIVE_MAX_VARIABLES {
            let (x, iterations) = exhaustive(&qubo);
            (x, true, "exhaustive", iterations, Duration::ZERO)
        } else {
            let found = tabu_search(&qubo, &limits, &mut report);
            (
                found.x,
                false,
                "tabu-search",
                found.iterations,
                found.time_to_best,
            )
        };
    let binary: Vec<i8> = x.iter().map(|&value| i8::from(value)).collect();
    Solved {
        sample: Bqm::convert_sample(&binary, Vartype::Binary, model.vartype),
        optimal,
        algorithm,
        iterations,
        time_to_best,
    }
}

/// When a search stops.
#[derive(Debug, Clone)]
pub struct Limits {
    pub deadline: Instant,
    pub max_iterations: Option<u64>,
    pub seed: u64,
}

/// Every assignment in Gray-code order, one flip each; the best, and the flips made.
pub fn exhaustive(qubo: &Qubo) -> (Vec<bool>, u64) {
    let n = qubo.num_variables();
    let mut x = vec![false; n];
    let mut fields = qubo.local_fields(&x);
    let (mut value, mut best_value) = (0.0, 0.0);
    let mut best = x.clone();
    let steps: u64 = (1u64 << n) - 1;
    for step in 1..=steps {
        let k = step.trailing_zeros() as usize;
        value += Qubo::gain(&x, &fields, k);
        qubo.flip(&mut x, &mut fields, k);
        if value < best_value {
            best_value = value;
            best.clone_from(&x);
        }
    }
    (best, steps)
}

/// What a tabu search found.
#[derive(Debug, Clone)]
pub struct Found {
    pub x: Vec<bool>,
    /// `f(x)` without the constant.
    pub value: f64,
    pub iterations: u64,
    pub time_to_best: Duration,
}

/// One-flip tabu search with restarts from the best solution, perturbed (in the manner of
/// Glover, Lü and Hao's diversification-driven tabu search): each iteration makes the best
/// flip that is not tabu, or a tabu one that beats the best found; a flipped variable stays
/// tabu for a tenure that grows with the size. After a phase without a new best, the search
/// restarts from the best solution with a random set of variables flipped. The decisions
/// depend only on the seed and the iteration count; the clock only stops the search.
pub fn tabu_search(
    qubo: &Qubo,
    limits: &Limits,
    report: &mut dyn FnMut(f64, f64) -> bool,
) -> Found {
    let n = qubo.num_variables();
    let started = Instant::now();
    let total = limits.deadline.saturating_duration_since(started);
    let mut random = SplitMix64::new(limits.seed);
    let mut x: Vec<bool> = (0..n).map(|_| random.next_u64() & 1 == 1).collect();
    let mut fields = qubo.local_fields(&x);
    let mut value = value_of(qubo, &x);
    let mut best = Found {
        x: x.clone(),
        value,
        iterations: 0,
        time_to_best: Duration::ZERO,
    };
    let base_tenure = (n / 100).max(1) as u64;
    // A phase ends after this many iterations without a new best of its own.
    let patience = (20 * n as u64).max(10_000);
    let mut tabu_until = vec![0u64; n];
    let mut iteration = 0u64;
    let mut phase_best = value;
    let mut since_phase_best = 0u64;
    let mut last_report = started;
    loop {
        if limits
            .max_iterations
            .is_some_and(|budget| iteration >= budget)
        {
            break;
        }
        if iteration.is_multiple_of(1024) {
            let now = Instant::now();
            // Without a budget the clock stops the search; with one, only the budget does.
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
                if report(best.value, fraction.min(1.0)) {
                    break;
                }
            }
        }
        iteration += 1;
        // The best admissible flip; ties go to the first, after a random rotation of the scan.
        let offset = random.below(n as u64) as usize;
        let mut chosen = usize::MAX;
        let mut chosen_gain = f64::INFINITY;
        for step in 0..n {
            let i = if offset + step < n {
                offset + step
            } else {
                offset + step - n
            };
            let gain = Qubo::gain(&x, &fields, i);
            let admissible = tabu_until[i] <= iteration || value + gain < best.value;
            if admissible && gain < chosen_gain {
                chosen = i;
                chosen_gain = gain;
            }
        }
        if chosen == usize::MAX {
            // Everything is tabu and nothing beats the best: wait the tenures out.
            continue;
        }
        qubo.flip(&mut x, &mut fields, chosen);
        value += chosen_gain;
        tabu_until[chosen] = iteration + base_tenure + random.below(10) + 1;
        if value < best.value {
            best.x.clone_from(&x);
            best.value = value;
            best.iterations = iteration;
            best.time_to_best = started.elapsed();
        }
        if value < phase_best {
            phase_best = value;
            since_phase_best = 0;
        } else {
            since_phase_best += 1;
        }
        if since_phase_best >= patience {
            // Restart from the best with a tenth to a quarter of the variables flipped.
            x.clone_from(&best.x);
            let flips = n / 10 + random.below((n / 7).max(1) as u64) as usize;
            for _ in 0..flips {
                let i = random.below(n as u64) as usize;
                x[i] = !x[i];
            }
            fields = qubo.local_fields(&x);
            value = value_of(qubo, &x);
            tabu_until.iter_mut().for_each(|until| *until = 0);
            phase_best = value;
            since_phase_best = 0;
        }
    }
    best.iterations = iteration;
    best
}

/// `f(x)` without the constant, computed from scratch.
fn value_of(qubo: &Qubo, x: &[bool]) -> f64 {
    (0..qubo.num_variables())
        .filter(|&i| x[i])
        .map(|i| {
            qubo.linear[i]
                + (qubo.starts[i]..qubo.starts[i + 1])
                    .filter(|&edge| {
                        let j = qubo.neighbours[edge] as usize;
                        j > i && x[j]
                    })
                    .map(|edge| qubo.weights[edge])
                    .sum::<f64>()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_model(n: usize, seed: u64, vartype: Vartype, sense: Sense) -> Bqm {
        let mut random = SplitMix64::new(seed);
        let mut bias = move || random.below(201) as f64 - 100.0;
        let linear: Vec<(usize, f64)> = (0..n).map(|i| (i, bias())).collect();
        let mut quadratic = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                quadratic.push((i, j, bias()));
            }
        }
        Bqm::from_terms(n, linear, quadratic, 3.0, vartype, sense)
    }

    /// The best energy over every assignment, computed from the model directly.
    fn brute_force(model: &Bqm) -> f64 {
        let n = model.num_variables;
        let values = model.vartype.values();
        (0..1u32 << n)
            .map(|bits| {
                let sample: Vec<i8> = (0..n).map(|i| values[((bits >> i) & 1) as usize]).collect();
                model.energy(&sample)
            })
            .fold(
                match model.sense {
                    Sense::Minimize => f64::INFINITY,
                    Sense::Maximize => f64::NEG_INFINITY,
                },
                |best, energy| match model.sense {
                    Sense::Minimize => best.min(energy),
                    Sense::Maximize => best.max(energy),
                },
            )
    }

    #[test]
    fn enumeration_and_tabu_search_find_the_brute_force_optimum() {
        let cases = [
            (Vartype::Binary, Sense::Minimize),
            (Vartype::Spin, Sense::Minimize),
            (Vartype::Binary, Sense::Maximize),
            (Vartype::Spin, Sense::Maximize),
        ];
        for (seed, (vartype, sense)) in cases.into_iter().enumerate() {
            let model = random_model(12, seed as u64 + 1, vartype, sense);
            let optimum = brute_force(&model);
            let qubo = Qubo::from_model(&model);
            let (x, _) = exhaustive(&qubo);
            let binary: Vec<i8> = x.iter().map(|&value| i8::from(value)).collect();
            let sample = Bqm::convert_sample(&binary, Vartype::Binary, vartype);
            assert_eq!(model.energy(&sample), optimum, "{vartype:?} {sense:?}");

            let limits = Limits {
                deadline: Instant::now() + Duration::from_secs(60),
                max_iterations: Some(20_000),
                seed: 7,
            };
            let found = tabu_search(&qubo, &limits, &mut |_, _| false);
            let binary: Vec<i8> = found.x.iter().map(|&value| i8::from(value)).collect();
            let sample = Bqm::convert_sample(&binary, Vartype::Binary, vartype);
            assert_eq!(model.energy(&sample), optimum, "{vartype:?} {sense:?}");
            assert!((found.value - value_of(&qubo, &found.x)).abs() < 1e-6);
        }
    }

    #[test]
    fn a_seed_and_a_budget_repeat_a_search() {
        let model = random_model(60, 9, Vartype::Binary, Sense::Minimize);
        let qubo = Qubo::from_model(&model);
        let limits = Limits {
            deadline: Instant::now() + Duration::from_secs(60),
            max_iterations: Some(5_000),
            seed: 3,
        };
        let first = tabu_search(&qubo, &limits, &mut |_, _| false);
        let second = tabu_search(&qubo, &limits, &mut |_, _| false);
        assert_eq!(first.x, second.x);
        assert_eq!(first.iterations, 5_000);
    }
}
