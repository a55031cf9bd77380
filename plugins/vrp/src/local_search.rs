//! The local search that educates every plan (HGS-CVRP's `LocalSearch`, Vidal 2022): for
//! each client `u` in random order and each granular neighbour `v`, the first improving move
//! among relocating one or two clients after `v` (the pair also reversed), swapping one or two
//! with one or two, 2-opt within a route and 2-opt* between routes (`two_opt.rs`); then SWAP*
//! between routes whose polar sectors overlap (`swap_star.rs`). It repeats until no move improves, testing a
//! pair again only if one of its routes changed since.
//!
//! The plan is the one `linked_routes.rs` holds: doubly linked routes whose starts stand at
//! the end of their vehicle's fixed prefix, so every move keeps prefixes in place; a client
//! fixed to a vehicle moves only within its route.
//!
//! Each move's cost is the change in penalised cost, computed in O(1) from each node's
//! cumulative load and distance and its forward and backward time segments (`segment.rs`);
//! moves within one route walk the part between the two nodes. Costs are in integers, so a
//! move applies only when it strictly improves.

use crate::penalty::Penalties;
use crate::rng::Rng;
use crate::segment::Segment;
use crate::stop::Stop;

pub use crate::linked_routes::LocalSearch;

/// Nodes processed between two stop polls.
const NODES_PER_POLL: usize = 16;

