//! The plan a local search works on: routes as doubly linked lists over node numbers, with
//! each node's cumulative load and distance and its forward and backward time segments, each
//! route's penalised cost, polar sector and change clock, and SWAP*'s insertion caches. The
//! moves (`local_search.rs`, `swap_star.rs`) read and update it through the primitives here.
//!
//! Clients keep their node numbers (`1..=n`), route `r` starts at node `n + 1 + r` and ends
//! at `n + 1 + R + r`. A route start stands at the end of its vehicle's fixed prefix, whose
//! load, distance and time segment it carries, so every move keeps prefixes in place.

use std::collections::BTreeSet;

use crate::penalty::Penalties;
use crate::problem::{FREE, Problem};
use crate::segment::Segment;
use crate::travel::Table;

/// A polar sector (CircleSector of HGS-CVRP) in 1/65536 turns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sector {
    pub(crate) start: i32,
    pub(crate) end: i32,
}

impl Sector {
    fn positive_mod(value: i32) -> i32 {
        value.rem_euclid(65536)
    }

    fn contains(&self, angle: i32) -> bool {
        Self::positive_mod(angle - self.start) <= Self::positive_mod(self.end - self.start)
    }

    fn extend(&mut self, angle: i32) {
        if !self.contains(angle) {
            if Self::positive_mod(angle - self.end) <= Self::positive_mod(self.start - angle) {
                self.end = angle;
            } else {
                self.start = angle;
            }
        }
    }

    pub(crate) fn overlap(&self, other: &Sector) -> bool {
        Self::positive_mod(other.start - self.start) <= Self::positive_mod(self.end - self.start)
            || Self::positive_mod(self.start - other.start)
                <= Self::positive_mod(other.end - other.start)
    }
}

/// The local search's state; one per run, reused for every plan.
pub struct LocalSearch<'p> {
    pub(crate) p: &'p Problem,
    /// The problem's distances and their row length, when they are a dense 32-bit table:
    /// read without matching on the table's kind at every move, which a wasm guest decodes
    /// from a niche and jumps through a table for.
    dense_distance: Option<(&'p [i32], usize)>,
    pub(crate) n: usize,
    pub(crate) num_routes: usize,
    /// Every node's place in the plan, one record each so that a move reads a node's
    /// fields through one index (a wasm guest bounds-checks and addresses every array).
    pub(crate) nodes: Vec<Node>,
    pub(crate) forward: Vec<Segment>,
    pub(crate) backward: Vec<Segment>,
    pub(crate) last_tested: Vec<i64>,
    pub(crate) routes: Vec<RouteState>,
    pub(crate) empty_routes: BTreeSet<u32>,
    pub(crate) order: Vec<u32>,
    pub(crate) route_order: Vec<u32>,
    pub(crate) moves: i64,
    pub(crate) improved: bool,
    pub(crate) penalties: Penalties,
    pub(crate) swap_star_enabled: bool,
    pub(crate) scratch_a: Vec<u32>,
    pub(crate) scratch_b: Vec<u32>,
    pub(crate) best_insert: Vec<ThreeBest>,
    pub(crate) removal_gain: Vec<i64>,
    /// SWAP*'s cache of each client's three best insertions into each route, by route
    /// then client, when it fits ([`MAX_CACHE_ENTRIES`]).
    pub(crate) insert_cache: Vec<ThreeBest>,
    /// A counter that grows with every route change, never reset: a cached insertion
    /// computed since a route's last change (`RouteState::clock`) is still valid.
    pub(crate) clock: i64,
    /// Moves applied since the search was made.
    pub applied: u64,
}

/// A node of the plan: its links, route and place in it, location, and the cumulative
/// load and distances from its route's start.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Node {
    pub(crate) next: u32,
    pub(crate) prev: u32,
    pub(crate) route_of: u32,
    pub(crate) position: u32,
    pub(crate) location: u32,
    /// Clients fixed to a vehicle from this node to its route's end.
    pub(crate) fixed_after: u32,
    pub(crate) cum_load: i64,
    pub(crate) cum_dist: i64,
    /// Distance of the path from the route start to this node travelled backwards.
    pub(crate) cum_back: i64,
}

