//! What the two heuristics share: a cut that moves by Metropolis sweeps at a temperature, and
//! the best cut seen, kept up to date as it happens.
//!
//! A sweep visits the nodes in order. A node moves when its flip gains, or with probability
//! `exp(gain / T)` when it loses. Gains are kept incrementally, so a refused visit costs a
//! comparison (and a random number when the move stands a chance), an accepted one the
//! node's degree.

use std::time::Duration;

use crate::clock::Clock;
use crate::graph::Graph;
use crate::weight::Weight;
use caseload_quadratic::SplitMix64;

/// A node as a replica sees it: the gain of flipping it, and its side as a spin, `1` or
/// `-1`. Kept together, a neighbour's update touches one place in memory and needs no
/// branch: the gain of a neighbour changes by `2 w s_node s_neighbour`.
#[derive(Debug, Clone, Copy)]
struct Site<W> {
    gain: W,
    spin: W,
}

/// A replica records up to one move per this many nodes. Past that the best copies the
/// whole cut, at a cost of at most this many node copies per flip made since: a small
/// part of the flips' own cost, and every replica's buffer stays small (G81's 64
/// replicas of 20,000 nodes hold 0.6 MiB, not 5).
const MOVED_PER_NODE: usize = 8;

/// One cut with its flip gains, in `f64` or, for small whole weights, `i32` (see
/// [`crate::weight`]).
pub struct Replica<W> {
    sites: Vec<Site<W>>,
    pub cut: W,
    /// The nodes moved since the best was last copied from this replica, so that the next
    /// copy takes only those: `moved[..moved_count]`. A count past the buffer's length means
    /// the next copy must take every node: more moved than the buffer holds, or the replica
    /// has not been copied from yet.
    moved: Vec<u32>,
    moved_count: usize,
}

/// By hand, for `clone_from`: `#[derive(Clone)]` leaves it as `*self = source.clone()`, which
/// allocates a new replica and frees the old one. Population annealing copies replicas over
/// each other hundreds of times a run; this reuses their buffers.
impl<W: Copy> Clone for Replica<W> {
    fn clone(&self) -> Replica<W> {
        Replica {
            sites: self.sites.clone(),
            cut: self.cut,
            moved: self.moved.clone(),
            moved_count: self.moved_count,
        }
    }

    fn clone_from(&mut self, source: &Replica<W>) {
        self.sites.clone_from(&source.sites);
        self.cut = source.cut;
        self.moved.clone_from(&source.moved);
        self.moved_count = source.moved_count;
    }
}

impl<W: Weight> Replica<W> {
    /// A cut with each node's side drawn at random.
    pub fn random(graph: &Graph, random: &mut SplitMix64) -> Replica<W> {
        let sides: Vec<bool> = (0..graph.num_nodes())
            .map(|_| random.next_u64() & 1 == 1)
            .collect();
        Replica::from_sides(graph, &sides)
    }

    /// The cut with these sides.
    pub fn from_sides(graph: &Graph, sides: &[bool]) -> Replica<W> {
        let spin = |side: bool| if side { W::ONE } else { -W::ONE };
        // Gains and the cut summed in `W` from `W`'s weights, so that whole numbers stay
        // exact.
        let mut cut = W::ZERO;
        let sites = (0..graph.num_nodes())
            .map(|node| {
                let mut gain = W::ZERO;
                W::for_each_neighbour(graph, node, |neighbour, weight| {
                    if sides[node] == sides[neighbour] {
                        gain += weight;
                    } else {
                        gain += -weight;
                        if node < neighbour {
                            cut += weight;
                        }
                    }
                });
                Site {
                    gain,
                    spin: spin(sides[node]),
                }
            })
            .collect();
        let moved = vec![0; sides.len().div_ceil(MOVED_PER_NODE)];
        Replica {
            sites,
            cut,
            // Past the buffer: nothing recorded yet.
            moved_count: moved.len() + 1,
            moved,
        }
    }

    /// The bytes a replica of `n` nodes holds: its sites and its buffer of moved nodes.
    pub fn bytes(n: usize) -> usize {
        n * size_of::<Site<W>>() + n.div_ceil(MOVED_PER_NODE) * size_of::<u32>()
    }

