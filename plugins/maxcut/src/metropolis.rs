//! What the two heuristics share: a cut that moves by Metropolis sweeps at a temperature, and
//! the best cut seen, kept up to date as it happens.
//!
//! A sweep visits the nodes in order. A node moves when its flip gains, or with probability
//! `exp(gain / T)` when it loses. Gains are kept incrementally, so a refused visit costs a
//! comparison (and a random number when the move stands a chance), an accepted one the
//! node's degree.

use std::time::Duration;

use crate::graph::Graph;
use crate::random::SplitMix64;
use crate::solver::Clock;

/// `ln(u)` for `u` uniform in (0, 1), at 4,096 evenly spaced points: a losing move of gain
/// `g` is taken when `g > T ln(u)`, which happens with probability `exp(g / T)` (to within
/// the table's resolution), with no logarithm or exponential in the inner loop.
pub struct LogUniform {
    table: Vec<f64>,
}

impl LogUniform {
    const BITS: u32 = 12;

    pub fn new() -> LogUniform {
        let size = 1usize << Self::BITS;
        LogUniform {
            table: (0..size)
                .map(|index| ((index as f64 + 0.5) / size as f64).ln())
                .collect(),
        }
    }

    /// The smallest value drawn: a gain below `T` times this is never taken.
    fn min(&self) -> f64 {
        self.table[0]
    }

    fn draw(&self, random: &mut SplitMix64) -> f64 {
        self.table[(random.next_u64() >> (64 - Self::BITS)) as usize]
    }
}

/// One cut with its flip gains.
pub struct Replica {
    pub sides: Vec<bool>,
    gains: Vec<f64>,
    pub cut: f64,
    /// The nodes moved since the best was last copied from this replica, so that the next
    /// copy takes only those; `None` when it must copy everything.
    moved: Option<Vec<u32>>,
}

impl Replica {
    /// A cut with each node's side drawn at random.
    pub fn random(graph: &Graph, random: &mut SplitMix64) -> Replica {
        let sides: Vec<bool> = (0..graph.num_nodes())
            .map(|_| random.next_u64() & 1 == 1)
            .collect();
        Replica::from_sides(graph, &sides)
    }

    /// The cut with these sides.
    pub fn from_sides(graph: &Graph, sides: &[bool]) -> Replica {
        Replica {
            gains: graph.flip_gains(sides),
            cut: graph.cut_value(sides),
            sides: sides.to_vec(),
            moved: None,
        }
    }

    /// One Metropolis sweep at `temperature`. Whenever the cut beats the best, the best
    /// becomes this replica's cut (`index` names the replica to it).
    pub fn sweep(
        &mut self,
        graph: &Graph,
        temperature: f64,
        random: &mut SplitMix64,
        log_uniform: &LogUniform,
        best: &mut Best,
        index: usize,
    ) {
        let never_taken = temperature * log_uniform.min();
        let (offsets, targets, weights) = graph.csr();
        let n = self.sides.len();
        let mut cut = self.cut;
        for node in 0..n {
            let gain = self.gains[node];
            if gain < 0.0 && (gain <= never_taken || gain <= temperature * log_uniform.draw(random))
            {
                continue;
            }
            cut += gain;
            let side = !self.sides[node];
            self.sides[node] = side;
            self.gains[node] = -gain;
            for edge in offsets[node]..offsets[node + 1] {
                let neighbour = targets[edge] as usize;
                let weight = weights[edge];
                let change = if self.sides[neighbour] == side {
                    weight
                } else {
                    -weight
                };
                self.gains[neighbour] += 2.0 * change;
            }
            if let Some(moved) = &mut self.moved {
                moved.push(node as u32);
                if moved.len() > n {
                    self.moved = None;
                }
            }
            if cut > best.beaten_above {
                self.cut = cut;
                best.take(index, self);
            }
        }
        self.cut = cut;
    }

    /// Flips every node whose flip gains until none is left.
    pub fn descend(&mut self, graph: &Graph, best: &mut Best, index: usize) {
        let mut improved = true;
        while improved {
            improved = false;
            for node in 0..self.sides.len() {
                if self.gains[node] > best.noise {
                    self.flip(graph, node);
                    improved = true;
                }
            }
        }
        if self.cut > best.beaten_above {
            best.take(index, self);
        }
    }

    fn flip(&mut self, graph: &Graph, node: usize) {
        self.cut += self.gains[node];
        graph.flip(&mut self.sides, &mut self.gains, node);
        if let Some(moved) = &mut self.moved {
            moved.push(node as u32);
            if moved.len() > self.sides.len() {
                self.moved = None;
            }
        }
    }
}

/// The best cut seen, which replica it was last taken from, and when.
pub struct Best {
    pub sides: Vec<bool>,
    pub cut: f64,
    pub found_at: Duration,
    /// A cut must be larger than this to count as better: float noise is not progress.
    beaten_above: f64,
    noise: f64,
    source: usize,
    clock_started: std::time::Instant,
}

impl Best {
    /// Starts from `replica`; improvements smaller than `noise` do not count.
    pub fn new(index: usize, replica: &mut Replica, noise: f64, clock: &Clock) -> Best {
        replica.moved = Some(Vec::new());
        Best {
            sides: replica.sides.clone(),
            cut: replica.cut,
            found_at: clock.started.elapsed(),
            beaten_above: replica.cut + noise,
            noise,
            source: index,
            clock_started: clock.started,
        }
    }

    /// Takes the replica's cut. From the replica the best came from last time, only the nodes
    /// it moved since are copied; from another, the whole cut.
    pub fn take(&mut self, index: usize, replica: &mut Replica) {
        match replica.moved.as_mut() {
            Some(moved) if index == self.source => {
                for &node in moved.iter() {
                    self.sides[node as usize] = replica.sides[node as usize];
                }
                moved.clear();
            }
            _ => {
                self.sides.copy_from_slice(&replica.sides);
                replica.moved = Some(Vec::new());
            }
        }
        self.source = index;
        self.cut = replica.cut;
        self.beaten_above = replica.cut + self.noise;
        self.found_at = self.clock_started.elapsed();
    }
}
