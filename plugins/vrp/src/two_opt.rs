//! The 2-opt moves of the local search (`local_search.rs`): 2-opt within a route, which
//! reverses the path between two nodes, and 2-opt* between two routes, which exchanges their
//! tails (straight, or each tail reversed onto the other's head). Costs as for every move:
//! the change in penalised cost from the nodes' cumulative load and distance and their time
//! segments.

use crate::segment::Segment;

use crate::linked_routes::LocalSearch;

impl LocalSearch<'_> {
    /// 2-opt within a route: `u` before `v`, reverses the path from `u`'s successor to `v`.
    #[inline(never)]
    pub(crate) fn two_opt<const TIME: bool>(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        if self.nodes[ui].position >= self.nodes[vi].position {
            return false;
        }
        let x = self.nodes[ui].next;
        if x == v {
            return false;
        }
        let y = self.nodes[vi].next;
        let route = self.nodes[ui].route_of as usize;
        let (xi, yi) = (x as usize, y as usize);
        let distance = self.d(u, v) + self.d(x, y) - self.to_next(u) - self.to_next(v)
            + (self.nodes[vi].cum_back - self.nodes[xi].cum_back)
            - (self.nodes[vi].cum_dist - self.nodes[xi].cum_dist);
        let delta = if !TIME {
            distance
        } else {
            if distance >= self.routes[route].penalty {
                return false;
            }
            let reversed = self.walk_back(self.forward[ui], v, x);
            let segment = self.join(reversed, self.backward[yi]);
            let used = self.used(route, self.routes[route].size);
            self.cost_of::<TIME>(
                self.routes[route].dist + distance,
                self.routes[route].load,
                &segment,
                used,
            ) - self.routes[route].cost
        };
        if delta >= 0 {
            return false;
        }
        // Reverse x..v in place: collect, then relink the whole route.
        self.rebuild(route, route, delta, |ls, clients, _| {
            let start = ls.start_node(route);
            ls.collect(ls.nodes[start as usize].next, u, false, clients);
            ls.collect(v, x, true, clients);
            if !ls.is_depot(y) {
                let last = ls.nodes[ls.end_node(route) as usize].prev;
                ls.collect(y, last, false, clients);
            }
        });
        true
    }

    /// 2-opt* between routes: `u`'s route keeps its start to `u` and takes `v`'s tail after
    /// `v`; `v`'s route keeps its start to `v` and takes `u`'s tail.
    pub(crate) fn two_opt_star<const TIME: bool>(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        let (ru, rv) = (
            self.nodes[ui].route_of as usize,
            self.nodes[vi].route_of as usize,
        );
        if ru == rv {
            return false;
        }
        let (x, y) = (self.nodes[ui].next, self.nodes[vi].next);
        let (xi, yi) = (x as usize, y as usize);
        let p = self.p;
        if p.has_fixed && (self.nodes[xi].fixed_after > 0 || self.nodes[yi].fixed_after > 0) {
            return false;
        }
        let new_dist_u =
            self.nodes[ui].cum_dist + self.d(u, y) + self.routes[rv].dist - self.nodes[yi].cum_dist;
        let new_dist_v =
            self.nodes[vi].cum_dist + self.d(v, x) + self.routes[ru].dist - self.nodes[xi].cum_dist;
        let (size_u, size_v) = (self.routes[ru].size, self.routes[rv].size);
        let new_size_u = self.nodes[ui].position + size_v - self.nodes[vi].position;
        let new_size_v = self.nodes[vi].position + size_u - self.nodes[ui].position;
        let fixed =
            self.fixed_delta(ru, size_u, new_size_u) + self.fixed_delta(rv, size_v, new_size_v);
        let distance = new_dist_u + new_dist_v - self.routes[ru].dist - self.routes[rv].dist;
        if self.hopeless(ru, rv, distance + fixed) {
            return false;
        }
        let (segment_u, segment_v) = if TIME {
            (
                self.join(self.forward[ui], self.backward[yi]),
                self.join(self.forward[vi], self.backward[xi]),
            )
        } else {
            (Segment::default(), Segment::default())
        };
        let load_u = self.nodes[ui].cum_load + self.routes[rv].load - self.nodes[vi].cum_load;
        let load_v = self.nodes[vi].cum_load + self.routes[ru].load - self.nodes[ui].cum_load;
        let delta = self.cost_of::<TIME>(new_dist_u, load_u, &segment_u, self.used(ru, new_size_u))
            + self.cost_of::<TIME>(new_dist_v, load_v, &segment_v, self.used(rv, new_size_v))
            - self.routes[ru].cost
            - self.routes[rv].cost;
        if delta >= 0 {
            return false;
        }
        self.rebuild(ru, rv, delta, |ls, clients_u, clients_v| {
            let (start_u, start_v) = (ls.start_node(ru), ls.start_node(rv));
            let (last_u, last_v) = (
                ls.nodes[ls.end_node(ru) as usize].prev,
                ls.nodes[ls.end_node(rv) as usize].prev,
            );
            if u != start_u {
                ls.collect(ls.nodes[start_u as usize].next, u, false, clients_u);
            }
            ls.collect(y, last_v, false, clients_u);
            if v != start_v {
                ls.collect(ls.nodes[start_v as usize].next, v, false, clients_v);
            }
            ls.collect(x, last_u, false, clients_v);
        });
        true
    }

    /// 2-opt* with reversal (untimed only): `u`'s route becomes its start to `u`, then `v`
    /// back to `v`'s route start; `v`'s route becomes `u`'s route's end back to `u`'s
    /// successor, then the rest of `v`'s route.
    pub(crate) fn two_opt_star_reversed(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        let (ru, rv) = (
            self.nodes[ui].route_of as usize,
            self.nodes[vi].route_of as usize,
        );
        let p = self.p;
        if ru == rv || p.has_prefix(ru) || p.has_prefix(rv) {
            return false;
        }
        let (x, y) = (self.nodes[ui].next, self.nodes[vi].next);
        let (xi, yi) = (x as usize, y as usize);
        if p.has_fixed {
            let (start_u, start_v) = (self.start_node(ru) as usize, self.start_node(rv) as usize);
            let fixed_u = self.nodes[self.nodes[start_u].next as usize].fixed_after;
            let fixed_v = self.nodes[self.nodes[start_v].next as usize].fixed_after;
            if fixed_u > 0 || fixed_v > 0 {
                return false;
            }
        }
        let end_u = self.end_node(ru) as usize;
        let new_dist_u = self.nodes[ui].cum_dist + self.d(u, v) + self.nodes[vi].cum_back;
        let new_dist_v = (self.nodes[end_u].cum_back - self.nodes[xi].cum_back)
            + self.d(x, y)
            + (self.routes[rv].dist - self.nodes[yi].cum_dist);
        let (size_u, size_v) = (self.routes[ru].size, self.routes[rv].size);
        let new_size_u = self.nodes[ui].position + self.nodes[vi].position;
        let new_size_v = (size_u - self.nodes[ui].position) + (size_v - self.nodes[vi].position);
        let fixed =
            self.fixed_delta(ru, size_u, new_size_u) + self.fixed_delta(rv, size_v, new_size_v);
        let distance = new_dist_u + new_dist_v - self.routes[ru].dist - self.routes[rv].dist;
        if self.hopeless(ru, rv, distance + fixed) {
            return false;
        }
        let load_u = self.nodes[ui].cum_load + self.nodes[vi].cum_load;
        let load_v = self.routes[ru].load - self.nodes[ui].cum_load + self.routes[rv].load
            - self.nodes[vi].cum_load;
        let none = Segment::default();
        let delta = self.cost_of::<false>(new_dist_u, load_u, &none, self.used(ru, new_size_u))
            + self.cost_of::<false>(new_dist_v, load_v, &none, self.used(rv, new_size_v))
            - self.routes[ru].cost
            - self.routes[rv].cost;
        if delta >= 0 {
            return false;
        }
        self.rebuild(ru, rv, delta, |ls, clients_u, clients_v| {
            let (start_u, start_v) = (ls.start_node(ru), ls.start_node(rv));
            let (last_u, last_v) = (
                ls.nodes[end_u].prev,
                ls.nodes[ls.end_node(rv) as usize].prev,
            );
            ls.collect(ls.nodes[start_u as usize].next, u, false, clients_u);
            if v != start_v {
                ls.collect(v, ls.nodes[start_v as usize].next, true, clients_u);
            }
            if !ls.is_depot(x) {
                ls.collect(last_u, x, true, clients_v);
            }
            if !ls.is_depot(y) {
                ls.collect(y, last_v, false, clients_v);
            }
        });
        true
    }

    /// Applies a 2-opt move: `fill` lists the new clients of route `ru` and of route `rv`
    /// (into the search's scratch lists, emptied first; `rv`'s list unused when the two are
    /// one route), the routes are relinked from them, and the move's `delta` is booked.
    fn rebuild(
        &mut self,
        ru: usize,
        rv: usize,
        delta: i64,
        fill: impl FnOnce(&Self, &mut Vec<u32>, &mut Vec<u32>),
    ) {
        let mut clients_u = std::mem::take(&mut self.scratch_a);
        let mut clients_v = std::mem::take(&mut self.scratch_b);
        clients_u.clear();
        clients_v.clear();
        fill(self, &mut clients_u, &mut clients_v);
        self.relink(ru, &clients_u);
        if rv != ru {
            self.relink(rv, &clients_v);
        }
        self.scratch_a = clients_u;
        self.scratch_b = clients_v;
        self.applied_to(ru, rv, delta);
    }
}