    /// The gain of flipping each node, as the replica keeps it.
    #[cfg(test)]
    pub fn gains(&self) -> Vec<W> {
        self.sites.iter().map(|site| site.gain).collect()
    }

    /// The side of each node.
    pub fn sides(&self) -> Vec<bool> {
        self.sites.iter().map(|site| site.spin > W::ZERO).collect()
    }

    /// One Metropolis sweep at the temperature `acceptance` was made for. Whenever the cut
    /// beats the best, the best becomes this replica's cut (`index` names the replica to it).
    pub fn sweep(
        &mut self,
        graph: &Graph,
        acceptance: &W::Acceptance,
        random: &mut SplitMix64,
        best: &mut Best<W>,
        index: usize,
    ) {
        let mut start = 0;
        while let Some(node) =
            self.sweep_until_beaten(graph, start, acceptance, random, best.beaten_above)
        {
            best.take(index, self);
            start = node + 1;
        }
    }

    /// The sweep from node `start` on, until the cut exceeds `beaten_above`; returns the node
    /// whose flip made it so, if one did.
    ///
    /// This is the solvers' inner loop, and it calls nothing: no `Best::take`, no `Vec`
    /// that may grow, `Graph::row` inlined. With those calls inside, the sandbox's code
    /// called `row` on every flip (its slices returned through the shadow stack) and kept
    /// the loop's state on the stack around the calls; the cut, the move count and the
    /// generator are local copies here for the same reason. On 200 million visits of G1
    /// this took the sandbox from 1.34 s to 1.22 s, and natively from 0.89 s to 0.72 s.
    #[inline(never)]
    fn sweep_until_beaten(
        &mut self,
        graph: &Graph,
        start: usize,
        acceptance: &W::Acceptance,
        random: &mut SplitMix64,
        beaten_above: W,
    ) -> Option<usize> {
        let Replica {
            sites,
            cut,
            moved,
            moved_count,
        } = self;
        let (sites, moved) = (&mut sites[..], &mut moved[..]);
        let (mut local_cut, mut local_count, mut local_random) =
            (*cut, *moved_count, random.clone());
        let mut beaten = None;
        for node in start..sites.len() {
            let gain = sites[node].gain;
            if gain < W::ZERO && W::refuses(gain, acceptance, &mut local_random) {
                continue;
            }
            local_cut += flip_site(sites, graph, node);
            record_move(moved, &mut local_count, node);
            if local_cut > beaten_above {
                beaten = Some(node);
                break;
            }
        }
        (*cut, *moved_count, *random) = (local_cut, local_count, local_random);
        beaten
    }

    /// Flips every node whose flip gains until none is left.
    pub fn descend(&mut self, graph: &Graph, best: &mut Best<W>, index: usize) {
        let mut improved = true;
        while improved {
            improved = false;
            for node in 0..self.sites.len() {
                if self.sites[node].gain > best.noise {
                    self.flip(graph, node);
                    improved = true;
                }
            }
        }
        if self.cut > best.beaten_above {
            best.take(index, self);
        }
    }

    /// Moves `node` to the other side and updates every gain the move changes.
    #[inline(always)]
    fn flip(&mut self, graph: &Graph, node: usize) {
        self.cut += flip_site(&mut self.sites, graph, node);
        record_move(&mut self.moved, &mut self.moved_count, node);
    }
}

/// Moves `node` to the other side and updates every gain the move changes; returns the
/// move's gain.
#[inline(always)]
fn flip_site<W: Weight>(sites: &mut [Site<W>], graph: &Graph, node: usize) -> W {
    let site = &mut sites[node];
    let gain = site.gain;
    site.gain = -gain;
    site.spin = -site.spin;
    // Each edge to a neighbour on the node's new side was cut and is not any more, so
    // flipping the neighbour would now gain its weight where it lost it: `+2w`. An edge
    // to the other side, the reverse. Both are `2 w s_node s_neighbour`.
    let scale = site.spin + site.spin;
    W::for_each_neighbour(graph, node, |neighbour, weight| {
        let neighbour = &mut sites[neighbour];
        neighbour.gain += scale * weight * neighbour.spin;
    });
    gain
}

