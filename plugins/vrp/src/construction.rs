//! A first plan fast: Clarke and Wright's savings (1964), parallel version, over the
//! granular neighbour pairs only, so that it takes O(n Γ log(n Γ)) even for 10,000 clients.
//! Two routes merge end to start when the saving `d(i, 0) + d(0, j) - d(i, j)` (plus a
//! vehicle's fixed cost) is positive, the load fits and, with time windows, the joined route
//! is on time; untimed symmetric instances may reverse a route to join it.

use crate::problem::{FREE, Problem};
use crate::segment::Segment;

/// No node.
const NONE: u32 = u32::MAX;

/// Routes (movable clients only, any order) built by savings.
pub fn savings(p: &Problem) -> Vec<Vec<u32>> {
    let n = p.num_clients;
    let reversible = p.symmetric && !p.timed;
    let mut next = vec![NONE; n + 1];
    let mut prev = vec![NONE; n + 1];
    // Route of each client by its first client's number; each route's ends, load, segment
    // (clients only) and vehicle.
    let mut route_of: Vec<u32> = (0..=n as u32).collect();
    let mut first: Vec<u32> = (0..=n as u32).collect();
    let mut last: Vec<u32> = (0..=n as u32).collect();
    let mut load: Vec<i64> = p.demand.clone();
    let mut size: Vec<u32> = vec![1; n + 1];
    let mut segment: Vec<Segment> = (0..=n as u32).map(|c| p.visit(c)).collect();
    let mut vehicle: Vec<u32> = p.vehicle_of.clone();

    let mut candidates: Vec<(i64, u32, u32)> = Vec::new();
    for &i in &p.movable {
        for &j in p.neighbours(i) {
            let saving =
                p.travel.dist(i, 0) + p.travel.dist(0, j) - p.travel.dist(i, j) + p.fixed_cost;
            if saving > 0 {
                candidates.push((saving, i, j));
            }
        }
    }
    candidates.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));

    let on_time = |segment: &Segment| -> bool {
        if !p.timed {
            return true;
        }
        let whole = p
            .depot_end
            .then(p.travel.time(0, segment.first), *segment)
            .then(p.travel.time(segment.last, 0), p.depot_end);
        whole.time_warp == 0 && whole.duration <= p.max_duration
    };

    for (_, i, j) in candidates {
        let (mut ri, mut rj) = (route_of[i as usize], route_of[j as usize]);
        if ri == rj {
            continue;
        }
        if load[ri as usize] + load[rj as usize] > p.capacity {
            continue;
        }
        let (vi, vj) = (vehicle[ri as usize], vehicle[rj as usize]);
        if vi != FREE && vj != FREE && vi != vj {
            continue;
        }
        // i must end its route and j start its own, possibly after reversing one.
        if last[ri as usize] != i {
            if reversible && first[ri as usize] == i {
                ri = reverse(
                    ri,
                    &mut next,
                    &mut prev,
                    &mut first,
                    &mut last,
                    &mut route_of,
                );
            } else {
                continue;
            }
        }
        if first[rj as usize] != j {
            if reversible && last[rj as usize] == j {
                rj = reverse(
                    rj,
                    &mut next,
                    &mut prev,
                    &mut first,
                    &mut last,
                    &mut route_of,
                );
            } else {
                continue;
            }
        }
        let joined = segment[ri as usize].then(p.travel.time(i, j), segment[rj as usize]);
        if !on_time(&joined) {
            continue;
        }
        next[i as usize] = j;
        prev[j as usize] = i;
        // The merged route keeps the id of the longer part; the shorter is relabelled.
        let (keep, relabel) = if size[ri as usize] >= size[rj as usize] {
            (ri, rj)
        } else {
            (rj, ri)
        };
        let mut node = first[relabel as usize];
        while node != NONE {
            route_of[node as usize] = keep;
            node = next[node as usize];
            if node != NONE && route_of[node as usize] == keep {
                break;
            }
        }
        let (k, a, b) = (keep as usize, ri as usize, rj as usize);
        let merged_first = first[a];
        let merged_last = last[b];
        let merged_load = load[a] + load[b];
        let merged_size = size[a] + size[b];
        let merged_vehicle = if vi != FREE { vi } else { vj };
        first[k] = merged_first;
        last[k] = merged_last;
        load[k] = merged_load;
        size[k] = merged_size;
        segment[k] = joined;
        vehicle[k] = merged_vehicle;
    }

    let mut routes = Vec::new();
    for &client in &p.movable {
        let c = client as usize;
        if route_of[c] == client && first[c] != NONE {
            let route = route_of[c] as usize;
            let mut clients = Vec::with_capacity(size[route] as usize);
            let mut node = first[route];
            while node != NONE {
                clients.push(node);
                node = next[node as usize];
            }
            routes.push(clients);
        }
    }
    routes
}

/// Reverses route `route` in place; returns its id (unchanged).
fn reverse(
    route: u32,
    next: &mut [u32],
    prev: &mut [u32],
    first: &mut [u32],
    last: &mut [u32],
    route_of: &mut [u32],
) -> u32 {
    let r = route as usize;
    let mut node = first[r];
    while node != NONE {
        let k = node as usize;
        std::mem::swap(&mut next[k], &mut prev[k]);
        route_of[k] = route;
        // The old successor is now the predecessor.
        node = prev[k];
    }
    std::mem::swap(&mut first[r], &mut last[r]);
    route
}
