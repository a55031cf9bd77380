//! A plan under repair: routes by vehicle slot with what inserting a client anywhere costs in
//! O(1) (cumulative loads and distances, forward and backward time segments per route).
//! Crossover fills in the clients it dropped with it, the construction and the warm start
//! place clients and routes into slots with it, and the output tries to serve dropped
//! clients again with it.
//!
//! [`Plan::normalise`] makes any list of routes a valid plan for the slots: routes holding
//! clients fixed to a vehicle go to that vehicle's slot, clients on the wrong vehicle and
//! routes beyond the fleet are taken out, and everything taken out is reinserted at its
//! cheapest place.

use crate::penalty::Penalties;
use crate::problem::{FREE, Problem};
use crate::segment::Segment;

/// Not in the plan.
const ABSENT: u32 = u32::MAX;

/// One route's numbers for O(1) insertion.
#[derive(Debug, Clone, Default)]
struct RouteData {
    /// Location of each node: the route start (prefix end or depot), the clients, the depot.
    locations: Vec<u32>,
    /// Load and distance from the start through each node.
    load: Vec<i64>,
    distance: Vec<i64>,
    /// Segments from the start through each node, and from each node to the end.
    forward: Vec<Segment>,
    backward: Vec<Segment>,
    /// Penalised cost of the route.
    cost: i64,
}

/// Routes by slot and their insertion data.
pub struct Plan<'p> {
    p: &'p Problem,
    pub routes: Vec<Vec<u32>>,
    data: Vec<RouteData>,
    /// Each client's slot and index in its route, [`ABSENT`] if not placed.
    slot_of: Vec<u32>,
    index_of: Vec<u32>,
    penalties: Penalties,
}

