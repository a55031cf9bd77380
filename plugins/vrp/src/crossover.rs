//! Recombination of two parents into one child.
//!
//! - [`ordered`]: the ordered crossover (OX) of HGS-CVRP on giant tours: a random stretch of
//!   the first parent's tour, the rest in the second parent's order; the tour is then split
//!   into routes (`split.rs`). Used on untimed instances.
//! - [`selective_route_exchange`]: SREX (Nagata and Kobayashi 2010, as PyVRP implements it):
//!   a run of consecutive routes of the first parent (routes ordered by the polar angle of
//!   their centroid) replaces the run of the second parent's routes that overlaps it most;
//!   of the two ways to remove the clients now served twice, the cheaper after greedy
//!   reinsertion of the clients lost is kept. Routes keep their time windows' feasibility far
//!   better than cut tours, so it is used on timed instances.

use crate::penalty::Penalties;
use crate::plan::Plan;
use crate::problem::Problem;
use crate::rng::Rng;
use crate::solution::Individual;
use crate::split::split;

/// OX: the child's giant tour, split into routes and placed into `slots` slots.
pub fn ordered(
    p: &Problem,
    first: &Individual,
    second: &Individual,
    rng: &mut Rng,
    penalties: &Penalties,
    slots: usize,
) -> Vec<Vec<u32>> {
    let tour_a = first.giant_tour();
    let tour_b = second.giant_tour();
    let m = tour_a.len();
    if m < 2 {
        return Plan::normalise(p, vec![tour_a], slots, *penalties);
    }
    let start = rng.index(m);
    let mut end = rng.index(m);
    while end == start {
        end = rng.index(m);
    }
    let mut taken = vec![false; p.num_clients + 1];
    let mut child = vec![0u32; m];
    let mut k = start;
    loop {
        child[k] = tour_a[k];
        taken[tour_a[k] as usize] = true;
        if k == end {
            break;
        }
        k = (k + 1) % m;
    }
    let mut write = (end + 1) % m;
    for offset in 1..=m {
        let client = tour_b[(end + offset) % m];
        if !taken[client as usize] {
            child[write] = client;
            write = (write + 1) % m;
        }
    }
    let routes = split(p, &child, penalties, slots);
    Plan::normalise(p, routes, slots, *penalties)
}

/// A route of a parent with the polar angle of its centroid.
struct Placed<'a> {
    slot: usize,
    clients: &'a [u32],
}

/// The non-empty routes of `parent`, ordered by the polar angle of their centroid around the
/// depot (by slot without coordinates).
fn ordered_routes<'a>(p: &Problem, parent: &'a Individual) -> Vec<Placed<'a>> {
    let mut routes: Vec<(i32, Placed<'a>)> = parent
        .routes
        .iter()
        .enumerate()
        .filter(|(_, clients)| !clients.is_empty())
        .map(|(slot, clients)| {
            let angle = match &p.coordinates {
                Some((x, y)) => {
                    let count = clients.len() as f64;
                    let cx = clients.iter().map(|&c| x[c as usize]).sum::<f64>() / count;
                    let cy = clients.iter().map(|&c| y[c as usize]).sum::<f64>() / count;
                    crate::problem::pseudo_angle(cx - x[0], cy - y[0])
                }
                None => slot as i32,
            };
            (angle, Placed { slot, clients })
        })
        .collect();
    routes.sort_by_key(|(angle, placed)| (*angle, placed.slot));
    routes.into_iter().map(|(_, placed)| placed).collect()
}

