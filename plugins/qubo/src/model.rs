//! The binary quadratic model every input form becomes: linear and quadratic biases over
//! numbered variables, an offset, the variables' domain and the sense of the objective.

use serde::{Deserialize, Serialize};

/// The domain of the variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Vartype {
    /// Each variable is 0 or 1 (a QUBO).
    #[default]
    Binary,
    /// Each variable is -1 or +1 (an Ising model).
    Spin,
}

impl Vartype {
    /// The two values a variable takes, the "off" one first.
    pub fn values(self) -> [i8; 2] {
        match self {
            Vartype::Binary => [0, 1],
            Vartype::Spin => [-1, 1],
        }
    }
}

/// Whether the lowest or the highest energy is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sense {
    /// The lowest energy, as D-Wave's samplers look for.
    #[default]
    Minimize,
    Maximize,
}

/// A binary quadratic model: `energy(v) = offset + Σ linear[i]·v_i + Σ J·v_i·v_j` over the
/// quadratic terms, with every `v_i` in the vartype's domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Bqm {
    pub num_variables: usize,
    /// One bias per variable.
    pub linear: Vec<f64>,
    /// Each pair once, `i < j`, biases of a pair given twice added up.
    pub quadratic: Vec<(usize, usize, f64)>,
    pub offset: f64,
    pub vartype: Vartype,
    pub sense: Sense,
}

impl Bqm {
    /// A model from terms in any order: linear terms of one variable and quadratic terms of
    /// one pair (either way round) add up; `i != j` and every index below `num_variables`
    /// are the caller's to check.
    pub fn from_terms(
        num_variables: usize,
        linear: impl IntoIterator<Item = (usize, f64)>,
        quadratic: impl IntoIterator<Item = (usize, usize, f64)>,
        offset: f64,
        vartype: Vartype,
        sense: Sense,
    ) -> Bqm {
        let mut biases = vec![0.0; num_variables];
        for (i, bias) in linear {
            biases[i] += bias;
        }
        let mut pairs: Vec<(usize, usize, f64)> = quadratic
            .into_iter()
            .map(|(i, j, bias)| (i.min(j), i.max(j), bias))
            .collect();
        pairs.sort_unstable_by_key(|&(i, j, _)| (i, j));
        let mut quadratic: Vec<(usize, usize, f64)> = Vec::with_capacity(pairs.len());
        for (i, j, bias) in pairs {
            match quadratic.last_mut() {
                Some(last) if (last.0, last.1) == (i, j) => last.2 += bias,
                _ => quadratic.push((i, j, bias)),
            }
        }
        Bqm {
            num_variables,
            linear: biases,
            quadratic,
            offset,
            vartype,
            sense,
        }
    }

    /// The energy of an assignment, each value in the model's domain.
    pub fn energy(&self, sample: &[i8]) -> f64 {
        let linear: f64 = self
            .linear
            .iter()
            .zip(sample)
            .map(|(bias, &value)| bias * f64::from(value))
            .sum();
        let quadratic: f64 = self
            .quadratic
            .iter()
            .map(|&(i, j, bias)| bias * f64::from(sample[i]) * f64::from(sample[j]))
            .sum();
        self.offset + linear + quadratic
    }

    /// The same energies over the other domain: `x = (1 + s) / 2` from BINARY to SPIN,
    /// `s = 2x - 1` back.
    pub fn with_vartype(&self, vartype: Vartype) -> Bqm {
        if vartype == self.vartype {
            return self.clone();
        }
        let mut linear = vec![0.0; self.num_variables];
        let mut offset = self.offset;
        let mut quadratic = Vec::with_capacity(self.quadratic.len());
        match vartype {
            // h·x = h/2 + (h/2)·s;  J·x_i·x_j = J/4 · (1 + s_i + s_j + s_i·s_j)
            Vartype::Spin => {
                for (i, &bias) in self.linear.iter().enumerate() {
                    offset += bias / 2.0;
                    linear[i] += bias / 2.0;
                }
                for &(i, j, bias) in &self.quadratic {
                    offset += bias / 4.0;
                    linear[i] += bias / 4.0;
                    linear[j] += bias / 4.0;
                    quadratic.push((i, j, bias / 4.0));
                }
            }
            // h·s = 2h·x - h;  J·s_i·s_j = J·(4·x_i·x_j - 2·x_i - 2·x_j + 1)
            Vartype::Binary => {
                for (i, &bias) in self.linear.iter().enumerate() {
                    offset -= bias;
                    linear[i] += 2.0 * bias;
                }
                for &(i, j, bias) in &self.quadratic {
                    offset += bias;
                    linear[i] -= 2.0 * bias;
                    linear[j] -= 2.0 * bias;
                    quadratic.push((i, j, 4.0 * bias));
                }
            }
        }
        Bqm {
            num_variables: self.num_variables,
            linear,
            quadratic,
            offset,
            vartype,
            sense: self.sense,
        }
    }

