//! The answer as `schemas/vrp/output.schema.json` describes it, recomputed from the plan's
//! routes (never carried over from the search's bookkeeping): each route's clients with
//! their prefix, load, distance and schedule, in the input's units.
//!
//! When no plan serves everyone feasibly, [`partial`] makes one that is feasible for the
//! clients it serves: from each violating route it drops, greedily, the client whose removal
//! leaves the least violation, then serves the dropped clients again wherever they fit; the
//! rest are listed as unserved with what they violated.

use serde::Serialize;

use caseload_sdk::SolverReport;

use crate::input::ClientId;
use crate::model::Model;
use crate::problem::Problem;
use crate::segment::Segment;

/// The answer.
#[derive(Debug, Serialize)]
pub struct VrpOutput {
    /// Distance, fixed costs and unserved clients' penalties: the objective.
    pub cost: f64,
    pub distance: f64,
    pub vehicles_used: usize,
    /// Whether every client is served within every constraint.
    pub feasible: bool,
    pub routes: Vec<RouteOutput>,
    pub unserved: Vec<Unserved>,
    pub solver: SolverReport,
}

/// One vehicle's route and schedule.
#[derive(Debug, Serialize)]
pub struct RouteOutput {
    pub vehicle: usize,
    pub clients: Vec<ClientId>,
    pub load: f64,
    pub distance: f64,
    pub duration: f64,
    /// When the vehicle leaves the depot.
    pub start: f64,
    /// When it is back.
    pub end: f64,
    /// When it arrives at each client, before any wait.
    pub arrivals: Vec<f64>,
    /// How long it waits at each client for the window to open.
    pub waits: Vec<f64>,
}

/// A client the answer leaves out, and why.
#[derive(Debug, Serialize)]
pub struct Unserved {
    pub client: ClientId,
    pub violation: &'static str,
    pub message: String,
}

/// What the search reports as it finds better plans: the output's cost and routes with
/// their clients and loads, which the routes view draws.
#[derive(Debug, Serialize)]
pub struct Incumbent {
    pub cost: f64,
    pub routes: Vec<IncumbentRoute>,
}

#[derive(Debug, Serialize)]
pub struct IncumbentRoute {
    pub vehicle: usize,
    pub clients: Vec<ClientId>,
    pub load: f64,
}

/// A route's numbers, in model units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub load: i64,
    pub distance: i64,
    pub start: i64,
    pub end: i64,
    pub arrivals: Vec<i64>,
    pub waits: Vec<i64>,
    /// Load over capacity.
    pub excess_load: i64,
    /// Service starts after windows close, and the return after the depot closes, summed.
    pub lateness: i64,
    /// Duration over the limit.
    pub over_duration: i64,
}

impl Schedule {
    pub fn feasible(&self) -> bool {
        self.excess_load == 0 && self.lateness == 0 && self.over_duration == 0
    }
}

/// Slot `slot`'s full route: its prefix, then `clients`.
pub fn full_route(p: &Problem, slot: usize, clients: &[u32]) -> Vec<u32> {
    let mut full = p.start(slot).prefix.clone();
    full.extend_from_slice(clients);
    full
}

/// The schedule of visiting `clients` (a full route) from the depot and back: leave at the
/// earliest time that gives the route its least duration, wait where a window is not open.
pub fn schedule(p: &Problem, clients: &[u32]) -> Schedule {
    let mut load = 0;
    let mut distance = 0;
    let mut segment = p.depot_end;
    let mut at = 0;
    for &client in clients {
        load += p.demand[client as usize];
        distance += p.travel.dist(at, client);
        segment = segment.then(p.travel.time(at, client), p.visit(client));
        at = client;
    }
    distance += p.travel.dist(at, 0);
    let whole = segment.then(p.travel.time(at, 0), p.depot_end);
    let start = if clients.is_empty() {
        p.early[0]
    } else {
        whole.earliest.min(whole.latest)
    };
    let mut time = start;
    let mut lateness = 0;
    let mut arrivals = Vec::with_capacity(clients.len());
    let mut waits = Vec::with_capacity(clients.len());
    let mut at = 0;
    for &client in clients {
        let c = client as usize;
        let arrival = time + p.travel.time(at, client);
        let wait = (p.early[c] - arrival).max(0);
        let begin = arrival + wait;
        lateness += (begin - p.late[c]).max(0);
        arrivals.push(arrival);
        waits.push(wait);
        time = begin + p.service[c];
        at = client;
    }
    let end = if clients.is_empty() {
        start
    } else {
        time + p.travel.time(at, 0)
    };
    lateness += (end - p.late[0]).max(0);
    Schedule {
        load,
        distance,
        start,
        end,
        arrivals,
        waits,
        excess_load: (load - p.capacity).max(0),
        lateness,
        over_duration: (end - start - p.max_duration).max(0),
    }
}

