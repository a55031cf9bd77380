//! A given plan scored, for `evaluate`: a dispatcher's hand-made routes, or an answer to
//! re-check. The solution is an output, or `{"routes": [...]}` with each route a list of
//! client ids or an object with `clients` (and `vehicle`, else its place in the list).
//!
//! The plan is costed as an output is (distance, fixed cost per vehicle used, the unserved
//! penalty per client no route serves), its schedules computed as [`crate::output::schedule`]
//! computes them, and every rule it breaks is a violation at a pointer into the solution:
//! a load over capacity, service after a window closes, a route over the duration limit, a
//! return after the depot closes, a vehicle the fleet does not have, a route that breaks
//! `fixed`, a client visited twice, an id no client has, a client no route serves.

use std::collections::HashMap;

use caseload_sdk::{EvaluateError, Evaluation, Violation, solution};
use serde::Deserialize;
use serde_json::json;

use crate::input::{ClientId, VrpInput};
use crate::model::{self, MAX_VIOLATIONS, Model};
use crate::output::{RouteOutput, schedule};
use crate::problem::Problem;

#[derive(Deserialize)]
struct Plan {
    routes: Vec<GivenRoute>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum GivenRoute {
    Clients(Vec<ClientId>),
    Route {
        #[serde(default)]
        vehicle: Option<u64>,
        clients: Vec<ClientId>,
    },
}

/// One route of the plan as the model sees it.
struct Route {
    /// Where the route is in the solution, and where its client list is.
    pointer: String,
    clients_pointer: String,
    vehicle: u64,
    /// Client numbers, and for each its place in the given list.
    clients: Vec<u32>,
    places: Vec<usize>,
}

/// The violations found, at most [`MAX_VIOLATIONS`] listed, then a count of the rest.
#[derive(Default)]
struct Broken {
    listed: Vec<Violation>,
    more: usize,
}

impl Broken {
    fn push(&mut self, pointer: impl Into<String>, message: impl Into<String>) {
        if self.listed.len() < MAX_VIOLATIONS {
            self.listed.push(Violation::new(pointer, message));
        } else {
            self.more += 1;
        }
    }