impl<'p> Plan<'p> {
    /// A plan of `routes` (one per slot) priced with `penalties`.
    pub fn new(p: &'p Problem, routes: Vec<Vec<u32>>, penalties: Penalties) -> Plan<'p> {
        let mut plan = Plan {
            p,
            data: vec![RouteData::default(); routes.len()],
            routes,
            slot_of: vec![ABSENT; p.num_clients + 1],
            index_of: vec![ABSENT; p.num_clients + 1],
            penalties,
        };
        for slot in 0..plan.routes.len() {
            plan.refresh(slot);
        }
        plan
    }

    /// Recomputes slot `slot`'s data after its route changed.
    fn refresh(&mut self, slot: usize) {
        let p = self.p;
        let start = p.start(slot);
        let clients = &self.routes[slot];
        let data = &mut self.data[slot];
        let length = clients.len() + 2;
        data.locations.clear();
        data.locations.push(start.location);
        data.locations.extend_from_slice(clients);
        data.locations.push(0);
        data.load.clear();
        data.distance.clear();
        data.forward.clear();
        data.load.push(start.load);
        data.distance.push(start.distance);
        data.forward.push(start.segment);
        for k in 1..length {
            let (from, to) = (data.locations[k - 1], data.locations[k]);
            let is_end = k == length - 1;
            data.load
                .push(data.load[k - 1] + if is_end { 0 } else { p.demand[to as usize] });
            data.distance
                .push(data.distance[k - 1] + p.travel.dist(from, to));
            if p.timed {
                let visit = if is_end { p.depot_end } else { p.visit(to) };
                data.forward
                    .push(data.forward[k - 1].then(p.travel.time(from, to), visit));
            }
        }
        data.backward.clear();
        if p.timed {
            data.backward.resize(length, Segment::default());
            data.backward[length - 1] = p.depot_end;
            for k in (1..length - 1).rev() {
                let to = data.locations[k + 1];
                let here = data.locations[k];
                data.backward[k] = p
                    .visit(here)
                    .then(p.travel.time(here, to), data.backward[k + 1]);
            }
        }
        let used = !clients.is_empty() || p.has_prefix(slot);
        let (distance, load) = (data.distance[length - 1], data.load[length - 1]);
        let segment = data.forward.last().copied().unwrap_or_default();
        let cost = self.price(distance, load, segment, used);
        self.data[slot].cost = cost;
        for (index, &client) in self.routes[slot].iter().enumerate() {
            self.slot_of[client as usize] = slot as u32;
            self.index_of[client as usize] = index as u32;
        }
    }

    fn price(&self, distance: i64, load: i64, segment: Segment, used: bool) -> i64 {
        let p = self.p;
        let time_excess = if p.timed {
            segment.time_warp + (segment.duration - p.max_duration).max(0)
        } else {
            0
        };
        distance
            + if used { p.fixed_cost } else { 0 }
            + self.penalties.cost((load - p.capacity).max(0), time_excess)
    }

    /// What inserting `client` into slot `slot` after node `after` (0 is the start, `k` the
    /// `k`-th client) adds to the penalised cost.
    fn insertion_delta(&self, client: u32, slot: usize, after: usize) -> i64 {
        let p = self.p;
        let data = &self.data[slot];
        let (from, to) = (data.locations[after], data.locations[after + 1]);
        let length = data.locations.len();
        let distance = data.distance[length - 1] - p.travel.dist(from, to)
            + p.travel.dist(from, client)
            + p.travel.dist(client, to);
        let load = data.load[length - 1] + p.demand[client as usize];
        let segment = if p.timed {
            data.forward[after]
                .then(p.travel.time(from, client), p.visit(client))
                .then(p.travel.time(client, to), data.backward[after + 1])
        } else {
            Segment::default()
        };
        self.price(distance, load, segment, true) - data.cost
    }

    /// The cheapest place for `client`: next to one of its neighbours already placed, or
    /// alone in an empty slot; every place if no neighbour is placed. Returns the slot, the
    /// node to insert after, and the added cost.
    pub fn best_insertion(&self, client: u32) -> Option<(usize, usize, i64)> {
        let p = self.p;
        let mut best: Option<(usize, usize, i64)> = None;
        let consider = |slot: usize, after: usize, best: &mut Option<(usize, usize, i64)>| {
            if !p.allowed(client, slot) {
                return;
            }
            let delta = self.insertion_delta(client, slot, after);
            if best.is_none_or(|(_, _, cost)| delta < cost) {
                *best = Some((slot, after, delta));
            }
        };
        let mut any_neighbour = false;
        for &neighbour in p.neighbours(client) {
            let slot = self.slot_of[neighbour as usize];
            if slot == ABSENT {
                continue;
            }
            any_neighbour = true;
            let index = self.index_of[neighbour as usize] as usize;
            // Before the neighbour and after it.
            consider(slot as usize, index, &mut best);
            consider(slot as usize, index + 1, &mut best);
        }
        let vehicle = p.vehicle_of[client as usize];
        if vehicle != FREE && (vehicle as usize) < self.routes.len() {
            // A fixed client's one slot is always tried in full.
            let slot = vehicle as usize;
            for after in 0..=self.routes[slot].len() {
                consider(slot, after, &mut best);
            }
        } else if !any_neighbour {
            for slot in 0..self.routes.len() {
                for after in 0..=self.routes[slot].len() {
                    consider(slot, after, &mut best);
                }
            }
        }
        if let Some(empty) = (0..self.routes.len()).find(|&slot| {
            self.routes[slot].is_empty() && !p.has_prefix(slot) && p.allowed(client, slot)
        }) {
            consider(empty, 0, &mut best);
        }
        best
    }

    /// Inserts `client` into slot `slot` after node `after`.
    pub fn insert(&mut self, client: u32, slot: usize, after: usize) {
        self.routes[slot].insert(after, client);
        self.refresh(slot);
    }

    /// Inserts each of `clients` at its cheapest place, in the order given.
    pub fn insert_all(&mut self, clients: &[u32]) {
        for &client in clients {
            if let Some((slot, after, _)) = self.best_insertion(client) {
                self.insert(client, slot, after);
            }
        }
    }

    /// The plan's penalised cost.
    pub fn cost(&self) -> i64 {
        self.data.iter().map(|data| data.cost).sum()
    }

    /// The routes, by slot.
    pub fn into_routes(self) -> Vec<Vec<u32>> {
        self.routes
    }

    /// `routes` (in any order, with or without prefix clients, any number of them) as a
    /// plan of `slots` slots that keeps every fixed assignment and serves every movable
    /// client once.
    pub fn normalise(
        p: &'p Problem,
        routes: Vec<Vec<u32>>,
        slots: usize,
        penalties: Penalties,
    ) -> Vec<Vec<u32>> {
        let n = p.num_clients;
        let mut placed = vec![false; n + 1];
        let mut assigned: Vec<Option<Vec<u32>>> = vec![None; slots];
        let mut waiting: Vec<Vec<u32>> = Vec::new();
        let mut missing: Vec<u32> = Vec::new();
        for route in routes {
            let route: Vec<u32> = route
                .into_iter()
                .filter(|&client| {
                    let c = client as usize;
                    let keep = c >= 1 && c <= n && !p.in_prefix[c] && !placed[c];
                    if keep {
                        placed[c] = true;
                    }
                    keep
                })
                .collect();
            if route.is_empty() {
                continue;
            }
            // The route's vehicle: the one most of its fixed clients ride.
            let vehicle = if p.has_fixed {
                let mut counts: Vec<(u32, usize)> = Vec::new();
                for &client in &route {
                    let vehicle = p.vehicle_of[client as usize];
                    if vehicle != FREE {
                        match counts.iter_mut().find(|(v, _)| *v == vehicle) {
                            Some((_, count)) => *count += 1,
                            None => counts.push((vehicle, 1)),
                        }
                    }
                }
                counts
                    .iter()
                    .max_by_key(|&&(v, count)| (count, std::cmp::Reverse(v)))
                    .map(|&(v, _)| v as usize)
            } else {
                None
            };
            match vehicle {
                Some(vehicle) if vehicle < slots && assigned[vehicle].is_none() => {
                    assigned[vehicle] = Some(route);
                }
                _ => waiting.push(route),
            }
        }
        // Routes without a vehicle of their own take the free slots, those no fixed client
        // needs first.
        let mut free: Vec<usize> = (0..slots)
            .filter(|&slot| assigned[slot].is_none())
            .collect();
        free.sort_by_key(|&slot| p.is_fixed_slot(slot));
        let mut free = free.into_iter();
        for route in waiting {
            match free.next() {
                Some(slot) => assigned[slot] = Some(route),
                None => missing.extend(route),
            }
        }
        let mut routes: Vec<Vec<u32>> = assigned
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect();
        // Clients on a vehicle other than theirs leave it.
        if p.has_fixed {
            for (slot, route) in routes.iter_mut().enumerate() {
                route.retain(|&client| {
                    let keep = p.allowed(client, slot);
                    if !keep {
                        missing.push(client);
                    }
                    keep
                });
            }
        }
        for &client in &p.movable {
            if !placed[client as usize] {
                missing.push(client);
            }
        }
        if missing.is_empty() {
            return routes;
        }
        let mut plan = Plan::new(p, routes, penalties);
        plan.insert_all(&missing);
        plan.into_routes()
    }
}
