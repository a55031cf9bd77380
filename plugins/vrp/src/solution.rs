//! A plan as the genetic search keeps it: the movable clients of each vehicle slot's route
//! (a slot's fixed prefix is implied), what it costs, and each client's neighbours in it for
//! the population's diversity measure.

use crate::penalty::Penalties;
use crate::problem::Problem;
use crate::segment::Segment;

/// What a plan costs and how far from feasible it is, in model units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cost {
    pub distance: i64,
    /// Fixed costs of the vehicles used.
    pub fixed: i64,
    /// Load over capacity, summed over routes.
    pub excess_load: i64,
    /// Time warp plus time over the duration limit, summed over routes.
    pub time_excess: i64,
    pub routes_used: usize,
}

impl Cost {
    pub fn feasible(&self) -> bool {
        self.excess_load == 0 && self.time_excess == 0
    }

    /// The objective of a feasible plan: distance plus fixed costs.
    pub fn objective(&self) -> i64 {
        self.distance + self.fixed
    }
}

/// One route's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteCost {
    pub distance: i64,
    pub load: i64,
    pub segment: Segment,
    pub used: bool,
}

impl RouteCost {
    pub fn excess_load(&self, problem: &Problem) -> i64 {
        (self.load - problem.capacity).max(0)
    }

    /// Time warp plus time over the duration limit.
    pub fn time_excess(&self, problem: &Problem) -> i64 {
        if !problem.timed {
            return 0;
        }
        self.segment.time_warp + (self.segment.duration - problem.max_duration).max(0)
    }

    pub fn penalised(&self, problem: &Problem, penalties: &Penalties) -> i64 {
        let fixed = if self.used { problem.fixed_cost } else { 0 };
        self.distance + fixed + penalties.cost(self.excess_load(problem), self.time_excess(problem))
    }
}

/// Evaluates slot `slot`'s route serving `clients` after its prefix.
pub fn route_cost(problem: &Problem, slot: usize, clients: &[u32]) -> RouteCost {
    let start = problem.start(slot);
    let mut distance = start.distance;
    let mut load = start.load;
    let mut segment = start.segment;
    let mut at = start.location;
    for &client in clients {
        distance += problem.travel.dist(at, client);
        load += problem.demand[client as usize];
        if problem.timed {
            segment = segment.then(problem.travel.time(at, client), problem.visit(client));
        }
        at = client;
    }
    distance += problem.travel.dist(at, 0);
    if problem.timed {
        segment = segment.then(problem.travel.time(at, 0), problem.depot_end);
    }
    RouteCost {
        distance,
        load,
        segment,
        used: !clients.is_empty() || problem.has_prefix(slot),
    }
}

/// A plan in the population.
#[derive(Debug, Clone)]
pub struct Individual {
    /// Each slot's movable clients in visiting order.
    pub routes: Vec<Vec<u32>>,
    pub cost: Cost,
    /// Excess load and time of each route with any, priced route by route as the local
    /// search prices them.
    pub violations: Vec<(i64, i64)>,
    /// Each location's successor and predecessor (0 for the depot).
    pub successor: Vec<u32>,
    pub predecessor: Vec<u32>,
}

impl Individual {
    pub fn new(problem: &Problem, routes: Vec<Vec<u32>>) -> Individual {
        let mut cost = Cost::default();
        let mut violations = Vec::new();
        let mut successor = vec![0; problem.num_clients + 1];
        let mut predecessor = vec![0; problem.num_clients + 1];
        for (slot, clients) in routes.iter().enumerate() {
            let route = route_cost(problem, slot, clients);
            cost.distance += route.distance;
            if route.used {
                cost.fixed += problem.fixed_cost;
                cost.routes_used += 1;
            }
            let (excess_load, time_excess) =
                (route.excess_load(problem), route.time_excess(problem));
            cost.excess_load += excess_load;
            cost.time_excess += time_excess;
            if excess_load > 0 || time_excess > 0 {
                violations.push((excess_load, time_excess));
            }
            let mut previous = 0;
            for &client in clients {
                predecessor[client as usize] = previous;
                successor[previous as usize] = client;
                previous = client;
            }
            successor[previous as usize] = 0;
        }
        successor[0] = 0;
        Individual {
            routes,
            cost,
            violations,
            successor,
            predecessor,
        }
    }

    /// The routes one after the other, as the genetic operators read a plan.
    pub fn giant_tour(&self) -> Vec<u32> {
        self.routes.iter().flatten().copied().collect()
    }

    /// The penalised cost: the objective plus each route's priced excess.
    pub fn penalised(&self, penalties: &Penalties) -> i64 {
        self.cost.objective()
            + self
                .violations
                .iter()
                .map(|&(load, time)| penalties.cost(load, time))
                .sum::<i64>()
    }

    /// The broken-pairs distance to `other` (Prins 2009, as in HGS-CVRP): the share of
    /// clients whose neighbours in the two plans differ.
    pub fn broken_pairs(&self, other: &Individual, movable: &[u32]) -> f64 {
        let mut differences = 0usize;
        for &client in movable {
            let c = client as usize;
            let (next, previous) = (self.successor[c], self.predecessor[c]);
            if next != other.successor[c] && next != other.predecessor[c] {
                differences += 1;
            }
            if previous == 0 && other.predecessor[c] != 0 && other.successor[c] != 0 {
                differences += 1;
            }
        }
        differences as f64 / movable.len().max(1) as f64
    }
}