    fn into_list(mut self) -> Vec<Violation> {
        if self.more > 0 {
            self.listed.push(Violation::new(
                "/solution",
                format!("and {} more violations like these", self.more),
            ));
        }
        self.listed
    }
}

pub(crate) fn evaluate(input: &VrpInput, text: &str) -> Result<Evaluation, EvaluateError> {
    let Plan { routes: given } = solution(text)?;
    let model = model::build(input).map_err(EvaluateError::input)?;
    let problem = Problem::without_neighbours(&model);
    let mut broken = Broken::default();
    let routes = resolve(&model, given, &mut broken);

    let mut total_distance = 0;
    let mut vehicles_used = 0;
    let mut out = Vec::new();
    let time = |units: i64| model.units_to_input(units);
    for route in &routes {
        if route.clients.is_empty() {
            continue;
        }
        let s = schedule(&problem, &route.clients);
        total_distance += s.distance;
        vehicles_used += 1;
        if s.excess_load > 0 {
            broken.push(
                route.pointer.clone(),
                format!(
                    "carries {}, more than a vehicle's capacity {}",
                    model.load_to_input(s.load),
                    model.load_to_input(model.capacity)
                ),
            );
        }
        if let Some(limit) = model.max_duration
            && s.end - s.start > limit
        {
            broken.push(
                route.pointer.clone(),
                format!(
                    "takes {}, more than max_duration {}",
                    time(s.end - s.start),
                    time(limit)
                ),
            );
        }
        for (k, &client) in route.clients.iter().enumerate() {
            let c = client as usize;
            let begins = s.arrivals[k] + s.waits[k];
            if begins > model.late[c] {
                broken.push(
                    format!("{}/{}", route.clients_pointer, route.places[k]),
                    format!(
                        "service starts at {}, after client {}'s time window closes at {}",
                        time(begins),
                        model.ids[c],
                        time(model.late[c])
                    ),
                );
            }
        }
        if s.end > model.late[0] {
            broken.push(
                route.pointer.clone(),
                format!(
                    "is back at the depot at {}, after it closes at {}",
                    time(s.end),
                    time(model.late[0])
                ),
            );
        }
        out.push(RouteOutput {
            vehicle: usize::try_from(route.vehicle).unwrap_or(usize::MAX),
            clients: route
                .clients
                .iter()
                .map(|&c| model.ids[c as usize].clone())
                .collect(),
            load: model.load_to_input(s.load),
            distance: time(s.distance),
            duration: time(s.end - s.start),
            start: time(s.start),
            end: time(s.end),
            arrivals: s.arrivals.iter().map(|&t| time(t)).collect(),
            waits: s.waits.iter().map(|&t| time(t)).collect(),
        });
    }
    check_fixed(&model, &routes, &mut broken);

    let mut served = vec![false; model.num_clients + 1];
    for route in &routes {
        for &client in &route.clients {
            served[client as usize] = true;
        }
    }
    let unserved: Vec<&ClientId> = (1..=model.num_clients)
        .filter(|&client| !served[client])
        .map(|client| &model.ids[client])
        .collect();
    for id in &unserved {
        broken.push("/solution/routes", format!("no route serves client {id}"));
    }
    let cost = total_distance
        + model.fixed_cost * vehicles_used as i64
        + model.unserved_penalty * unserved.len() as i64;
    let violations = broken.into_list();
    Ok(Evaluation {
        objective: model.units_to_input(cost),
        feasible: violations.is_empty(),
        violations,
        details: json!({
            "cost": model.units_to_input(cost),
            "distance": model.units_to_input(total_distance),
            "vehicles_used": vehicles_used,
            "routes": out,
            "unserved": unserved,
        }),
    })
}

/// The given routes as client numbers: ids no client has and second visits are left out
/// (and are violations), as are vehicles the fleet does not have or given twice.
fn resolve(model: &Model, given: Vec<GivenRoute>, broken: &mut Broken) -> Vec<Route> {
    let index_of: HashMap<&ClientId, u32> = model.ids[1..]
        .iter()
        .enumerate()
        .map(|(position, id)| (id, position as u32 + 1))
        .collect();
    let mut visited_at: Vec<Option<String>> = vec![None; model.num_clients + 1];
    let mut vehicle_at: HashMap<u64, String> = HashMap::new();
    let mut routes = Vec::with_capacity(given.len());
    for (r, route) in given.into_iter().enumerate() {
        let pointer = format!("/solution/routes/{r}");
        let (vehicle, ids, clients_pointer) = match route {
            GivenRoute::Clients(ids) => (r as u64, ids, pointer.clone()),
            GivenRoute::Route { vehicle, clients } => (
                vehicle.unwrap_or(r as u64),
                clients,
                format!("{pointer}/clients"),
            ),
        };
        if !ids.is_empty() {
            if let Some(fleet) = model.fleet
                && vehicle >= fleet as u64
            {
                broken.push(
                    pointer.clone(),
                    format!(
                        "is vehicle {vehicle}'s: the fleet has {fleet} vehicles, numbered 0 to {}",
                        fleet.saturating_sub(1)
                    ),
                );
            }
            if let Some(first) = vehicle_at.insert(vehicle, pointer.clone()) {
                broken.push(
                    pointer.clone(),
                    format!("is vehicle {vehicle}'s, whose route is {first} already"),
                );
                vehicle_at.insert(vehicle, first);
            }
        }
        let mut clients = Vec::with_capacity(ids.len());
        let mut places = Vec::with_capacity(ids.len());
        for (place, id) in ids.iter().enumerate() {
            let at = format!("{clients_pointer}/{place}");
            match index_of.get(id) {
                None => broken.push(at, format!("no client has the id {id}")),
                Some(&client) => match &visited_at[client as usize] {
                    Some(first) => {
                        broken.push(at, format!("visits client {id} again, first at {first}"))
                    }
                    None => {
                        visited_at[client as usize] = Some(at);
                        clients.push(client);
                        places.push(place);
                    }
                },
            }
        }
        routes.push(Route {
            pointer,
            clients_pointer,
            vehicle,
            clients,
            places,
        });
    }
    routes
}

/// What `fixed` asks of each vehicle: its route starts with the prefix, and serves the
/// clients fixed to it.
fn check_fixed(model: &Model, routes: &[Route], broken: &mut Broken) {
    for fixed in &model.fixed {
        let route = routes
            .iter()
            .find(|route| route.vehicle == fixed.vehicle as u64 && !route.clients.is_empty());
        let names = |clients: &[u32]| {
            clients
                .iter()
                .map(|&c| model.ids[c as usize].to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(route) = route else {
            if !fixed.prefix.is_empty() || !fixed.clients.is_empty() {
                broken.push(
                    "/solution/routes",
                    format!(
                        "no route is vehicle {}'s, which fixed gives clients {}",
                        fixed.vehicle,
                        names(&[fixed.prefix.as_slice(), fixed.clients.as_slice()].concat())
                    ),
                );
            }
            continue;
        };
        if !route.clients.starts_with(&fixed.prefix) {
            broken.push(
                route.clients_pointer.clone(),
                format!(
                    "must start with {} (fixed prefix of vehicle {})",
                    names(&fixed.prefix),
                    fixed.vehicle
                ),
            );
        }
        for &client in fixed.prefix.iter().chain(&fixed.clients) {
            if !route.clients.contains(&client) {
                broken.push(
                    route.clients_pointer.clone(),
                    format!(
                        "does not serve client {}, which fixed puts on vehicle {}",
                        model.ids[client as usize], fixed.vehicle
                    ),
                );
            }
        }
    }
}