/// SREX: the child's routes by slot, and which slots differ from the second parent's.
pub fn selective_route_exchange(
    p: &Problem,
    first: &Individual,
    second: &Individual,
    rng: &mut Rng,
    penalties: &Penalties,
    slots: usize,
    max_moved: usize,
) -> (Vec<Vec<u32>>, Vec<bool>) {
    let routes_a = ordered_routes(p, first);
    let routes_b = ordered_routes(p, second);
    let (count_a, count_b) = (routes_a.len(), routes_b.len());
    if count_a == 0 || count_b == 0 {
        let routes = Plan::normalise(p, second.routes.clone(), slots, *penalties);
        let dirty = vec![true; routes.len()];
        return (routes, dirty);
    }
    let start_a = rng.index(count_a);
    let moved = 1 + rng.index(count_a.min(count_b).min(max_moved.max(1)));
    let mut start_b = if start_a < count_b { start_a } else { 0 };

    let n = p.num_clients;
    let mut in_a = vec![false; n + 1];
    for r in 0..moved {
        for &client in routes_a[(start_a + r) % count_a].clients {
            in_a[client as usize] = true;
        }
    }
    // Slide the window over the second parent's routes while that shrinks the symmetric
    // difference between the clients selected on both sides.
    let overlap = |route: &Placed| -> i64 {
        route
            .clients
            .iter()
            .map(|&c| if in_a[c as usize] { -1 } else { 1 })
            .sum()
    };
    if moved < count_b {
        loop {
            // Moving left adds route start_b - 1 and drops route start_b + moved - 1.
            let left_add = (start_b + count_b - 1) % count_b;
            let left_drop = (start_b + moved - 1) % count_b;
            let left = overlap(&routes_b[left_add]) - overlap(&routes_b[left_drop]);
            // Moving right adds route start_b + moved and drops route start_b.
            let right_add = (start_b + moved) % count_b;
            let right = overlap(&routes_b[right_add]) - overlap(&routes_b[start_b]);
            if left < 0 && left <= right {
                start_b = left_add;
            } else if right < 0 {
                start_b = (start_b + 1) % count_b;
            } else {
                break;
            }
        }
    }
    let mut in_b = vec![false; n + 1];
    let mut selected_b = vec![false; count_b];
    for r in 0..moved {
        let index = (start_b + r) % count_b;
        selected_b[index] = true;
        for &client in routes_b[index].clients {
            in_b[client as usize] = true;
        }
    }
    let lost: Vec<u32> = (0..count_b)
        .filter(|&index| selected_b[index])
        .flat_map(|index| routes_b[index].clients.iter().copied())
        .filter(|&client| !in_a[client as usize])
        .collect();

    // Both children start from the second parent's slots; the selected routes' slots take
    // the first parent's routes.
    let base: Vec<Vec<u32>> = (0..slots)
        .map(|slot| second.routes.get(slot).cloned().unwrap_or_default())
        .collect();
    let targets: Vec<usize> = (0..moved)
        .map(|r| routes_b[(start_b + r) % count_b].slot)
        .collect();
    let incoming: Vec<&[u32]> = (0..moved)
        .map(|r| routes_a[(start_a + r) % count_a].clients)
        .collect();

    let mut best: Option<(i64, Vec<Vec<u32>>)> = None;
    for keep_first_parent_routes in [true, false] {
        let mut routes = base.clone();
        for (&slot, clients) in targets.iter().zip(&incoming) {
            routes[slot] = if keep_first_parent_routes {
                clients.to_vec()
            } else {
                // Drop what the second parent serves outside its selected routes.
                clients
                    .iter()
                    .copied()
                    .filter(|&client| in_b[client as usize])
                    .collect()
            };
        }
        if keep_first_parent_routes {
            for (slot, route) in routes.iter_mut().enumerate() {
                if !targets.contains(&slot) {
                    route.retain(|&client| !in_a[client as usize]);
                }
            }
        }
        let routes = if p.has_fixed {
            let mut routes = routes;
            routes.push(lost.clone());
            Plan::normalise(p, routes, slots, *penalties)
        } else {
            let mut plan = Plan::new(p, routes, *penalties);
            plan.insert_all(&lost);
            plan.into_routes()
        };
        let cost = Individual::new(p, routes.clone()).penalised(penalties);
        if best.as_ref().is_none_or(|(best_cost, _)| cost < *best_cost) {
            best = Some((cost, routes));
        }
    }
    let routes = best.map(|(_, routes)| routes).unwrap_or(base);
    let dirty = routes
        .iter()
        .enumerate()
        .map(|(slot, route)| second.routes.get(slot).is_none_or(|old| old != route))
        .collect();
    (routes, dirty)
}