/// Appends `node` to the moved nodes while they fit; past that, the count only says so (it
/// stops one past the buffer, so it cannot overflow). No branch that can allocate.
#[inline(always)]
fn record_move(moved: &mut [u32], count: &mut usize, node: usize) {
    if let Some(slot) = moved.get_mut(*count) {
        *slot = node as u32;
    }
    *count = (*count + 1).min(moved.len() + 1);
}

/// What a cluster move needs between calls, so that it allocates nothing.
pub struct ClusterScratch {
    /// `mark[node] == round` when the node joined the cluster of move number `round`.
    mark: Vec<u32>,
    round: u32,
    cluster: Vec<u32>,
}

impl ClusterScratch {
    pub fn new(n: usize) -> ClusterScratch {
        ClusterScratch {
            mark: vec![0; n],
            round: 0,
            cluster: Vec::new(),
        }
    }
}

/// Houdayer's cluster move (Houdayer 2001, "A cluster Monte Carlo algorithm for
/// 2-dimensional spin glasses") between two replicas at one temperature.
///
/// Where the two cuts disagree, a connected cluster of disagreeing nodes grown from a random
/// one is flipped in both: each replica takes the other's sides there. The two cuts' sum is
/// unchanged, so the move is always accepted, yet it carries whole domains between replicas,
/// which single flips at a low temperature almost never do. Since a cut and its mirror image
/// are the same cut, replicas that agree on fewer than half the nodes are compared with one
/// of them mirrored. Nothing here is linear in the graph's size but the cluster. Returns the
/// cluster's size.
#[allow(clippy::too_many_arguments)]
pub fn cluster_move<W: Weight>(
    graph: &Graph,
    replicas: &mut [Replica<W>],
    (first, second): (usize, usize),
    random: &mut SplitMix64,
    scratch: &mut ClusterScratch,
    best: &mut Best<W>,
) -> usize {
    let (a, b) = (&replicas[first].sites, &replicas[second].sites);
    let n = a.len();
    // Whether to mirror one replica: by a sample, which is cheap and decides well unless the
    // two agree on about half the nodes, where either choice will do.
    let agreeing = (0..64)
        .filter(|_| {
            let node = random.below(n as u64) as usize;
            a[node].spin == b[node].spin
        })
        .count();
    // Mirrored, the nodes that agree are the ones that differ.
    let mirrored = agreeing < 32;
    let differ = |node: usize| (a[node].spin == b[node].spin) == mirrored;
    // A random disagreeing node. If a few draws find none, the two (nearly) coincide and
    // there is little to trade.
    let Some(start) = (0..16)
        .map(|_| random.below(n as u64) as usize)
        .find(|&node| differ(node))
    else {
        return 0;
    };

    scratch.round = scratch.round.wrapping_add(1);
    if scratch.round == 0 {
        scratch.mark.fill(0);
        scratch.round = 1;
    }
    let round = scratch.round;
    scratch.cluster.clear();
    scratch.cluster.push(start as u32);
    scratch.mark[start] = round;
    let mut next = 0;
    while next < scratch.cluster.len() {
        let node = scratch.cluster[next] as usize;
        next += 1;
        for &neighbour in graph.row(node).0 {
            let neighbour = neighbour as usize;
            if scratch.mark[neighbour] != round && differ(neighbour) {
                scratch.mark[neighbour] = round;
                scratch.cluster.push(neighbour as u32);
            }
        }
    }
    for &node in &scratch.cluster {
        replicas[first].flip(graph, node as usize);
        replicas[second].flip(graph, node as usize);
    }
    for index in [first, second] {
        if replicas[index].cut > best.beaten_above {
            best.take(index, &mut replicas[index]);
        }
    }
    scratch.cluster.len()
}

/// What a block move needs between calls, so that it allocates nothing.
pub struct BlockScratch<W> {
    /// Row `end`'s couplings to earlier nodes, scattered by node; zero elsewhere.
    couplings: Vec<W>,
    /// `inside[start]`: the couplings within `start..end`, each pair counted twice.
    inside: Vec<W>,
    /// `gains[start]`: the flip gains of the nodes `start..end`, summed.
    gains: Vec<W>,
}

impl<W: Weight> BlockScratch<W> {
    pub fn new(n: usize) -> BlockScratch<W> {
        BlockScratch {
            couplings: vec![W::ZERO; n],
            inside: vec![W::ZERO; n],
            gains: vec![W::ZERO; n],
        }
    }
}

