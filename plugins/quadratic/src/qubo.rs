//! The function every search minimises, in compressed sparse rows.

/// `f(x) = Σ linear[i]·x_i + Σ weight·x_i·x_j` over 0/1 variables, each pair listed under both
/// its variables.
#[derive(Debug, Clone)]
pub struct Qubo {
    linear: Vec<f64>,
    starts: Vec<usize>,
    neighbours: Vec<u32>,
    weights: Vec<f64>,
}

impl Qubo {
    /// The function with these linear biases and pairs `(i, j, weight)`, `i != j`, both
    /// below `linear.len()`; a pair given twice (either way round) adds up.
    pub fn new(linear: Vec<f64>, pairs: &[(usize, usize, f64)]) -> Qubo {
        let n = linear.len();
        let mut degree = vec![0usize; n];
        for &(i, j, _) in pairs {
            debug_assert!(i != j && i < n && j < n);
            degree[i] += 1;
            degree[j] += 1;
        }
        let mut starts = Vec::with_capacity(n + 1);
        starts.push(0);
        for count in &degree {
            starts.push(starts.last().copied().unwrap_or(0) + count);
        }
        let mut neighbours = vec![0u32; starts[n]];
        let mut weights = vec![0.0; starts[n]];
        let mut next = starts[..n].to_vec();
        for &(i, j, weight) in pairs {
            for (from, to) in [(i, j), (j, i)] {
                neighbours[next[from]] = to as u32;
                weights[next[from]] = weight;
                next[from] += 1;
            }
        }
        Qubo {
            linear,
            starts,
            neighbours,
            weights,
        }
    }

    pub fn num_variables(&self) -> usize {
        self.linear.len()
    }

    /// The pairs, each counted once.
    pub fn num_pairs(&self) -> usize {
        self.neighbours.len() / 2
    }

    /// `f(x)`, computed from scratch.
    pub fn value(&self, x: &[bool]) -> f64 {
        (0..self.num_variables())
            .filter(|&i| x[i])
            .map(|i| {
                self.linear[i]
                    + self
                        .pairs(i)
                        .filter(|&(j, _)| j > i && x[j])
                        .map(|(_, weight)| weight)
                        .sum::<f64>()
            })
            .sum()
    }

    /// `i`'s neighbours and the weights of its pairs with them.
    pub(crate) fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let edges = self.starts[i]..self.starts[i + 1];
        (&self.neighbours[edges.clone()], &self.weights[edges])
    }

    /// [`Qubo::row`] as `(neighbour, weight)` pairs.
    fn pairs(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let (neighbours, weights) = self.row(i);
        neighbours
            .iter()
            .zip(weights)
            .map(|(&j, &weight)| (j as usize, weight))
    }

    /// `linear[i] + Σ weight·x_j` over `i`'s pairs: what setting `x_i` to 1 adds.
    pub(crate) fn local_fields(&self, x: &[bool]) -> Vec<f64> {
        (0..self.num_variables())
            .map(|i| {
                self.linear[i]
                    + self
                        .pairs(i)
                        .filter(|&(j, _)| x[j])
                        .map(|(_, weight)| weight)
                        .sum::<f64>()
            })
            .collect()
    }

    /// Flips `x_k`, keeping every local field.
    pub(crate) fn flip(&self, x: &mut [bool], fields: &mut [f64], k: usize) {
        let sign = if x[k] { -1.0 } else { 1.0 };
        x[k] = !x[k];
        let (neighbours, weights) = self.row(k);
        for (&j, &weight) in neighbours.iter().zip(weights) {
            fields[j as usize] += sign * weight;
        }
    }

    /// The change of `f` if `x_i` flipped.
    pub(crate) fn gain(x: &[bool], fields: &[f64], i: usize) -> f64 {
        if x[i] { -fields[i] } else { fields[i] }
    }
}

/// A dense function of `n` variables with integer biases in -100..=100, for the tests.
#[cfg(test)]
pub(crate) fn random_qubo(n: usize, seed: u64) -> Qubo {
    let mut random = crate::random::SplitMix64::new(seed);
    let mut bias = move || random.below(201) as f64 - 100.0;
    let linear = (0..n).map(|_| bias()).collect();
    let mut pairs = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            pairs.push((i, j, bias()));
        }
    }
    Qubo::new(linear, &pairs)
}
