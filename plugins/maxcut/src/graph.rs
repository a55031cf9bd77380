//! The sparse graph the solvers work on: adjacency lists in compressed rows, each undirected
//! edge stored once per end.

/// Weights of at most this size, all whole, are also kept packed beside their targets for the
/// heuristics' whole-number kernel (see [`crate::weight`]): the G-set's are ±1, Biq Mac's `w`
/// and `pw` families at most 10. It bounds the hottest temperature, and so the length of the
/// table of chances by loss, to about 2,100 entries, and lets a weight fit in a byte.
pub const MAX_WHOLE_WEIGHT: f64 = 64.0;

/// The whole-number kernel packs a target into the upper 24 bits of a `u32`.
const MAX_WHOLE_NODES: usize = 1 << 24;

/// The weights' absolute sum, each edge counted from both ends, must stay below this for
/// the whole-number kernel: every gain, cut and block sum it keeps then fits in an `i32`.
const MAX_WHOLE_TOTAL: f64 = (1u64 << 28) as f64;

/// A weighted undirected graph in compressed sparse rows.
#[derive(Debug, Clone)]
pub struct Graph {
    /// `offsets[v]..offsets[v + 1]` indexes `v`'s neighbours in `targets` and `weights`.
    offsets: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<f64>,
    /// Where the weights are all whole and small (see [`MAX_WHOLE_WEIGHT`]), each neighbour
    /// as `target << 8 | weight as i8 as u8`, parallel to `targets`: one load per neighbour
    /// and one cursor for the whole-number kernel's inner loop. Empty otherwise.
    whole_entries: Vec<u32>,
}

impl Graph {
    fn new(offsets: Vec<usize>, targets: Vec<u32>, weights: Vec<f64>) -> Graph {
        let total: f64 = weights.iter().map(|weight| weight.abs()).sum();
        let whole = total < MAX_WHOLE_TOTAL
            && offsets.len() <= MAX_WHOLE_NODES
            && weights
                .iter()
                .all(|weight| weight.fract() == 0.0 && weight.abs() <= MAX_WHOLE_WEIGHT);
        let whole_entries = if whole {
            targets
                .iter()
                .zip(&weights)
                .map(|(&target, &weight)| target << 8 | u32::from(weight as i8 as u8))
                .collect()
        } else {
            Vec::new()
        };
        Graph {
            offsets,
            targets,
            weights,
            whole_entries,
        }
    }

    /// Builds the graph from a symmetric dense matrix, keeping only non-zero off-diagonal entries.
    pub fn from_dense(matrix: &[Vec<f64>]) -> Graph {
        let mut offsets = Vec::with_capacity(matrix.len() + 1);
        let mut targets = Vec::new();
        let mut weights = Vec::new();
        offsets.push(0);
        for (i, row) in matrix.iter().enumerate() {
            for (j, &weight) in row.iter().enumerate() {
                if i != j && weight != 0.0 {
                    targets.push(j as u32);
                    weights.push(weight);
                }
            }
            offsets.push(targets.len());
        }
        Graph::new(offsets, targets, weights)
    }

    /// Builds the graph from an edge list `(i, j, w)` over nodes `0..num_nodes`; parallel edges
    /// add up and self-loops are dropped.
    pub fn from_edges(num_nodes: usize, edges: &[(usize, usize, f64)]) -> Graph {
        let mut degree = vec![0usize; num_nodes];
        for &(i, j, weight) in edges {
            if i != j && weight != 0.0 {
                degree[i] += 1;
                degree[j] += 1;
            }
        }
        let mut offsets = Vec::with_capacity(num_nodes + 1);
        offsets.push(0);
        for d in &degree {
            offsets.push(offsets[offsets.len() - 1] + d);
        }
        let mut cursor = offsets.clone();
        let mut targets = vec![0u32; offsets[num_nodes]];
        let mut weights = vec![0.0; offsets[num_nodes]];
        for &(i, j, weight) in edges {
            if i != j && weight != 0.0 {
                targets[cursor[i]] = j as u32;
                weights[cursor[i]] = weight;
                cursor[i] += 1;
                targets[cursor[j]] = i as u32;
                weights[cursor[j]] = weight;
                cursor[j] += 1;
            }
        }
        Graph::new(offsets, targets, weights)
    }