/// Flips the block of consecutive nodes `start..end` whose flip gains most, if one gains.
///
/// Instances that come from geometry number their nodes along it: Liers' Ising chains, whose
/// couplings decay with distance, grids in row order. There a block is a domain, and
/// flipping it moves two domain walls at once, which single flips do only over a barrier
/// the size of the strongest couplings they break on the way. Every block is weighed: the
/// gain of flipping a set `S` is the sum of its nodes' flip gains less its inner couplings
/// `c_ij` (the weight, signed `+` where `i` and `j` are on one side) counted twice, and both
/// sums grow by one node at a time as `end` advances, so all `n (n + 1) / 2` blocks take
/// `O(n²)` additions and no memory beyond three rows. A block that wraps around the end is
/// the complement of one that does not, and flipping a set or its complement is the same
/// cut. Returns whether it flipped a block.
pub fn block_move<W: Weight>(
    graph: &Graph,
    replica: &mut Replica<W>,
    scratch: &mut BlockScratch<W>,
    best: &mut Best<W>,
    index: usize,
) -> bool {
    let sites = &replica.sites;
    let BlockScratch {
        couplings,
        inside,
        gains,
    } = scratch;
    let mut chosen = (0, 0, best.noise);
    for end in 0..sites.len() {
        W::for_each_neighbour(graph, end, |neighbour, weight| {
            if neighbour < end {
                couplings[neighbour] = weight * sites[neighbour].spin * sites[end].spin;
            }
        });
        let gain = sites[end].gain;
        inside[end] = W::ZERO;
        gains[end] = gain;
        if gain > chosen.2 {
            chosen = (end, end + 1, gain);
        }
        // Walking `start` down, `to_end` sums the couplings of `start..end` with `end`.
        let mut to_end = W::ZERO;
        for start in (0..end).rev() {
            to_end += couplings[start];
            couplings[start] = W::ZERO;
            inside[start] += to_end + to_end;
            gains[start] += gain;
            let block_gain = gains[start] - inside[start];
            if block_gain > chosen.2 {
                chosen = (start, end + 1, block_gain);
            }
        }
    }
    let (start, end, _) = chosen;
    for node in start..end {
        replica.flip(graph, node);
    }
    if replica.cut > best.beaten_above {
        best.take(index, replica);
    }
    end > start
}

/// The best cut seen, which replica it was last taken from, and when.
pub struct Best<W> {
    pub sides: Vec<bool>,
    pub cut: W,
    pub found_at: Duration,
    /// A cut must be larger than this to count as better: float noise is not progress.
    beaten_above: W,
    noise: W,
    source: usize,
    clock_started: std::time::Instant,
}

impl<W: Weight> Best<W> {
    /// Starts from `replica`; improvements smaller than `noise` do not count.
    pub fn new(index: usize, replica: &mut Replica<W>, noise: W, clock: &Clock) -> Best<W> {
        replica.moved_count = 0;
        Best {
            sides: replica.sides(),
            cut: replica.cut,
            found_at: clock.started.elapsed(),
            beaten_above: replica.cut + noise,
            noise,
            source: index,
            clock_started: clock.started,
        }
    }

    /// Says that the replica at `index` was overwritten by a copy of another: the next cut
    /// taken from it is copied whole.
    pub fn replaced(&mut self, index: usize) {
        if index == self.source {
            self.source = usize::MAX;
        }
    }

    /// Takes the replica's cut. From the replica the best came from last time, only the nodes
    /// it moved since are copied; from another, the whole cut.
    pub fn take(&mut self, index: usize, replica: &mut Replica<W>) {
        if index == self.source && replica.moved_count <= replica.moved.len() {
            for &node in &replica.moved[..replica.moved_count] {
                self.sides[node as usize] = replica.sites[node as usize].spin > W::ZERO;
            }
        } else {
            for (side, site) in self.sides.iter_mut().zip(&replica.sites) {
                *side = site.spin > W::ZERO;
            }
        }
        replica.moved_count = 0;
        self.source = index;
        self.cut = replica.cut;
        self.beaten_above = replica.cut + self.noise;
        self.found_at = self.clock_started.elapsed();
    }
}