/// The answer for full routes by slot, with `unserved` clients and the solver's report.
pub fn output(
    model: &Model,
    p: &Problem,
    routes: &[Vec<u32>],
    unserved: Vec<Unserved>,
    solver: SolverReport,
) -> VrpOutput {
    let mut total_distance = 0;
    let mut vehicles_used = 0;
    let mut feasible = unserved.is_empty();
    let mut out = Vec::new();
    for (slot, clients) in routes.iter().enumerate() {
        if clients.is_empty() {
            continue;
        }
        let schedule = schedule(p, clients);
        feasible &= schedule.feasible();
        total_distance += schedule.distance;
        vehicles_used += 1;
        let time = |units: i64| model.units_to_input(units);
        out.push(RouteOutput {
            vehicle: slot,
            clients: clients
                .iter()
                .map(|&c| model.ids[c as usize].clone())
                .collect(),
            load: model.load_to_input(schedule.load),
            distance: time(schedule.distance),
            duration: time(schedule.end - schedule.start),
            start: time(schedule.start),
            end: time(schedule.end),
            arrivals: schedule.arrivals.iter().map(|&t| time(t)).collect(),
            waits: schedule.waits.iter().map(|&t| time(t)).collect(),
        });
    }
    let cost = total_distance
        + model.fixed_cost * vehicles_used as i64
        + model.unserved_penalty * unserved.len() as i64;
    VrpOutput {
        cost: model.units_to_input(cost),
        distance: model.units_to_input(total_distance),
        vehicles_used,
        feasible,
        routes: out,
        unserved,
        solver,
    }
}

/// The incumbent report for a plan of movable clients by slot.
pub fn incumbent(model: &Model, p: &Problem, routes: &[Vec<u32>], objective: i64) -> Incumbent {
    Incumbent {
        cost: model.units_to_input(objective),
        routes: routes
            .iter()
            .enumerate()
            .filter(|(slot, clients)| !clients.is_empty() || p.has_prefix(*slot))
            .map(|(slot, clients)| {
                let full = full_route(p, slot, clients);
                IncumbentRoute {
                    vehicle: slot,
                    load: model.load_to_input(full.iter().map(|&c| p.demand[c as usize]).sum()),
                    clients: full
                        .iter()
                        .map(|&c| model.ids[c as usize].clone())
                        .collect(),
                }
            })
            .collect(),
    }
}

/// Why a client was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    Capacity,
    TimeWindow,
    MaxDuration,
}

/// A plan feasible for the clients it serves, made from full routes by slot, and the
/// clients it leaves out; returns the routes and the unserved clients with their reasons.
pub fn partial(model: &Model, p: &Problem, routes: &[Vec<u32>]) -> (Vec<Vec<u32>>, Vec<Unserved>) {
    let mut routes: Vec<Vec<u32>> = routes.to_vec();
    let mut dropped: Vec<(u32, Reason, usize)> = Vec::new();
    for (slot, route) in routes.iter_mut().enumerate() {
        loop {
            let schedule = schedule(p, route);
            if schedule.feasible() || route.is_empty() {
                break;
            }
            let reason = if schedule.excess_load > 0 {
                Reason::Capacity
            } else if schedule.lateness > 0 {
                Reason::TimeWindow
            } else {
                Reason::MaxDuration
            };
            let at = least_violating_removal(p, route);
            dropped.push((route.remove(at), reason, slot));
        }
    }
    // Serve dropped clients again where they fit, each at its cheapest feasible place,
    // an unused vehicle included.
    let mut unserved = Vec::new();
    let vehicle_of = model.vehicle_of();
    for (client, reason, slot) in dropped {
        if p.in_prefix[client as usize] {
            // A prefix client served elsewhere would break its route's order.
            unserved.push(unserved_entry(model, p, client, reason, slot));
            continue;
        }
        let mut best: Option<(i64, usize, usize)> = None;
        for (other, route) in routes.iter().enumerate() {
            if vehicle_of[client as usize].is_some_and(|vehicle| vehicle != other) {
                continue;
            }
            if route.is_empty() && best.is_some() {
                continue;
            }
            // After the route's prefix, as far as it is still served.
            let prefix = route
                .iter()
                .take_while(|&&c| p.in_prefix[c as usize])
                .count();
            for at in prefix..=route.len() {
                let mut trial = route.clone();
                trial.insert(at, client);
                let trial_schedule = schedule(p, &trial);
                if trial_schedule.feasible() {
                    let added = trial_schedule.distance - schedule(p, route).distance;
                    if best.is_none_or(|(cost, _, _)| added < cost) {
                        best = Some((added, other, at));
                    }
                }
            }
        }
        match best {
            Some((_, other, at)) => routes[other].insert(at, client),
            None => unserved.push(unserved_entry(model, p, client, reason, slot)),
        }
    }
    (routes, unserved)
}

