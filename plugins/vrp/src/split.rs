//! Split (Prins 2004; Vidal 2016, "Split algorithm in O(n) for the capacitated vehicle
//! routing problem"): the best way to cut a giant tour into routes, each route's cost its
//! distance, its fixed cost and its penalised excess load. Linear in the tour's length with
//! an unlimited fleet; with a limited one, O(n·K) over K layers when the unlimited cut uses
//! too many routes. Time windows are not considered: time-constrained instances recombine by
//! routes (`crossover.rs`), and split only makes random starting plans.

use std::collections::VecDeque;

use crate::penalty::Penalties;
use crate::problem::Problem;

/// The limited-fleet split keeps K + 1 layers of n + 1 numbers; above this many it is not
/// run, and the plan's surplus routes are merged into others by the caller.
const MAX_LAYER_ENTRIES: usize = 4_000_000;

/// The tour's prefix sums that route costs are computed from.
struct Sums {
    load: Vec<f64>,
    distance: Vec<f64>,
    from_depot: Vec<f64>,
    to_depot: Vec<f64>,
    capacity: f64,
    load_price: f64,
    fixed: f64,
}

impl Sums {
    fn new(problem: &Problem, tour: &[u32], penalties: &Penalties) -> Sums {
        let m = tour.len();
        let mut sums = Sums {
            load: vec![0.0; m + 1],
            distance: vec![0.0; m + 2],
            from_depot: vec![0.0; m + 2],
            to_depot: vec![0.0; m + 2],
            capacity: problem.capacity as f64,
            load_price: penalties.load,
            fixed: problem.fixed_cost as f64,
        };
        for (k, &client) in tour.iter().enumerate() {
            let i = k + 1;
            sums.load[i] = sums.load[i - 1] + problem.demand[client as usize] as f64;
            sums.from_depot[i] = problem.travel.dist(0, client) as f64;
            sums.to_depot[i] = problem.travel.dist(client, 0) as f64;
            if i > 1 {
                sums.distance[i] =
                    sums.distance[i - 1] + problem.travel.dist(tour[k - 1], client) as f64;
            }
        }
        sums.distance[m + 1] = sums.distance[m];
        sums
    }

    /// Cost of reaching `j` with a route serving `i + 1..=j` after a best cost `potential`
    /// of serving `1..=i`.
    #[inline]
    fn propagate(&self, potential: f64, i: usize, j: usize) -> f64 {
        potential + self.distance[j] - self.distance[i + 1]
            + self.from_depot[i + 1]
            + self.to_depot[j]
            + self.fixed
            + self.load_price * (self.load[j] - self.load[i] - self.capacity).max(0.0)
    }

    /// Whether predecessor `i` dominates `j` (`i < j`) for every later client.
    #[inline]
    fn dominates(&self, potential_i: f64, i: usize, potential_j: f64, j: usize) -> bool {
        potential_j + self.from_depot[j + 1]
            > potential_i + self.from_depot[i + 1] + self.distance[j + 1] - self.distance[i + 1]
                + self.load_price * (self.load[j] - self.load[i])
    }

    /// Whether `j` dominates `i` (`i < j`) for every later client.
    #[inline]
    fn dominates_right(&self, potential_i: f64, i: usize, potential_j: f64, j: usize) -> bool {
        potential_j + self.from_depot[j + 1]
            < potential_i + self.from_depot[i + 1] + self.distance[j + 1] - self.distance[i + 1]
                + 1e-9
    }
}

/// The giant tour cut into at most `max_routes` routes if the fleet allows (more when even
/// the best cut needs more and the layered split is too large to run), cheapest first.
pub fn split(
    problem: &Problem,
    tour: &[u32],
    penalties: &Penalties,
    max_routes: usize,
) -> Vec<Vec<u32>> {
    let m = tour.len();
    if m == 0 {
        return Vec::new();
    }
    let sums = Sums::new(problem, tour, penalties);
    // Unlimited fleet, in O(n).
    let mut potential = vec![f64::INFINITY; m + 1];
    let mut predecessor = vec![0usize; m + 1];
    potential[0] = 0.0;
    let mut queue: VecDeque<usize> = VecDeque::with_capacity(m + 1);
    queue.push_back(0);
    for i in 1..=m {
        let front = queue[0];
        potential[i] = sums.propagate(potential[front], front, i);
        predecessor[i] = front;
        if i < m {
            let back = queue[queue.len() - 1];
            if !sums.dominates(potential[back], back, potential[i], i) {
                while let Some(&back) = queue.back()
                    && sums.dominates_right(potential[back], back, potential[i], i)
                {
                    queue.pop_back();
                }
                queue.push_back(i);
            }
            while queue.len() > 1
                && sums.propagate(potential[queue[0]], queue[0], i + 1)
                    > sums.propagate(potential[queue[1]], queue[1], i + 1) - 1e-9
            {
                queue.pop_front();
            }
        }
    }
    let routes = cut(tour, &predecessor);
    if routes.len() <= max_routes
        || max_routes == 0
        || (max_routes + 1).saturating_mul(m + 1) > MAX_LAYER_ENTRIES
    {
        return routes;
    }
    // Limited fleet: layer k holds the best costs with k routes.
    let layers = max_routes;
    let mut potentials = vec![vec![f64::INFINITY; m + 1]; layers + 1];
    let mut predecessors = vec![vec![0usize; m + 1]; layers + 1];
    potentials[0][0] = 0.0;
    for k in 0..layers {
        let mut queue: VecDeque<usize> = VecDeque::with_capacity(m + 1);
        queue.push_back(k);
        for i in k + 1..=m {
            let Some(&front) = queue.front() else {
                break;
            };
            potentials[k + 1][i] = sums.propagate(potentials[k][front], front, i);
            predecessors[k + 1][i] = front;
            if i < m {
                let back = queue[queue.len() - 1];
                if !sums.dominates(potentials[k][back], back, potentials[k][i], i) {
                    while let Some(&back) = queue.back()
                        && sums.dominates_right(potentials[k][back], back, potentials[k][i], i)
                    {
                        queue.pop_back();
                    }
                    queue.push_back(i);
                }
                while queue.len() > 1
                    && sums.propagate(potentials[k][queue[0]], queue[0], i + 1)
                        > sums.propagate(potentials[k][queue[1]], queue[1], i + 1) - 1e-9
                {
                    queue.pop_front();
                }
            }
        }
    }
    let mut best_layer = layers;
    for k in 1..=layers {
        if potentials[k][m] < potentials[best_layer][m] {
            best_layer = k;
        }
    }
    if !potentials[best_layer][m].is_finite() {
        return routes;
    }
    let mut ends = Vec::with_capacity(best_layer);
    let mut end = m;
    for k in (1..=best_layer).rev() {
        ends.push(end);
        end = predecessors[k][end];
    }
    ends.reverse();
    let mut routes = Vec::with_capacity(ends.len());
    let mut begin = 0;
    for end in ends {
        routes.push(tour[begin..end].to_vec());
        begin = end;
    }
    routes
}

/// The routes that `predecessor` (the best cut) makes of `tour`.
fn cut(tour: &[u32], predecessor: &[usize]) -> Vec<Vec<u32>> {
    let mut ends = Vec::new();
    let mut end = tour.len();
    while end > 0 {
        ends.push(end);
        end = predecessor[end];
    }
    ends.reverse();
    let mut routes = Vec::with_capacity(ends.len());
    let mut begin = 0;
    for end in ends {
        routes.push(tour[begin..end].to_vec());
        begin = end;
    }
    routes
}
