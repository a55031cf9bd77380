//! The model a run solves, built from the input with every check the schema cannot make:
//! all numbers in integers (distances, times and costs in one unit, loads in another) so that
//! sums are exact, clients numbered `1..=n` in input order, the depot 0.
//!
//! [`build`] is both the submission check (`validate`) and the run's first step, so a run
//! checks once ([`crate::Vrp`] sets `RUN_CHECKS_INPUT`). It is linear in the input's size:
//! nothing quadratic is built here unless the input is a matrix already.

use std::collections::HashMap;

use caseload_sdk::Violation;

use crate::input::{ClientId, VrpInput};
use crate::travel::{MAX_DENSE_ENTRIES, Table, Travel, rounding_scale};

/// At most this many violations are listed for one input.
pub const MAX_VIOLATIONS: usize = 100;

/// A time no schedule reaches: the end of an open horizon, the close of an open window.
/// Far below `i64::MAX`, so that sums of it and any route's times cannot overflow.
pub const TIME_INFINITY: i64 = 1 << 60;

/// The largest number in model units an input may give; sums over 100,000 clients stay far
/// below [`TIME_INFINITY`].
const MAX_UNITS: f64 = 1e12;

/// Integer units per input unit for matrices or loads with fractions.
const FRACTION_SCALE: i64 = 1000;

/// What solving takes per client beyond the input, at most: granular neighbour lists,
/// the local search's arrays and a population of up to 100 plans of a few integers per
/// client each.
pub const BYTES_PER_CLIENT: usize = 4096;

/// The model of one instance.
#[derive(Debug, Clone)]
pub struct Model {
    pub name: Option<String>,
    /// Number of clients, `n`.
    pub num_clients: usize,
    /// The identifier of each location: the depot's at 0, then the clients'.
    pub ids: Vec<ClientId>,
    /// Integer units per input unit of distance, time and cost.
    pub scale: i64,
    /// Integer units per input unit of load.
    pub load_scale: i64,
    /// Per location (the depot's is 0): demand, service time, window open and close.
    pub demand: Vec<i64>,
    pub service: Vec<i64>,
    pub early: Vec<i64>,
    pub late: Vec<i64>,
    pub capacity: i64,
    /// How many vehicles may be used, if limited.
    pub fleet: Option<usize>,
    pub fixed_cost: i64,
    pub max_duration: Option<i64>,
    pub travel: Travel,
    /// Coordinates per location, when every location has them.
    pub coordinates: Option<(Vec<f64>, Vec<f64>)>,
    /// Routes held by `fixed`, by vehicle.
    pub fixed: Vec<FixedVehicle>,
    /// The warm start's routes by client number, unknown and repeated clients left out.
    pub initial_routes: Option<Vec<Vec<u32>>>,
    /// How many of the warm start's entries were left out (unknown or repeated).
    pub ignored_initial_entries: usize,
    /// What an unserved client costs in an answer that leaves one out.
    pub unserved_penalty: i64,
    /// Whether any window or the route duration limit binds, so schedules matter.
    pub timed: bool,
}

/// What `fixed` says about one vehicle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedVehicle {
    pub vehicle: usize,
    /// The clients the route starts with, in order.
    pub prefix: Vec<u32>,
    /// The other clients the vehicle must serve, anywhere after the prefix.
    pub clients: Vec<u32>,
}

impl Model {
    /// A distance, time or cost in model units as the input's number.
    pub fn units_to_input(&self, units: i64) -> f64 {
        units as f64 / self.scale as f64
    }

    /// A load in model units as the input's number.
    pub fn load_to_input(&self, units: i64) -> f64 {
        units as f64 / self.load_scale as f64
    }

    /// The vehicle each client is fixed to, if any, by client number.
    pub fn vehicle_of(&self) -> Vec<Option<usize>> {
        let mut vehicle_of = vec![None; self.num_clients + 1];
        for fixed in &self.fixed {
            for &client in fixed.prefix.iter().chain(&fixed.clients) {
                vehicle_of[client as usize] = Some(fixed.vehicle);
            }
        }
        vehicle_of
    }
}