/// A route of the plan: its totals, penalised cost, polar sector and change clocks.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RouteState {
    pub(crate) load: i64,
    pub(crate) dist: i64,
    /// Penalised cost: distance, fixed cost if used, penalties.
    pub(crate) cost: i64,
    /// The penalty part of `cost`.
    pub(crate) penalty: i64,
    pub(crate) size: u32,
    pub(crate) modified: i64,
    pub(crate) swap_tested: i64,
    pub(crate) sector: Sector,
    /// The search's clock at the route's last change (see `LocalSearch::clock`).
    pub(crate) clock: i64,
}

/// The most entries (routes times clients) SWAP*'s insertion cache holds, 48 bytes each;
/// above, insertions are computed afresh for every route pair.
pub const MAX_CACHE_ENTRIES: usize = 1 << 20;

/// The three cheapest places to insert a client into a route: after which node, and the
/// added distance; and when they were computed (the search's clock).
#[derive(Debug, Clone, Copy)]
pub struct ThreeBest {
    pub(crate) cost: [i64; 3],
    pub(crate) after: [u32; 3],
    pub(crate) computed: i64,
}

impl Default for ThreeBest {
    fn default() -> ThreeBest {
        ThreeBest {
            cost: [i64::MAX; 3],
            after: [u32::MAX; 3],
            computed: -1,
        }
    }
}

impl ThreeBest {
    pub(crate) fn add(&mut self, cost: i64, after: u32) {
        if cost >= self.cost[2] {
            return;
        }
        if cost >= self.cost[1] {
            self.cost[2] = cost;
            self.after[2] = after;
        } else if cost >= self.cost[0] {
            self.cost[2] = self.cost[1];
            self.after[2] = self.after[1];
            self.cost[1] = cost;
            self.after[1] = after;
        } else {
            self.cost[2] = self.cost[1];
            self.after[2] = self.after[1];
            self.cost[1] = self.cost[0];
            self.after[1] = self.after[0];
            self.cost[0] = cost;
            self.after[0] = after;
        }
    }
}

