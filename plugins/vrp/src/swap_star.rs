//! SWAP* (Vidal 2022, section 4): exchanges a client `u` of one route with a client `v` of
//! another, each reinserted at its best place in the other route rather than in the other's
//! place. For each client the three cheapest insertions into the other route are found
//! first; the best reinsertion of `u` into `v`'s route without `v` is then one of them or
//! `v`'s own place. Relocations of one client into the other route come free with these
//! numbers and are evaluated too. Untimed instances with coordinates only, on route pairs
//! whose polar sectors overlap (`local_search.rs`), on the state of `linked_routes.rs`.

use crate::linked_routes::{LocalSearch, ThreeBest};

/// The best SWAP* (or relocation) found for a route pair.
#[derive(Debug, Clone, Copy)]
struct Best {
    cost: i64,
    /// The client moving from route U, and after which node of route V it goes.
    u: Option<(u32, u32)>,
    /// The client moving from route V, and after which node of route U it goes.
    v: Option<(u32, u32)>,
}

impl LocalSearch<'_> {
    /// For each client of `from`: what removing it saves (negative) and its three cheapest
    /// insertions into `into`.
    fn preprocess(&mut self, from: usize, into: usize) {
        let (start_into, end_into) = (self.start_node(into), self.end_node(into));
        let mut u = self.nodes[self.start_node(from) as usize].next;
        while !self.is_depot(u) {
            let ui = u as usize;
            let (before, after) = (self.nodes[ui].prev, self.nodes[ui].next);
            self.removal_gain[ui] = self.d(before, after)
                - (self.nodes[after as usize].cum_dist - self.nodes[before as usize].cum_dist);
            let cached = (!self.insert_cache.is_empty()).then(|| into * (self.n + 1) + ui);
            if let Some(entry) = cached
                && self.insert_cache[entry].computed >= self.routes[into].clock
            {
                self.best_insert[ui] = self.insert_cache[entry];
                u = after;
                continue;
            }
            let mut best = ThreeBest {
                computed: self.clock,
                ..ThreeBest::default()
            };
            let mut w = start_into;
            while w != end_into {
                let following = self.nodes[w as usize].next;
                let edge =
                    self.nodes[following as usize].cum_dist - self.nodes[w as usize].cum_dist;
                best.add(self.d(w, u) + self.d(u, following) - edge, w);
                w = following;
            }
            self.best_insert[ui] = best;
            if let Some(entry) = cached {
                self.insert_cache[entry] = best;
            }
            u = after;
        }
    }

    /// The cheapest insertion of `u` into `v`'s route once `v` is taken out: one of `u`'s
    /// three best places not next to `v`, or `v`'s place. Returns the added distance and the
    /// node to insert after.
    fn cheapest_without(&self, u: u32, v: u32) -> (i64, u32) {
        let best = &self.best_insert[u as usize];
        let (before_v, after_v) = (self.nodes[v as usize].prev, self.nodes[v as usize].next);
        let mut found = None;
        for k in 0..3 {
            let after = best.after[k];
            if after == u32::MAX {
                break;
            }
            if after != v && self.nodes[after as usize].next != v {
                found = Some((best.cost[k], after));
                break;
            }
        }
        let in_place = self.d(before_v, u) + self.d(u, after_v) - self.d(before_v, after_v);
        match found {
            Some((cost, after)) if cost <= in_place => (cost, after),
            _ => (in_place, before_v),
        }
    }

    /// The load penalty of a route carrying `load`.
    fn load_penalty(&self, load: i64) -> i64 {
        self.penalties.cost((load - self.p.capacity).max(0), 0)
    }

    /// Tries SWAP* and relocations between routes `ru` and `rv`; applies the best if it
    /// improves.
    pub(crate) fn swap_star(&mut self, ru: usize, rv: usize) -> bool {
        self.preprocess(ru, rv);
        self.preprocess(rv, ru);
        let p = self.p;
        let (load_u, load_v) = (self.routes[ru].load, self.routes[rv].load);
        let (penalty_u, penalty_v) = (self.routes[ru].penalty, self.routes[rv].penalty);
        let mut best = Best {
            cost: 0,
            u: None,
            v: None,
        };
        let mut u = self.nodes[self.start_node(ru) as usize].next;
        while !self.is_depot(u) {
            let ui = u as usize;
            let allowed_u = !p.has_fixed || p.allowed(u, rv);
            let mut v = self.nodes[self.start_node(rv) as usize].next;
            while !self.is_depot(v) {
                let vi = v as usize;
                let shift = p.demand[vi] - p.demand[ui];
                let delta_penalty_u = self.load_penalty(load_u + shift) - penalty_u;
                let delta_penalty_v = self.load_penalty(load_v - shift) - penalty_v;
                if allowed_u
                    && (!p.has_fixed || p.allowed(v, ru))
                    && delta_penalty_u
                        + self.removal_gain[ui]
                        + delta_penalty_v
                        + self.removal_gain[vi]
                        <= 0
                {
                    let (extra_v, after_u) = self.cheapest_without(u, v);
                    let (extra_u, after_v) = self.cheapest_without(v, u);
                    let cost = delta_penalty_u
                        + self.removal_gain[ui]
                        + extra_u
                        + delta_penalty_v
                        + self.removal_gain[vi]
                        + extra_v;
                    if cost < best.cost {
                        best = Best {
                            cost,
                            u: Some((u, after_u)),
                            v: Some((v, after_v)),
                        };
                    }
                }
                v = self.nodes[vi].next;
            }
            u = self.nodes[ui].next;
        }
        // Relocations of one client into the other route.
        for (from, into, load_from, load_into, penalty_from, penalty_into) in [
            (ru, rv, load_u, load_v, penalty_u, penalty_v),
            (rv, ru, load_v, load_u, penalty_v, penalty_u),
        ] {
            let size_from = self.routes[from].size;
            let emptied = size_from == 1 && !p.has_prefix(from);
            let mut w = self.nodes[self.start_node(from) as usize].next;
            while !self.is_depot(w) {
                let wi = w as usize;
                if !p.has_fixed || p.allowed(w, into) {
                    let insertion = &self.best_insert[wi];
                    let fixed = if emptied { -p.fixed_cost } else { 0 };
                    let cost = self.removal_gain[wi]
                        + insertion.cost[0]
                        + self.load_penalty(load_from - p.demand[wi])
                        - penalty_from
                        + self.load_penalty(load_into + p.demand[wi])
                        - penalty_into
                        + fixed;
                    if cost < best.cost {
                        let moved = Some((w, insertion.after[0]));
                        best = if from == ru {
                            Best {
                                cost,
                                u: moved,
                                v: None,
                            }
                        } else {
                            Best {
                                cost,
                                u: None,
                                v: moved,
                            }
                        };
                    }
                }
                w = self.nodes[wi].next;
            }
        }
        if best.cost >= 0 {
            return false;
        }
        if let Some((u, after)) = best.u {
            self.insert_after(u, after);
        }
        if let Some((v, after)) = best.v {
            self.insert_after(v, after);
        }
        self.applied_to(ru, rv, best.cost);
        true
    }
}