/// The violations found so far, at most [`MAX_VIOLATIONS`] listed.
#[derive(Debug, Default)]
struct Violations {
    listed: Vec<Violation>,
    count: usize,
}

impl Violations {
    fn push(&mut self, pointer: impl Into<String>, message: impl Into<String>) {
        self.count += 1;
        if self.listed.len() < MAX_VIOLATIONS {
            self.listed.push(Violation::new(pointer, message));
        }
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn into_list(mut self) -> Vec<Violation> {
        if self.count > self.listed.len() {
            let more = self.count - self.listed.len();
            self.listed.push(Violation::new(
                "",
                format!("{more} more violations not listed"),
            ));
        }
        self.listed
    }
}

/// How many bytes solving an instance of this shape allocates beyond its input.
pub fn needed_bytes(input: &VrpInput) -> u64 {
    let locations = input.clients.len() as u64 + 1;
    let squared = locations.saturating_mul(locations);
    let matrices =
        u64::from(input.distance_matrix.is_some()) + u64::from(input.duration_matrix.is_some());
    let dense_cache = if matrices == 0 && squared <= MAX_DENSE_ENTRIES as u64 {
        squared.saturating_mul(4)
    } else {
        0
    };
    // SWAP*'s insertion cache: at most 2^20 entries of 48 bytes.
    let insertion_cache = squared.min(1 << 20).saturating_mul(48);
    (input.clients.len() as u64)
        .saturating_mul(BYTES_PER_CLIENT as u64)
        .saturating_add(squared.saturating_mul(8).saturating_mul(matrices))
        .saturating_add(dense_cache)
        .saturating_add(insertion_cache)
}

/// The model of an input, or everything wrong with it.
pub fn build(input: &VrpInput) -> Result<Model, Vec<Violation>> {
    let mut violations = Violations::default();
    let n = input.clients.len();
    if u32::try_from(n).map_or(true, |n| n >= u32::MAX / 4) {
        violations.push(
            "/clients",
            format!("{n} clients are more than this use case takes"),
        );
        return Err(violations.into_list());
    }
    let needed = needed_bytes(input);
    if !caseload_sdk::memory::fits(usize::try_from(needed).unwrap_or(usize::MAX)) {
        let pointer = if input.distance_matrix.is_some() {
            "/distance_matrix"
        } else {
            "/clients"
        };
        violations.push(
            pointer,
            format!(
                "{n} clients need about {} MiB to solve, more than this job's memory limit \
                 holds (GET /problem/vrp shows the use case's; a job's memory_limit_mib can \
                 only lower it)",
                needed.div_ceil(1 << 20)
            ),
        );
        return Err(violations.into_list());
    }

    let matrix_given = input.distance_matrix.is_some();
    let rounding = input.rounding.unwrap_or_default();
    let scale = if matrix_given {
        let integral = |value: &f64| value.fract() == 0.0;
        let mut times = input.clients.iter().flat_map(|client| {
            client
                .service_time
                .into_iter()
                .chain(client.time_window.into_iter().flatten())
        });
        let matrix_integral = [&input.distance_matrix, &input.duration_matrix]
            .into_iter()
            .flatten()
            .flatten()
            .flatten()
            .flatten()
            .all(integral);
        let others_integral = times.all(|value| integral(&value))
            && input.depot.time_window.iter().flatten().all(integral)
            && [
                input.vehicles.fixed_cost,
                input.vehicles.max_duration,
                input.unserved_penalty,
            ]
            .iter()
            .flatten()
            .all(integral);
        if matrix_integral && others_integral {
            1
        } else {
            FRACTION_SCALE
        }
    } else {
        rounding_scale(rounding)
    };
    let load_integral = input.vehicles.capacity.fract() == 0.0
        && input
            .clients
            .iter()
            .filter_map(|client| client.demand)
            .all(|demand| demand.fract() == 0.0);
    let load_scale = if load_integral { 1 } else { FRACTION_SCALE };

    let units = |value: f64, pointer: &dyn Fn() -> String, violations: &mut Violations| -> i64 {
        let scaled = value * scale as f64;
        if !scaled.is_finite() || scaled.abs() > MAX_UNITS {
            violations.push(
                pointer(),
                format!(
                    "{value} is too large: at most {:e} in this model",
                    MAX_UNITS / scale as f64
                ),
            );
            return 0;
        }
        if value < 0.0 {
            violations.push(pointer(), format!("must not be negative, found {value}"));
            return 0;
        }
        scaled.round() as i64
    };
    let load_units =
        |value: f64, pointer: &dyn Fn() -> String, violations: &mut Violations| -> i64 {
            let scaled = value * load_scale as f64;
            if !scaled.is_finite() || scaled.abs() > MAX_UNITS {
                violations.push(
                    pointer(),
                    format!(
                        "{value} is too large: at most {:e}",
                        MAX_UNITS / load_scale as f64
                    ),
                );
                return 0;
            }
            if value < 0.0 {
                violations.push(pointer(), format!("must not be negative, found {value}"));
                return 0;
            }
            scaled.round() as i64
        };

    // The fleet.
    let capacity = load_units(
        input.vehicles.capacity,
        &|| "/vehicles/capacity".into(),
        &mut violations,
    );
    let fleet = match input.vehicles.count {
        Some(0) if n > 0 => {
            violations.push("/vehicles/count", "must be at least 1 to serve any client");
            Some(0)
        }
        Some(count) => Some(usize::try_from(count).unwrap_or(usize::MAX)),
        None => None,
    };
    let fixed_cost = input.vehicles.fixed_cost.map_or(0, |cost| {
        units(cost, &|| "/vehicles/fixed_cost".into(), &mut violations)
    });
    let max_duration = input.vehicles.max_duration.map(|duration| {
        units(
            duration,
            &|| "/vehicles/max_duration".into(),
            &mut violations,
        )
    });

    // The depot and its horizon.
    let (open, close) = match input.depot.time_window {
        Some([open, close]) => {
            let open_units = units(open, &|| "/depot/time_window/0".into(), &mut violations);
            let close_units = units(close, &|| "/depot/time_window/1".into(), &mut violations);
            if open > close {
                violations.push(
                    "/depot/time_window",
                    format!("opens at {open}, after it closes at {close}"),
                );
            }
            (open_units, close_units)
        }
        None => (0, TIME_INFINITY),
    };

    // Identifiers, each once.
    let depot_id = input
        .depot
        .id
        .clone()
        .unwrap_or_else(|| ClientId::Text("depot".into()));
    let mut index_of: HashMap<&ClientId, u32> = HashMap::with_capacity(n);
    for (position, client) in input.clients.iter().enumerate() {
        if let Some(first) = index_of.insert(&client.id, position as u32 + 1) {
            violations.push(
                format!("/clients/{position}/id"),
                format!("repeats the id {} of /clients/{}", client.id, first - 1),
            );
            index_of.insert(&client.id, first);
        }
    }

    // Clients' numbers.
    let mut demand = vec![0; n + 1];
    let mut service = vec![0; n + 1];
    let mut early = vec![open; n + 1];
    let mut late = vec![close; n + 1];
    let mut timed = max_duration.is_some();
    for (position, client) in input.clients.iter().enumerate() {
        let index = position + 1;
        if let Some(value) = client.demand {
            demand[index] = load_units(
                value,
                &|| format!("/clients/{position}/demand"),
                &mut violations,
            );
            if demand[index] > capacity {
                violations.push(
                    format!("/clients/{position}/demand"),
                    format!(
                        "{value} is more than a vehicle's capacity {}",
                        input.vehicles.capacity
                    ),
                );
            }
        }
        if let Some(value) = client.service_time {
            service[index] = units(
                value,
                &|| format!("/clients/{position}/service_time"),
                &mut violations,
            );
        }
        if let Some([first, second]) = client.time_window {
            early[index] = units(
                first,
                &|| format!("/clients/{position}/time_window/0"),
                &mut violations,
            );
            late[index] = units(
                second,
                &|| format!("/clients/{position}/time_window/1"),
                &mut violations,
            );
            if first > second {
                violations.push(
                    format!("/clients/{position}/time_window"),
                    format!("opens at {first}, after it closes at {second}"),
                );
            }
            timed |= early[index] > open || late[index] < close;
        }
    }
    if close < TIME_INFINITY {
        // A closing depot binds every route's return.
        timed = true;
    }

    // Coordinates: needed without a matrix, used for drawing and geometry with one.
    let coordinates_complete = input.depot.x.is_some()
        && input.depot.y.is_some()
        && input
            .clients
            .iter()
            .all(|client| client.x.is_some() && client.y.is_some());
    if !matrix_given {
        if input.depot.x.is_none() || input.depot.y.is_none() {
            violations.push(
                "/depot",
                "needs x and y: without a distance_matrix, distances come from coordinates",
            );
        }
        for (position, client) in input.clients.iter().enumerate() {
            if client.x.is_none() || client.y.is_none() {
                violations.push(
                    format!("/clients/{position}"),
                    "needs x and y: without a distance_matrix, distances come from coordinates",
                );
            }
        }
        if input.duration_matrix.is_some() {
            violations.push(
                "/duration_matrix",
                "needs a distance_matrix beside it: with coordinates, travel times equal distances",
            );
        }
    }
    let coordinates = coordinates_complete.then(|| {
        let mut x = Vec::with_capacity(n + 1);
        let mut y = Vec::with_capacity(n + 1);
        x.push(input.depot.x.unwrap_or_default());
        y.push(input.depot.y.unwrap_or_default());
        for client in &input.clients {
            x.push(client.x.unwrap_or_default());
            y.push(client.y.unwrap_or_default());
        }
        (x, y)
    });
    if let Some((x, y)) = &coordinates {
        let limit = MAX_UNITS / scale as f64 / 4.0;
        for (index, (x, y)) in x.iter().zip(y).enumerate() {
            if !x.is_finite() || !y.is_finite() || x.abs() > limit || y.abs() > limit {
                let pointer = if index == 0 {
                    "/depot".to_owned()
                } else {
                    format!("/clients/{}", index - 1)
                };
                violations.push(
                    pointer,
                    format!("coordinates must be finite and at most {limit:e} in size"),
                );
            }
        }
    }

    // Matrices.
    let matrix = |name: &str,
                  matrix: &Vec<Vec<Option<f64>>>,
                  violations: &mut Violations|
     -> Option<Vec<i64>> {
        let size = n + 1;
        let mut entries = Vec::with_capacity(size * size);
        let mut valid = true;
        if matrix.len() != size {
            violations.push(
                format!("/{name}"),
                format!(
                    "has {} rows; expected {size}: the depot, then the {n} clients",
                    matrix.len()
                ),
            );
            valid = false;
        }
        for (row_index, row) in matrix.iter().enumerate() {
            if row.len() != size {
                violations.push(
                    format!("/{name}/{row_index}"),
                    format!(
                        "has {} entries; expected {size}: the depot, then the {n} clients",
                        row.len()
                    ),
                );
                valid = false;
                continue;
            }
            for (column, entry) in row.iter().enumerate() {
                match entry {
                    None => {
                        violations
                            .push(format!("/{name}/{row_index}/{column}"), "is missing (null)");
                        valid = false;
                    }
                    Some(value) => {
                        let scaled = value * scale as f64;
                        if !scaled.is_finite() || *value < 0.0 || scaled > MAX_UNITS {
                            violations.push(
                                format!("/{name}/{row_index}/{column}"),
                                format!(
                                    "{value} is not a distance: give a number from 0 to {:e}",
                                    MAX_UNITS / scale as f64
                                ),
                            );
                            valid = false;
                        } else {
                            entries.push(scaled.round() as i64);
                        }
                    }
                }
            }
        }
        valid.then_some(entries)
    };
    let travel = match &input.distance_matrix {
        Some(distances) => {
            let distance = matrix("distance_matrix", distances, &mut violations);
            let duration = input
                .duration_matrix
                .as_ref()
                .map(|durations| matrix("duration_matrix", durations, &mut violations));
            match (distance, duration) {
                (Some(distance), None) => Some(Travel {
                    distance: Table::dense(n + 1, distance),
                    duration: None,
                }),
                (Some(distance), Some(Some(duration))) => Some(Travel {
                    distance: Table::dense(n + 1, distance),
                    duration: Some(Table::dense(n + 1, duration)),
                }),
                _ => None,
            }
        }
        None => coordinates
            .as_ref()
            .filter(|_| violations.is_empty())
            .map(|(x, y)| Travel {
                distance: Table::Euclid {
                    x: x.clone(),
                    y: y.clone(),
                    rounding,
                },
                duration: None,
            }),
    };

    // Which clients a vehicle can serve at all: reach within the window, return within the
    // horizon, a round trip within the duration limit.
    if let Some(travel) = &travel {
        for (position, client) in input.clients.iter().enumerate() {
            let index = position as u32 + 1;
            let i = index as usize;
            let there = travel.time(0, index);
            let back = travel.time(index, 0);
            let arrival = open.saturating_add(there);
            if client.time_window.is_some() && early[i] <= late[i] && arrival > late[i] {
                violations.push(
                    format!("/clients/{position}/time_window"),
                    format!(
                        "closes at {} but no vehicle can arrive before {} (the depot opens at {} and the trip takes {})",
                        input.units_label(late[i], scale),
                        input.units_label(arrival, scale),
                        input.units_label(open, scale),
                        input.units_label(there, scale),
                    ),
                );
                continue;
            }
            let start = arrival.max(early[i]);
            let home = start.saturating_add(service[i]).saturating_add(back);
            if close < TIME_INFINITY && early[i] <= late[i] && home > close {
                violations.push(
                    format!("/clients/{position}/time_window"),
                    format!(
                        "a vehicle serving it is back at the depot at {} at the earliest, after the depot closes at {}",
                        input.units_label(home, scale),
                        input.units_label(close, scale),
                    ),
                );
                continue;
            }
            if let Some(limit) = max_duration {
                let round_trip = there.saturating_add(service[i]).saturating_add(back);
                if round_trip > limit {
                    violations.push(
                        format!("/clients/{position}"),
                        format!(
                            "the round trip from the depot takes {}, more than vehicles.max_duration {}",
                            input.units_label(round_trip, scale),
                            input.units_label(limit, scale),
                        ),
                    );
                }
            }
        }
    }

    // Fixed routes.
    let mut fixed = Vec::new();
    let mut fixed_at: HashMap<u32, String> = HashMap::new();
    let mut vehicles_fixed: HashMap<u64, usize> = HashMap::new();
    for (entry, route) in input.fixed.iter().flatten().enumerate() {
        let vehicle_limit = fleet.unwrap_or(n.max(1));
        let vehicle = route.vehicle;
        if vehicle >= vehicle_limit as u64 {
            let why = match fleet {
                Some(count) => format!("there are {count} vehicles, numbered from 0"),
                None => format!(
                    "a plan uses at most one vehicle per client, numbered 0 to {}",
                    n.max(1) - 1
                ),
            };
            violations.push(
                format!("/fixed/{entry}/vehicle"),
                format!("vehicle {vehicle} does not exist: {why}"),
            );
        }
        if let Some(first) = vehicles_fixed.insert(vehicle, entry) {
            violations.push(
                format!("/fixed/{entry}/vehicle"),
                format!("vehicle {vehicle} is fixed already by /fixed/{first}: give each vehicle one entry"),
            );
        }
        let mut resolve =
            |list: &[ClientId], field: &str, violations: &mut Violations| -> Vec<u32> {
                let mut clients = Vec::with_capacity(list.len());
                for (at, id) in list.iter().enumerate() {
                    let pointer = format!("/fixed/{entry}/{field}/{at}");
                    match index_of.get(id) {
                        None => violations.push(pointer, format!("no client has the id {id}")),
                        Some(&index) => match fixed_at.get(&index) {
                            Some(first) => violations
                                .push(pointer, format!("client {id} is fixed already at {first}")),
                            None => {
                                fixed_at.insert(index, pointer);
                                clients.push(index);
                            }
                        },
                    }
                }
                clients
            };
        let prefix = resolve(&route.prefix, "prefix", &mut violations);
        let clients = resolve(&route.clients, "clients", &mut violations);
        let prefix_load: i64 = prefix.iter().map(|&client| demand[client as usize]).sum();
        if prefix_load > capacity {
            violations.push(
                format!("/fixed/{entry}/prefix"),
                format!(
                    "carries {} together, more than a vehicle's capacity {}",
                    prefix_load as f64 / load_scale as f64,
                    input.vehicles.capacity
                ),
            );
        }
        fixed.push(FixedVehicle {
            vehicle: usize::try_from(vehicle).unwrap_or(usize::MAX),
            prefix,
            clients,
        });
    }

    // The warm start: unknown and repeated entries are left out, so that a start from a
    // plan for an instance since changed still works.
    let mut ignored_initial_entries = 0;
    let initial_routes = input.initial_routes.as_ref().map(|routes| {
        let mut seen = vec![false; n + 1];
        routes
            .iter()
            .map(|route| {
                route
                    .clients()
                    .iter()
                    .filter_map(|id| match index_of.get(id) {
                        Some(&index) if !seen[index as usize] => {
                            seen[index as usize] = true;
                            Some(index)
                        }
                        _ => {
                            ignored_initial_entries += 1;
                            None
                        }
                    })
                    .collect()
            })
            .collect()
    });

    let unserved_penalty = match input.unserved_penalty {
        Some(penalty) => units(penalty, &|| "/unserved_penalty".into(), &mut violations),
        None => travel.as_ref().map_or(0, |travel| {
            let longest = (1..=n as u32)
                .map(|client| {
                    travel
                        .dist(0, client)
                        .saturating_add(travel.dist(client, 0))
                })
                .max()
                .unwrap_or(0);
            longest.saturating_mul(2).saturating_add(fixed_cost)
        }),
    };

    let Some(travel) = travel.filter(|_| violations.is_empty()) else {
        if violations.is_empty() {
            violations.push("", "the instance has no way to measure travel");
        }
        return Err(violations.into_list());
    };
    let mut ids = Vec::with_capacity(n + 1);
    ids.push(depot_id);
    ids.extend(input.clients.iter().map(|client| client.id.clone()));
    early[0] = open;
    late[0] = close;
    Ok(Model {
        name: input.name.clone(),
        num_clients: n,
        ids,
        scale,
        load_scale,
        demand,
        service,
        early,
        late,
        capacity,
        fleet,
        fixed_cost,
        max_duration,
        travel,
        coordinates,
        fixed,
        initial_routes,
        ignored_initial_entries,
        unserved_penalty,
        timed,
    })
}

impl VrpInput {
    /// A time in model units as the input's number, for messages.
    fn units_label(&self, units: i64, scale: i64) -> String {
        if units >= TIME_INFINITY / 2 {
            "never".to_owned()
        } else {
            format!("{}", units as f64 / scale as f64)
        }
    }
}