impl<'p> LocalSearch<'p> {
    pub fn new(p: &'p Problem, swap_star: bool) -> LocalSearch<'p> {
        let n = p.num_clients;
        let dense_distance = match &p.travel.distance {
            Table::Dense32 { size, entries } => Some((&entries[..], *size)),
            _ => None,
        };
        LocalSearch {
            p,
            dense_distance,
            n,
            num_routes: 0,
            nodes: Vec::new(),
            forward: Vec::new(),
            backward: Vec::new(),
            last_tested: vec![-1; n + 1],
            routes: Vec::new(),
            empty_routes: BTreeSet::new(),
            order: p.movable.clone(),
            route_order: Vec::new(),
            moves: 0,
            improved: false,
            penalties: Penalties {
                load: 1.0,
                time: 1.0,
            },
            swap_star_enabled: swap_star && !p.timed && p.angle.is_some(),
            scratch_a: Vec::new(),
            scratch_b: Vec::new(),
            best_insert: Vec::new(),
            removal_gain: Vec::new(),
            insert_cache: Vec::new(),
            clock: 0,
            applied: 0,
        }
    }

    #[inline]
    pub(crate) fn start_node(&self, route: usize) -> u32 {
        (self.n + 1 + route) as u32
    }

    #[inline]
    pub(crate) fn end_node(&self, route: usize) -> u32 {
        (self.n + 1 + self.num_routes + route) as u32
    }

    #[inline]
    pub(crate) fn is_depot(&self, node: u32) -> bool {
        node as usize > self.n
    }

    #[inline(always)]
    pub(crate) fn d(&self, from: u32, to: u32) -> i64 {
        let (from, to) = (
            self.nodes[from as usize].location,
            self.nodes[to as usize].location,
        );
        match self.dense_distance {
            Some((entries, size)) => i64::from(entries[from as usize * size + to as usize]),
            None => self.p.travel.dist(from, to),
        }
    }

    /// The distance from `node` to its successor, known from the cumulative distances.
    #[inline(always)]
    pub(crate) fn to_next(&self, node: u32) -> i64 {
        let n = node as usize;
        self.nodes[self.nodes[n].next as usize].cum_dist - self.nodes[n].cum_dist
    }

    /// `first` then `second`, with the travel between them.
    #[inline]
    pub(crate) fn join(&self, first: Segment, second: Segment) -> Segment {
        first.then(self.p.travel.time(first.last, second.first), second)
    }

    /// A client node's own visit.
    #[inline]
    pub(crate) fn own(&self, node: u32) -> Segment {
        self.p.visit(node)
    }

    /// `segment` followed by the nodes from `from` to `to` along the route.
    pub(crate) fn walk(&self, mut segment: Segment, from: u32, to: u32) -> Segment {
        let mut node = from;
        loop {
            segment = self.join(segment, self.own(node));
            if node == to {
                return segment;
            }
            node = self.nodes[node as usize].next;
        }
    }

    /// `segment` followed by the nodes from `from` back to `to` along the route, reversed.
    pub(crate) fn walk_back(&self, mut segment: Segment, from: u32, to: u32) -> Segment {
        let mut node = from;
        loop {
            segment = self.join(segment, self.own(node));
            if node == to {
                return segment;
            }
            node = self.nodes[node as usize].prev;
        }
    }

    #[inline]
    pub(crate) fn used(&self, route: usize, size: u32) -> bool {
        size > 0 || self.p.has_prefix(route)
    }

    /// Penalised cost of a route with these numbers.
    #[inline]
    pub(crate) fn cost_of<const TIME: bool>(
        &self,
        distance: i64,
        load: i64,
        segment: &Segment,
        used: bool,
    ) -> i64 {
        let fixed = if used { self.p.fixed_cost } else { 0 };
        let time_excess = if TIME {
            segment.time_warp + (segment.duration - self.p.max_duration).max(0)
        } else {
            0
        };
        distance
            + fixed
            + self
                .penalties
                .cost((load - self.p.capacity).max(0), time_excess)
    }

    /// Loads a plan: `routes[r]` is slot `r`'s movable clients in order.
    pub fn load(&mut self, routes: &[Vec<u32>]) {
        let num_routes = routes.len();
        let nodes = self.n + 1 + 2 * num_routes;
        if num_routes != self.num_routes || self.nodes.len() != nodes {
            self.num_routes = num_routes;
            self.nodes = (0..nodes as u32)
                .map(|location| Node {
                    location,
                    ..Node::default()
                })
                .collect();
            self.forward = vec![Segment::default(); nodes];
            self.backward = vec![Segment::default(); nodes];
            self.routes = vec![
                RouteState {
                    swap_tested: -1,
                    ..RouteState::default()
                };
                num_routes
            ];
            self.route_order = (0..num_routes as u32).collect();
            self.best_insert = vec![ThreeBest::default(); nodes];
            self.removal_gain = vec![0; nodes];
            let entries = num_routes * (self.n + 1);
            self.insert_cache = if self.swap_star_enabled && entries <= MAX_CACHE_ENTRIES {
                vec![ThreeBest::default(); entries]
            } else {
                Vec::new()
            };
        }
        self.empty_routes.clear();
        for (route, clients) in routes.iter().enumerate() {
            let start = self.start_node(route);
            let end = self.end_node(route);
            self.nodes[start as usize].location = self.p.start(route).location;
            self.nodes[end as usize].location = 0;
            let mut previous = start;
            for &client in clients {
                self.nodes[previous as usize].next = client;
                self.nodes[client as usize].prev = previous;
                previous = client;
            }
            self.nodes[previous as usize].next = end;
            self.nodes[end as usize].prev = previous;
            self.nodes[start as usize].prev = start;
            self.nodes[end as usize].next = end;
            self.update_route(route);
        }
    }

    /// The plan: each slot's movable clients in order.
    pub fn routes(&self) -> Vec<Vec<u32>> {
        (0..self.num_routes)
            .map(|route| {
                let mut clients = Vec::with_capacity(self.routes[route].size as usize);
                let mut node = self.nodes[self.start_node(route) as usize].next;
                while !self.is_depot(node) {
                    clients.push(node);
                    node = self.nodes[node as usize].next;
                }
                clients
            })
            .collect()
    }

    /// Recomputes a route's cumulative data after it changed.
    pub(crate) fn update_route(&mut self, route: usize) {
        let p = self.p;
        let start = self.start_node(route);
        let end = self.end_node(route);
        let begin = p.start(route);
        let s = start as usize;
        self.nodes[s].route_of = route as u32;
        self.nodes[s].position = 0;
        self.nodes[s].cum_load = begin.load;
        self.nodes[s].cum_dist = begin.distance;
        self.nodes[s].cum_back = 0;
        self.forward[s] = begin.segment;
        let mut sector = Sector::default();
        let mut first_angle = true;
        let mut node = start;
        let mut position = 0;
        while node != end {
            let following = self.nodes[node as usize].next;
            let f = following as usize;
            let k = node as usize;
            position += 1;
            self.nodes[f].position = position;
            self.nodes[f].route_of = route as u32;
            let is_end = following == end;
            self.nodes[f].cum_load = self.nodes[k].cum_load + if is_end { 0 } else { p.demand[f] };
            self.nodes[f].cum_dist = self.nodes[k].cum_dist + self.d(node, following);
            self.nodes[f].cum_back = self.nodes[k].cum_back + self.d(following, node);
            if p.timed {
                let visit = if is_end {
                    p.depot_end
                } else {
                    self.own(following)
                };
                self.forward[f] = self.join(self.forward[k], visit);
            }
            if self.swap_star_enabled
                && !is_end
                && let Some(angle) = &p.angle
            {
                if first_angle {
                    sector = Sector {
                        start: angle[f],
                        end: angle[f],
                    };
                    first_angle = false;
                } else {
                    sector.extend(angle[f]);
                }
            }
            node = following;
        }
        let size = position - 1;
        let e = end as usize;
        self.backward[e] = p.depot_end;
        self.nodes[e].fixed_after = 0;
        let mut node = self.nodes[e].prev;
        while node != start {
            let k = node as usize;
            let following = self.nodes[k].next as usize;
            if p.timed {
                self.backward[k] = self.join(self.own(node), self.backward[following]);
            }
            self.nodes[k].fixed_after =
                self.nodes[following].fixed_after + u32::from(p.vehicle_of[k] != FREE);
            node = self.nodes[k].prev;
        }
        self.routes[route].size = size;
        self.routes[route].load = self.nodes[e].cum_load;
        self.routes[route].dist = self.nodes[e].cum_dist;
        self.routes[route].sector = sector;
        self.routes[route].modified = self.moves;
        self.clock += 1;
        self.routes[route].clock = self.clock;
        let used = self.used(route, size);
        self.refresh_cost(route, used);
        if used {
            self.empty_routes.remove(&(route as u32));
        } else {
            self.empty_routes.insert(route as u32);
        }
    }

    pub(crate) fn refresh_cost(&mut self, route: usize, used: bool) {
        let e = self.end_node(route) as usize;
        let cost = if self.p.timed {
            self.cost_of::<true>(
                self.routes[route].dist,
                self.routes[route].load,
                &self.forward[e],
                used,
            )
        } else {
            self.cost_of::<false>(
                self.routes[route].dist,
                self.routes[route].load,
                &self.forward[e],
                used,
            )
        };
        self.routes[route].cost = cost;
        let fixed = if used { self.p.fixed_cost } else { 0 };
        self.routes[route].penalty = cost - self.routes[route].dist - fixed;
    }

    /// The penalised cost of the loaded plan.
    pub fn penalised_cost(&self) -> i64 {
        self.routes.iter().map(|route| route.cost).sum()
    }

    /// Records an applied move and refreshes the routes it changed.
    pub(crate) fn applied_to(&mut self, first: usize, second: usize, delta: i64) {
        #[cfg(test)]
        let before = self.penalised_cost();
        self.moves += 1;
        self.applied += 1;
        self.improved = true;
        self.update_route(first);
        if second != first {
            self.update_route(second);
        }
        #[cfg(test)]
        self.check_delta(before, delta);
        let _ = delta;
    }

    /// In tests: the move's computed delta is the change of the plan's penalised cost,
    /// recomputed from scratch.
    #[cfg(test)]
    fn check_delta(&self, before: i64, delta: i64) {
        let plan = crate::solution::Individual::new(self.p, self.routes());
        let after = plan.penalised(&self.penalties);
        assert_eq!(self.penalised_cost(), after, "route bookkeeping drifted");
        assert_eq!(
            after - before,
            delta,
            "a move's delta is not its cost change"
        );
    }

    /// Takes `node` out of its place and puts it right after `after`.
    pub(crate) fn insert_after(&mut self, node: u32, after: u32) {
        let (n, a) = (node as usize, after as usize);
        let (before, following) = (self.nodes[n].prev, self.nodes[n].next);
        self.nodes[before as usize].next = following;
        self.nodes[following as usize].prev = before;
        let next_of_after = self.nodes[a].next;
        self.nodes[a].next = node;
        self.nodes[n].prev = after;
        self.nodes[n].next = next_of_after;
        self.nodes[next_of_after as usize].prev = node;
    }

    /// Exchanges the places of two client nodes.
    pub(crate) fn swap_nodes(&mut self, a: u32, b: u32) {
        let (ai, bi) = (a as usize, b as usize);
        let (pa, na, pb, nb) = (
            self.nodes[ai].prev,
            self.nodes[ai].next,
            self.nodes[bi].prev,
            self.nodes[bi].next,
        );
        if na == b {
            self.link(pa, b);
            self.link(b, a);
            self.link(a, nb);
        } else if nb == a {
            self.link(pb, a);
            self.link(a, b);
            self.link(b, na);
        } else {
            self.link(pa, b);
            self.link(b, na);
            self.link(pb, a);
            self.link(a, nb);
        }
    }

    #[inline]
    pub(crate) fn link(&mut self, from: u32, to: u32) {
        self.nodes[from as usize].next = to;
        self.nodes[to as usize].prev = from;
    }

    /// Relinks route `route` to visit `clients` (movable clients, in order).
    pub(crate) fn relink(&mut self, route: usize, clients: &[u32]) {
        let start = self.start_node(route);
        let end = self.end_node(route);
        let mut previous = start;
        for &client in clients {
            self.link(previous, client);
            previous = client;
        }
        self.link(previous, end);
    }

    /// Collects the clients from `from` to `to` inclusive following `next` (or `prev` when
    /// `backwards`) into `into`; nothing if `from` is a depot.
    pub(crate) fn collect(&self, from: u32, to: u32, backwards: bool, into: &mut Vec<u32>) {
        if self.is_depot(from) {
            return;
        }
        let mut node = from;
        loop {
            into.push(node);
            if node == to {
                return;
            }
            node = if backwards {
                self.nodes[node as usize].prev
            } else {
                self.nodes[node as usize].next
            };
        }
    }

    /// The filter every inter-route move passes first: the change in distance and fixed cost
    /// cannot beat the routes' current penalties, which are the most it could remove.
    #[inline]
    pub(crate) fn hopeless(&self, ru: usize, rv: usize, distance_and_fixed: i64) -> bool {
        distance_and_fixed >= self.routes[ru].penalty + self.routes[rv].penalty
    }

    #[inline]
    pub(crate) fn fixed_delta(&self, route: usize, size_before: u32, size_after: u32) -> i64 {
        let before = self.used(route, size_before);
        let after = self.used(route, size_after);
        match (before, after) {
            (true, false) => -self.p.fixed_cost,
            (false, true) => self.p.fixed_cost,
            _ => 0,
        }
    }
}