/// The position in `route` whose client's removal leaves the least excess load, then the
/// least lateness and duration excess, then the least distance.
fn least_violating_removal(p: &Problem, route: &[u32]) -> usize {
    let length = route.len();
    // Prefix and suffix segments and loads, so that each removal is priced in O(1).
    let mut forward = Vec::with_capacity(length + 1);
    forward.push(p.depot_end);
    let mut at = 0;
    for &client in route {
        let previous: Segment = forward[forward.len() - 1];
        forward.push(previous.then(p.travel.time(at, client), p.visit(client)));
        at = client;
    }
    let mut backward = vec![p.depot_end; length + 2];
    let mut after = 0;
    for k in (0..length).rev() {
        let client = route[k];
        backward[k + 1] = p
            .visit(client)
            .then(p.travel.time(client, after), backward[k + 2]);
        after = client;
    }
    let load: i64 = route.iter().map(|&c| p.demand[c as usize]).sum();
    let location = |k: usize| {
        if k == 0 || k > length {
            0
        } else {
            route[k - 1]
        }
    };
    let mut best = (i64::MAX, i64::MAX, i64::MAX, 0);
    for k in 1..=length {
        let (before, following) = (location(k - 1), location(k + 1));
        let joined = forward[k - 1].then(p.travel.time(before, following), backward[k + 1]);
        let excess = (load - p.demand[route[k - 1] as usize] - p.capacity).max(0);
        let time = joined.time_warp + (joined.duration - p.max_duration).max(0);
        let saving = p.travel.dist(before, following)
            - p.travel.dist(before, route[k - 1])
            - p.travel.dist(route[k - 1], following);
        let key = (excess, time, saving, k - 1);
        if key < best {
            best = key;
        }
    }
    best.3
}

fn unserved_entry(
    model: &Model,
    p: &Problem,
    client: u32,
    reason: Reason,
    slot: usize,
) -> Unserved {
    let id = model.ids[client as usize].clone();
    let total: i64 = p.demand.iter().sum();
    match reason {
        Reason::Capacity => match model.fleet {
            Some(fleet) if total > p.capacity.saturating_mul(fleet as i64) => Unserved {
                client: id,
                violation: "vehicles",
                message: format!(
                    "the fleet of {fleet} vehicles carries at most {} of the total demand {}",
                    model.load_to_input(p.capacity * fleet as i64),
                    model.load_to_input(total)
                ),
            },
            _ => Unserved {
                client: id,
                violation: "capacity",
                message: format!(
                    "vehicle {slot}'s route would carry more than its capacity {} with it, and no other vehicle has room",
                    model.load_to_input(p.capacity)
                ),
            },
        },
        Reason::TimeWindow => Unserved {
            client: id,
            violation: "time_window",
            message: format!(
                "no route found serves it within its time window (vehicle {slot}'s would be late with it)"
            ),
        },
        Reason::MaxDuration => Unserved {
            client: id,
            violation: "max_duration",
            message: format!(
                "vehicle {slot}'s route would take longer than vehicles.max_duration {} with it, and no other route has time",
                model.units_to_input(p.max_duration)
            ),
        },
    }
}