    /// A sample's values in the other domain.
    pub fn convert_sample(sample: &[i8], from: Vartype, to: Vartype) -> Vec<i8> {
        let index = |value: i8| usize::from(value == from.values()[1]);
        sample
            .iter()
            .map(|&value| to.values()[index(value)])
            .collect()
    }

    /// The largest energy's magnitude the terms can add up to: finite means no assignment's
    /// energy overflows.
    pub fn energy_bound(&self) -> f64 {
        self.offset.abs()
            + self.linear.iter().map(|bias| bias.abs()).sum::<f64>()
            + self
                .quadratic
                .iter()
                .map(|&(_, _, bias)| bias.abs())
                .sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_samples(n: usize, vartype: Vartype) -> impl Iterator<Item = Vec<i8>> {
        (0..1u32 << n).map(move |bits| {
            (0..n)
                .map(|i| vartype.values()[((bits >> i) & 1) as usize])
                .collect()
        })
    }

    fn random_model(n: usize, seed: u64, vartype: Vartype) -> Bqm {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % 21) as f64 - 10.0
        };
        let linear: Vec<(usize, f64)> = (0..n).map(|i| (i, next())).collect();
        let mut quadratic = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                quadratic.push((i, j, next() / 2.0));
            }
        }
        Bqm::from_terms(n, linear, quadratic, next(), vartype, Sense::Minimize)
    }

    #[test]
    fn terms_of_one_pair_or_variable_add_up() {
        let model = Bqm::from_terms(
            3,
            [(0, 1.0), (0, 2.0)],
            [(0, 1, 1.0), (1, 0, 2.5), (1, 2, -1.0)],
            0.5,
            Vartype::Binary,
            Sense::Minimize,
        );
        assert_eq!(model.linear, [3.0, 0.0, 0.0]);
        assert_eq!(model.quadratic, [(0, 1, 3.5), (1, 2, -1.0)]);
        assert_eq!(model.energy(&[1, 1, 1]), 0.5 + 3.0 + 3.5 - 1.0);
        assert_eq!(model.energy(&[0, 0, 0]), 0.5);
    }

    #[test]
    fn spin_energies_count_minus_one() {
        let model = Bqm::from_terms(
            2,
            [(0, 1.0)],
            [(0, 1, 2.0)],
            0.0,
            Vartype::Spin,
            Sense::Minimize,
        );
        assert_eq!(model.energy(&[-1, 1]), -1.0 - 2.0);
        assert_eq!(model.energy(&[-1, -1]), -1.0 + 2.0);
    }

    #[test]
    fn conversion_keeps_every_assignment_s_energy() {
        for (seed, vartype) in [
            (1, Vartype::Binary),
            (2, Vartype::Spin),
            (3, Vartype::Binary),
        ] {
            let model = random_model(6, seed, vartype);
            let other_type = match vartype {
                Vartype::Binary => Vartype::Spin,
                Vartype::Spin => Vartype::Binary,
            };
            let other = model.with_vartype(other_type);
            let back = other.with_vartype(vartype);
            for sample in all_samples(6, vartype) {
                let converted = Bqm::convert_sample(&sample, vartype, other_type);
                let energy = model.energy(&sample);
                assert!((other.energy(&converted) - energy).abs() < 1e-9);
                assert!((back.energy(&sample) - energy).abs() < 1e-9);
            }
        }
    }
}