    pub fn num_nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Undirected edges, each counted once.
    pub fn num_edges(&self) -> usize {
        self.targets.len() / 2
    }

    /// The neighbours of `node` with the weights of the edges to them.
    pub fn neighbours(&self, node: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.offsets[node]..self.offsets[node + 1];
        self.targets[range.clone()]
            .iter()
            .zip(&self.weights[range])
            .map(|(&target, &weight)| (target as usize, weight))
    }

    /// `node`'s neighbours and the weights of the edges to them, as two parallel slices.
    /// Always inlined: in the sandbox, a call here cost every flip a trip through the shadow
    /// stack for the returned slices.
    #[inline(always)]
    pub fn row(&self, node: usize) -> (&[u32], &[f64]) {
        let range = self.offsets[node]..self.offsets[node + 1];
        (&self.targets[range.clone()], &self.weights[range])
    }

    /// `node`'s neighbours packed with their weights, `target << 8 | weight as i8 as u8`, if
    /// [`Graph::has_small_whole_weights`].
    #[inline(always)]
    pub fn whole_row(&self, node: usize) -> &[u32] {
        &self.whole_entries[self.offsets[node]..self.offsets[node + 1]]
    }

    /// Whether the weights are all whole and at most [`MAX_WHOLE_WEIGHT`] in size (and their
    /// sum moderate), so that the heuristics can keep gains in whole numbers.
    pub fn has_small_whole_weights(&self) -> bool {
        self.whole_entries.len() == self.weights.len()
    }

    /// The mean absolute weight of the edges, 1 for a graph without edges: the scale of the
    /// light edges, where the heuristics' coldest temperatures sit.
    pub fn mean_absolute_weight(&self) -> f64 {
        if self.weights.is_empty() {
            1.0
        } else {
            self.weights.iter().map(|weight| weight.abs()).sum::<f64>() / self.weights.len() as f64
        }
    }

    /// The mean absolute weight of the edges with each edge weighted by its own absolute
    /// weight (`Σ w² / Σ |w|`), 1 for a graph without edges: the scale of the heavy edges,
    /// where the heuristics' hottest temperatures sit. It is never below
    /// [`Graph::mean_absolute_weight`], and equal to it when all weights have one size (the
    /// G-set's ±1). Where a few heavy edges hold the graph together among many light ones
    /// (Biq Mac's Ising chains, whose couplings decay with distance), it is far above: a
    /// ladder spanning only the light scale would freeze the heavy edges in their first
    /// places, one spanning only the heavy scale would never settle the light ones.
    pub fn heavy_weight_scale(&self) -> f64 {
        let absolute: f64 = self.weights.iter().map(|weight| weight.abs()).sum();
        if absolute == 0.0 {
            1.0
        } else {
            self.weights
                .iter()
                .map(|weight| weight * weight)
                .sum::<f64>()
                / absolute
        }
    }

    /// The weight of the edges between the two sides, each edge counted once.
    pub fn cut_value(&self, sides: &[bool]) -> f64 {
        let mut twice = 0.0;
        for node in 0..self.num_nodes() {
            for (neighbour, weight) in self.neighbours(node) {
                if sides[node] != sides[neighbour] {
                    twice += weight;
                }
            }
        }
        twice / 2.0
    }

    /// Moves `node` to the other side and updates every gain the move changes; the cut grows
    /// by the node's gain before the move.
    pub fn flip(&self, sides: &mut [bool], gains: &mut [f64], node: usize) {
        let side = !sides[node];
        sides[node] = side;
        gains[node] = -gains[node];
        let (targets, weights) = self.row(node);
        for (&neighbour, &weight) in targets.iter().zip(weights) {
            let neighbour = neighbour as usize;
            // The edge was cut and is not any more, or the other way round: the neighbour's
            // gain for it changes sign.
            if sides[neighbour] == side {
                gains[neighbour] += 2.0 * weight;
            } else {
                gains[neighbour] -= 2.0 * weight;
            }
        }
    }

    /// How much the cut grows if `node` changes side, for every node.
    pub fn flip_gains(&self, sides: &[bool]) -> Vec<f64> {
        (0..self.num_nodes())
            .map(|node| {
                self.neighbours(node)
                    .map(|(neighbour, weight)| {
                        if sides[node] == sides[neighbour] {
                            weight
                        } else {
                            -weight
                        }
                    })
                    .sum()
            })
            .collect()
    }
}