impl LocalSearch<'_> {
    /// Improves the loaded plan until no move improves it or `stop` says so; returns false
    /// if stopped. With `dirty`, the first pass tests only pairs with a node in a dirty route
    /// (the routes a crossover or perturbation changed).
    pub fn run(
        &mut self,
        penalties: Penalties,
        dirty: Option<&[bool]>,
        rng: &mut Rng,
        stop: &Stop,
    ) -> bool {
        self.penalties = penalties;
        for route in 0..self.num_routes {
            let used = self.used(route, self.routes[route].size);
            self.refresh_cost(route, used);
        }
        rng.shuffle(&mut self.order);
        rng.shuffle(&mut self.route_order);
        let mut loop_id: u32;
        match dirty {
            Some(dirty) => {
                self.moves = 1;
                for (route, &changed) in dirty.iter().enumerate().take(self.num_routes) {
                    self.routes[route].modified = i64::from(changed);
                    self.routes[route].swap_tested = 0;
                }
                for &client in &self.order {
                    self.last_tested[client as usize] = 0;
                }
                loop_id = 1;
            }
            None => {
                self.moves = 0;
                for route in 0..self.num_routes {
                    self.routes[route].modified = 0;
                    self.routes[route].swap_tested = -1;
                }
                for &client in &self.order {
                    self.last_tested[client as usize] = -1;
                }
                loop_id = 0;
            }
        }
        if self.p.timed {
            self.search::<true>(&mut loop_id, stop)
        } else {
            self.search::<false>(&mut loop_id, stop)
        }
    }

    /// The moves it tries are functions of their own, some marked `#[inline(never)]` where
    /// LLVM would inline them: inlined, they make this loop too large for Cranelift, which
    /// compiles the component, to keep its values in registers, and the component spends
    /// more on spills than it saves on calls (natively it makes no measurable difference).
    fn search<const TIME: bool>(&mut self, loop_id: &mut u32, stop: &Stop) -> bool {
        let p = self.p;
        let mut done = false;
        while !done {
            if *loop_id > 1 {
                done = true;
            }
            self.improved = false;
            for index in 0..self.order.len() {
                if index % NODES_PER_POLL == 0 && stop.poll() {
                    return false;
                }
                let u = self.order[index];
                let last_test = self.last_tested[u as usize];
                self.last_tested[u as usize] = self.moves;
                for &v in p.neighbours(u) {
                    let (ru, rv) = (
                        self.nodes[u as usize].route_of as usize,
                        self.nodes[v as usize].route_of as usize,
                    );
                    if *loop_id != 0
                        && self.routes[ru].modified.max(self.routes[rv].modified) <= last_test
                    {
                        continue;
                    }
                    if self.relocate::<TIME>(u, v)
                        || self.relocate_pair::<TIME>(u, v, false)
                        || self.relocate_pair::<TIME>(u, v, true)
                        || (u <= v && self.swap::<TIME>(u, v))
                        || self.swap_two_one::<TIME>(u, v)
                        || (u <= v && self.swap_two_two::<TIME>(u, v))
                        || (ru == rv && self.two_opt::<TIME>(u, v))
                        || (ru != rv && !TIME && self.two_opt_star_reversed(u, v))
                        || (ru != rv && self.two_opt_star::<TIME>(u, v))
                    {
                        continue;
                    }
                    // The same moves with `v` replaced by its route's start: inserting
                    // right after the depot (or the fixed prefix).
                    let before = self.nodes[v as usize].prev;
                    if self.is_depot(before) {
                        let rv = self.nodes[before as usize].route_of as usize;
                        let ru = self.nodes[u as usize].route_of as usize;
                        let _ = self.relocate::<TIME>(u, before)
                            || self.relocate_pair::<TIME>(u, before, false)
                            || self.relocate_pair::<TIME>(u, before, true)
                            || (ru != rv && !TIME && self.two_opt_star_reversed(u, before))
                            || (ru != rv && self.two_opt_star::<TIME>(u, before));
                    }
                }
                // Moves into an empty route, not in the first loop so as not to open routes
                // too eagerly.
                if *loop_id > 0
                    && let Some(&empty) = self.empty_routes.first()
                {
                    let start = self.start_node(empty as usize);
                    let _ = self.relocate::<TIME>(u, start)
                        || self.relocate_pair::<TIME>(u, start, false)
                        || self.relocate_pair::<TIME>(u, start, true)
                        || self.two_opt_star::<TIME>(u, start);
                }
            }
            if self.swap_star_enabled && !TIME {
                for first in 0..self.num_routes {
                    let ru = self.route_order[first] as usize;
                    let last_test = self.routes[ru].swap_tested;
                    self.routes[ru].swap_tested = self.moves;
                    for second in 0..self.num_routes {
                        let rv = self.route_order[second] as usize;
                        if ru < rv
                            && self.routes[ru].size > 0
                            && self.routes[rv].size > 0
                            && (*loop_id == 0
                                || self.routes[ru].modified.max(self.routes[rv].modified)
                                    > last_test)
                            && self.routes[ru].sector.overlap(&self.routes[rv].sector)
                        {
                            if stop.poll() {
                                return false;
                            }
                            self.swap_star(ru, rv);
                        }
                    }
                }
            }
            if self.improved {
                done = false;
            }
            *loop_id += 1;
        }
        true
    }

    /// Relocates `u` to right after `v`.
    fn relocate<const TIME: bool>(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        let (pu, x, y) = (
            self.nodes[ui].prev,
            self.nodes[ui].next,
            self.nodes[vi].next,
        );
        if v == u || y == u {
            return false;
        }
        let (ru, rv) = (
            self.nodes[ui].route_of as usize,
            self.nodes[vi].route_of as usize,
        );
        let p = self.p;
        let delta_u = self.d(pu, x) - self.to_next(pu) - self.to_next(u);
        let delta_v = self.d(v, u) + self.d(u, y) - self.to_next(v);
        let delta;
        if ru == rv {
            let distance = delta_u + delta_v;
            if !TIME {
                delta = distance;
            } else {
                if distance >= self.routes[ru].penalty {
                    return false;
                }
                let segment = if self.nodes[ui].position < self.nodes[vi].position {
                    let middle = self.walk(self.forward[pu as usize], x, v);
                    let with_u = self.join(middle, self.own(u));
                    self.join(with_u, self.backward[y as usize])
                } else {
                    let with_u = self.join(self.forward[vi], self.own(u));
                    let middle = self.walk(with_u, y, pu);
                    self.join(middle, self.backward[x as usize])
                };
                let used = self.used(ru, self.routes[ru].size);
                delta = self.cost_of::<TIME>(
                    self.routes[ru].dist + distance,
                    self.routes[ru].load,
                    &segment,
                    used,
                ) - self.routes[ru].cost;
            }
        } else {
            if p.has_fixed && !p.allowed(u, rv) {
                return false;
            }
            let (size_u, size_v) = (self.routes[ru].size, self.routes[rv].size);
            let fixed =
                self.fixed_delta(ru, size_u, size_u - 1) + self.fixed_delta(rv, size_v, size_v + 1);
            if self.hopeless(ru, rv, delta_u + delta_v + fixed) {
                return false;
            }
            let (segment_u, segment_v) = if TIME {
                let segment_u = self.join(self.forward[pu as usize], self.backward[x as usize]);
                let with_u = self.join(self.forward[vi], self.own(u));
                (segment_u, self.join(with_u, self.backward[y as usize]))
            } else {
                (Segment::default(), Segment::default())
            };
            let demand = p.demand[ui];
            delta = self.cost_of::<TIME>(
                self.routes[ru].dist + delta_u,
                self.routes[ru].load - demand,
                &segment_u,
                self.used(ru, size_u - 1),
            ) + self.cost_of::<TIME>(
                self.routes[rv].dist + delta_v,
                self.routes[rv].load + demand,
                &segment_v,
                true,
            ) - self.routes[ru].cost
                - self.routes[rv].cost;
        }
        if delta >= 0 {
            return false;
        }
        self.insert_after(u, v);
        self.applied_to(ru, rv, delta);
        true
    }

    /// Relocates `u` and its successor `x` to right after `v`, as `u, x` or (`reversed`)
    /// `x, u`.
    fn relocate_pair<const TIME: bool>(&mut self, u: u32, v: u32, reversed: bool) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        let x = self.nodes[ui].next;
        if self.is_depot(x) {
            return false;
        }
        let (pu, xx, y) = (
            self.nodes[ui].prev,
            self.nodes[x as usize].next,
            self.nodes[vi].next,
        );
        if v == u || v == x || y == u {
            return false;
        }
        let (ru, rv) = (
            self.nodes[ui].route_of as usize,
            self.nodes[vi].route_of as usize,
        );
        let p = self.p;
        let (first, second) = if reversed { (x, u) } else { (u, x) };
        let delta_u = self.d(pu, xx) - self.to_next(pu) - self.to_next(u) - self.to_next(x);
        let inner = if reversed {
            self.d(x, u)
        } else {
            self.to_next(u)
        };
        let delta_v = self.d(v, first) + inner + self.d(second, y) - self.to_next(v);
        let pair = || {
            let segment = self.own(first);
            self.join(segment, self.own(second))
        };
        let delta;
        if ru == rv {
            let distance = delta_u + delta_v;
            if !TIME {
                delta = distance;
            } else {
                if distance >= self.routes[ru].penalty {
                    return false;
                }
                let segment = if self.nodes[ui].position < self.nodes[vi].position {
                    let middle = self.walk(self.forward[pu as usize], xx, v);
                    let with_pair = self.join(middle, pair());
                    self.join(with_pair, self.backward[y as usize])
                } else {
                    let with_pair = self.join(self.forward[vi], pair());
                    let middle = self.walk(with_pair, y, pu);
                    self.join(middle, self.backward[xx as usize])
                };
                let used = self.used(ru, self.routes[ru].size);
                delta = self.cost_of::<TIME>(
                    self.routes[ru].dist + distance,
                    self.routes[ru].load,
                    &segment,
                    used,
                ) - self.routes[ru].cost;
            }
        } else {
            if p.has_fixed && !(p.allowed(u, rv) && p.allowed(x, rv)) {
                return false;
            }
            let (size_u, size_v) = (self.routes[ru].size, self.routes[rv].size);
            let fixed =
                self.fixed_delta(ru, size_u, size_u - 2) + self.fixed_delta(rv, size_v, size_v + 2);
            if self.hopeless(ru, rv, delta_u + delta_v + fixed) {
                return false;
            }
            let (segment_u, segment_v) = if TIME {
                let segment_u = self.join(self.forward[pu as usize], self.backward[xx as usize]);
                let with_pair = self.join(self.forward[vi], pair());
                (segment_u, self.join(with_pair, self.backward[y as usize]))
            } else {
                (Segment::default(), Segment::default())
            };
            let demand = p.demand[ui] + p.demand[x as usize];
            delta = self.cost_of::<TIME>(
                self.routes[ru].dist + delta_u,
                self.routes[ru].load - demand,
                &segment_u,
                self.used(ru, size_u - 2),
            ) + self.cost_of::<TIME>(
                self.routes[rv].dist + delta_v,
                self.routes[rv].load + demand,
                &segment_v,
                true,
            ) - self.routes[ru].cost
                - self.routes[rv].cost;
        }
        if delta >= 0 {
            return false;
        }
        self.insert_after(first, v);
        self.insert_after(second, first);
        self.applied_to(ru, rv, delta);
        true
    }

    /// Swaps clients `u` and `v`.
    #[inline(never)]
    fn swap<const TIME: bool>(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        if u == v || self.is_depot(v) {
            return false;
        }
        let (pu, x, pv, y) = (
            self.nodes[ui].prev,
            self.nodes[ui].next,
            self.nodes[vi].prev,
            self.nodes[vi].next,
        );
        if u == pv || u == y {
            return false;
        }
        let (ru, rv) = (
            self.nodes[ui].route_of as usize,
            self.nodes[vi].route_of as usize,
        );
        let p = self.p;
        let delta_u = self.d(pu, v) + self.d(v, x) - self.to_next(pu) - self.to_next(u);
        let delta_v = self.d(pv, u) + self.d(u, y) - self.to_next(pv) - self.to_next(v);
        let delta;
        if ru == rv {
            let distance = delta_u + delta_v;
            if !TIME {
                delta = distance;
            } else {
                if distance >= self.routes[ru].penalty {
                    return false;
                }
                let segment = if self.nodes[ui].position < self.nodes[vi].position {
                    let with_v = self.join(self.forward[pu as usize], self.own(v));
                    let middle = self.walk(with_v, x, pv);
                    let with_u = self.join(middle, self.own(u));
                    self.join(with_u, self.backward[y as usize])
                } else {
                    let with_u = self.join(self.forward[pv as usize], self.own(u));
                    let middle = self.walk(with_u, y, pu);
                    let with_v = self.join(middle, self.own(v));
                    self.join(with_v, self.backward[x as usize])
                };
                let used = self.used(ru, self.routes[ru].size);
                delta = self.cost_of::<TIME>(
                    self.routes[ru].dist + distance,
                    self.routes[ru].load,
                    &segment,
                    used,
                ) - self.routes[ru].cost;
            }
        } else {
            if p.has_fixed && !(p.allowed(u, rv) && p.allowed(v, ru)) {
                return false;
            }
            if self.hopeless(ru, rv, delta_u + delta_v) {
                return false;
            }
            let (segment_u, segment_v) = if TIME {
                let with_v = self.join(self.forward[pu as usize], self.own(v));
                let with_u = self.join(self.forward[pv as usize], self.own(u));
                (
                    self.join(with_v, self.backward[x as usize]),
                    self.join(with_u, self.backward[y as usize]),
                )
            } else {
                (Segment::default(), Segment::default())
            };
            let shift = p.demand[vi] - p.demand[ui];
            delta = self.cost_of::<TIME>(
                self.routes[ru].dist + delta_u,
                self.routes[ru].load + shift,
                &segment_u,
                true,
            ) + self.cost_of::<TIME>(
                self.routes[rv].dist + delta_v,
                self.routes[rv].load - shift,
                &segment_v,
                true,
            ) - self.routes[ru].cost
                - self.routes[rv].cost;
        }
        if delta >= 0 {
            return false;
        }
        self.swap_nodes(u, v);
        self.applied_to(ru, rv, delta);
        true
    }

    /// Swaps `u` and its successor `x` with `v`.
    fn swap_two_one<const TIME: bool>(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        let x = self.nodes[ui].next;
        if self.is_depot(x) || self.is_depot(v) || v == u || v == x {
            return false;
        }
        let (pu, xx, pv, y) = (
            self.nodes[ui].prev,
            self.nodes[x as usize].next,
            self.nodes[vi].prev,
            self.nodes[vi].next,
        );
        if u == pv || x == pv || u == y {
            return false;
        }
        let (ru, rv) = (
            self.nodes[ui].route_of as usize,
            self.nodes[vi].route_of as usize,
        );
        let p = self.p;
        let delta_u = self.d(pu, v) + self.d(v, xx) - self.to_next(pu) - self.to_next(x);
        let delta_v = self.d(pv, u) + self.d(x, y) - self.to_next(pv) - self.to_next(v);
        let pair = || {
            let segment = self.own(u);
            self.join(segment, self.own(x))
        };
        let delta;
        if ru == rv {
            let distance = delta_u + delta_v;
            if !TIME {
                delta = distance;
            } else {
                if distance >= self.routes[ru].penalty {
                    return false;
                }
                let segment = if self.nodes[ui].position < self.nodes[vi].position {
                    let with_v = self.join(self.forward[pu as usize], self.own(v));
                    let middle = self.walk(with_v, xx, pv);
                    let with_pair = self.join(middle, pair());
                    self.join(with_pair, self.backward[y as usize])
                } else {
                    let with_pair = self.join(self.forward[pv as usize], pair());
                    let middle = self.walk(with_pair, y, pu);
                    let with_v = self.join(middle, self.own(v));
                    self.join(with_v, self.backward[xx as usize])
                };
                let used = self.used(ru, self.routes[ru].size);
                delta = self.cost_of::<TIME>(
                    self.routes[ru].dist + distance,
                    self.routes[ru].load,
                    &segment,
                    used,
                ) - self.routes[ru].cost;
            }
        } else {
            if p.has_fixed && !(p.allowed(u, rv) && p.allowed(x, rv) && p.allowed(v, ru)) {
                return false;
            }
            if self.hopeless(ru, rv, delta_u + delta_v) {
                return false;
            }
            let (segment_u, segment_v) = if TIME {
                let with_v = self.join(self.forward[pu as usize], self.own(v));
                let with_pair = self.join(self.forward[pv as usize], pair());
                (
                    self.join(with_v, self.backward[xx as usize]),
                    self.join(with_pair, self.backward[y as usize]),
                )
            } else {
                (Segment::default(), Segment::default())
            };
            let shift = p.demand[vi] - p.demand[ui] - p.demand[x as usize];
            delta = self.cost_of::<TIME>(
                self.routes[ru].dist + delta_u,
                self.routes[ru].load + shift,
                &segment_u,
                true,
            ) + self.cost_of::<TIME>(
                self.routes[rv].dist + delta_v,
                self.routes[rv].load - shift,
                &segment_v,
                true,
            ) - self.routes[ru].cost
                - self.routes[rv].cost;
        }
        if delta >= 0 {
            return false;
        }
        self.swap_nodes(u, v);
        self.insert_after(x, u);
        self.applied_to(ru, rv, delta);
        true
    }

    /// Swaps `u` and its successor `x` with `v` and its successor `y`.
    #[inline(never)]
    fn swap_two_two<const TIME: bool>(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        if self.is_depot(v) || u == v {
            return false;
        }
        let (x, y) = (self.nodes[ui].next, self.nodes[vi].next);
        if self.is_depot(x) || self.is_depot(y) {
            return false;
        }
        let (pu, xx, pv, yy) = (
            self.nodes[ui].prev,
            self.nodes[x as usize].next,
            self.nodes[vi].prev,
            self.nodes[y as usize].next,
        );
        if y == pu || u == y || x == v || v == xx {
            return false;
        }
        let (ru, rv) = (
            self.nodes[ui].route_of as usize,
            self.nodes[vi].route_of as usize,
        );
        let p = self.p;
        let delta_u = self.d(pu, v) + self.d(y, xx) - self.to_next(pu) - self.to_next(x);
        let delta_v = self.d(pv, u) + self.d(x, yy) - self.to_next(pv) - self.to_next(y);
        let pair_u = || {
            let segment = self.own(u);
            self.join(segment, self.own(x))
        };
        let pair_v = || {
            let segment = self.own(v);
            self.join(segment, self.own(y))
        };
        let delta;
        if ru == rv {
            let distance = delta_u + delta_v;
            if !TIME {
                delta = distance;
            } else {
                if distance >= self.routes[ru].penalty {
                    return false;
                }
                let segment = if self.nodes[ui].position < self.nodes[vi].position {
                    let with_v = self.join(self.forward[pu as usize], pair_v());
                    let middle = self.walk(with_v, xx, pv);
                    let with_u = self.join(middle, pair_u());
                    self.join(with_u, self.backward[yy as usize])
                } else {
                    let with_u = self.join(self.forward[pv as usize], pair_u());
                    let middle = self.walk(with_u, yy, pu);
                    let with_v = self.join(middle, pair_v());
                    self.join(with_v, self.backward[xx as usize])
                };
                let used = self.used(ru, self.routes[ru].size);
                delta = self.cost_of::<TIME>(
                    self.routes[ru].dist + distance,
                    self.routes[ru].load,
                    &segment,
                    used,
                ) - self.routes[ru].cost;
            }
        } else {
            if p.has_fixed
                && !(p.allowed(u, rv) && p.allowed(x, rv) && p.allowed(v, ru) && p.allowed(y, ru))
            {
                return false;
            }
            if self.hopeless(ru, rv, delta_u + delta_v) {
                return false;
            }
            let (segment_u, segment_v) = if TIME {
                let with_v = self.join(self.forward[pu as usize], pair_v());
                let with_u = self.join(self.forward[pv as usize], pair_u());
                (
                    self.join(with_v, self.backward[xx as usize]),
                    self.join(with_u, self.backward[yy as usize]),
                )
            } else {
                (Segment::default(), Segment::default())
            };
            let shift = p.demand[vi] + p.demand[y as usize] - p.demand[ui] - p.demand[x as usize];
            delta = self.cost_of::<TIME>(
                self.routes[ru].dist + delta_u,
                self.routes[ru].load + shift,
                &segment_u,
                true,
            ) + self.cost_of::<TIME>(
                self.routes[rv].dist + delta_v,
                self.routes[rv].load - shift,
                &segment_v,
                true,
            ) - self.routes[ru].cost
                - self.routes[rv].cost;
        }
        if delta >= 0 {
            return false;
        }
        self.swap_nodes(u, v);
        self.swap_nodes(x, y);
        self.applied_to(ru, rv, delta);
        true
    }
}
