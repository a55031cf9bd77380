//! The solver's view of a model: travel in dense tables where they fit, the granular
//! neighbourhoods, the vehicle slots with their fixed prefixes, and each client's polar angle
//! around the depot. Built once per run; everything the search reads about the instance.

use crate::model::{Model, TIME_INFINITY};
use crate::neighbours::{self, NeighbourSettings, Tables};
use crate::segment::Segment;
use crate::travel::Travel;

/// No vehicle: a client free to ride any.
pub const FREE: u32 = u32::MAX;

/// How a vehicle's route starts: at the depot, or after its fixed prefix.
#[derive(Debug, Clone)]
pub struct RouteStart {
    /// The location the movable part of the route starts from.
    pub location: u32,
    pub load: i64,
    pub distance: i64,
    /// The depot, then the prefix.
    pub segment: Segment,
    pub prefix: Vec<u32>,
}

/// Everything the search reads about the instance.
#[derive(Debug)]
pub struct Problem {
    pub num_clients: usize,
    pub travel: Travel,
    pub demand: Vec<i64>,
    pub service: Vec<i64>,
    pub early: Vec<i64>,
    pub late: Vec<i64>,
    pub capacity: i64,
    pub fixed_cost: i64,
    /// The route duration limit, [`TIME_INFINITY`] when there is none.
    pub max_duration: i64,
    /// Whether schedules matter (windows or a duration limit).
    pub timed: bool,
    pub fleet: Option<usize>,
    /// The vehicle each client is fixed to, [`FREE`] if none.
    pub vehicle_of: Vec<u32>,
    /// Whether any client is fixed to a vehicle.
    pub has_fixed: bool,
    /// Whether a client is part of a fixed prefix (and so never moved).
    pub in_prefix: Vec<bool>,
    /// The clients the search moves: all but the prefixes'.
    pub movable: Vec<u32>,
    /// How routes start, for vehicles with a prefix; others start at the depot.
    prefixes: Vec<Option<RouteStart>>,
    depot_start: RouteStart,
    /// The depot as the end of every route.
    pub depot_end: Segment,
    /// Each location's visit as a time segment (the depot's is its horizon).
    visits: Vec<Segment>,
    /// Each client's neighbours, nearest first (`neighbour_start[i]..neighbour_start[i + 1]`).
    neighbour_start: Vec<u32>,
    neighbour_list: Vec<u32>,
    /// Polar angle of each location around the depot in 1/65536 turns, if coordinates exist.
    pub angle: Option<Vec<i32>>,
    pub coordinates: Option<(Vec<f64>, Vec<f64>)>,
    /// Whether every distance equals its reverse.
    pub symmetric: bool,
    /// The fewest route slots a plan needs: one per fixed vehicle up to the highest fixed.
    pub min_slots: usize,
    /// Whether `fixed` names the vehicle of each slot below `min_slots`.
    fixed_slots: Vec<bool>,
}

impl Problem {
    pub fn new(model: &Model, settings: NeighbourSettings) -> Problem {
        let mut problem = Problem::without_neighbours(model);
        let tables = Tables {
            num_clients: problem.num_clients,
            travel: &problem.travel,
            service: &problem.service,
            early: &problem.early,
            late: &problem.late,
            timed: problem.timed,
            movable: &problem.movable,
            coordinates: problem.coordinates.as_ref(),
        };
        let lists = neighbours::granular(&tables, settings);
        let mut start = Vec::with_capacity(problem.num_clients + 2);
        let mut list = Vec::new();
        start.push(0);
        for neighbours in &lists {
            list.extend_from_slice(neighbours);
            start.push(list.len() as u32);
        }
        problem.neighbour_start = start;
        problem.neighbour_list = list;
        problem
    }

    /// The problem without its granular neighbourhoods (every client's list empty): what
    /// costing and scheduling given routes need, without the search's O(n² log n) set-up.
    pub fn without_neighbours(model: &Model) -> Problem {
        let n = model.num_clients;
        let travel = model.travel.densified();
        let mut vehicle_of = vec![FREE; n + 1];
        let mut in_prefix = vec![false; n + 1];
        let mut prefixes: Vec<Option<RouteStart>> = Vec::new();
        let depot_segment = Segment::visit(0, 0, model.early[0], model.late[0]);
        for fixed in &model.fixed {
            for &client in fixed.prefix.iter().chain(&fixed.clients) {
                vehicle_of[client as usize] = fixed.vehicle as u32;
            }
            for &client in &fixed.prefix {
                in_prefix[client as usize] = true;
            }
            if fixed.prefix.is_empty() {
                continue;
            }
            let mut start = RouteStart {
                location: 0,
                load: 0,
                distance: 0,
                segment: depot_segment,
                prefix: fixed.prefix.clone(),
            };
            for &client in &fixed.prefix {
                let c = client as usize;
                start.distance += travel.dist(start.location, client);
                start.load += model.demand[c];
                let visit = Segment::visit(client, model.service[c], model.early[c], model.late[c]);
                start.segment = start
                    .segment
                    .then(travel.time(start.location, client), visit);
                start.location = client;
            }
            if prefixes.len() <= fixed.vehicle {
                prefixes.resize(fixed.vehicle + 1, None);
            }
            prefixes[fixed.vehicle] = Some(start);
        }
        let min_slots = model
            .fixed
            .iter()
            .map(|fixed| fixed.vehicle + 1)
            .max()
            .unwrap_or(0);
        let movable: Vec<u32> = (1..=n as u32)
            .filter(|&client| !in_prefix[client as usize])
            .collect();
        let angle = model.coordinates.as_ref().map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(&x1, &y1)| pseudo_angle(x1 - x[0], y1 - y[0]))
                .collect()
        });
        let symmetric = travel.symmetric();
        Problem {
            num_clients: n,
            travel,
            demand: model.demand.clone(),
            service: model.service.clone(),
            early: model.early.clone(),
            late: model.late.clone(),
            capacity: model.capacity,
            fixed_cost: model.fixed_cost,
            max_duration: model.max_duration.unwrap_or(TIME_INFINITY),
            timed: model.timed,
            fleet: model.fleet,
            has_fixed: vehicle_of.iter().any(|&vehicle| vehicle != FREE),
            vehicle_of,
            in_prefix,
            movable,
            prefixes,
            depot_start: RouteStart {
                location: 0,
                load: 0,
                distance: 0,
                segment: depot_segment,
                prefix: Vec::new(),
            },
            depot_end: depot_segment,
            visits: (0..=n)
                .map(|c| Segment::visit(c as u32, model.service[c], model.early[c], model.late[c]))
                .collect(),
            neighbour_start: vec![0; n + 2],
            neighbour_list: Vec::new(),
            angle,
            coordinates: model.coordinates.clone(),
            symmetric,
            min_slots,
            fixed_slots: {
                let mut fixed_slots = vec![false; min_slots];
                for fixed in &model.fixed {
                    fixed_slots[fixed.vehicle] = true;
                }
                fixed_slots
            },
        }
    }

    /// The neighbours of location `client` (empty for the depot and prefix clients).
    #[inline]
    pub fn neighbours(&self, client: u32) -> &[u32] {
        let client = client as usize;
        &self.neighbour_list
            [self.neighbour_start[client] as usize..self.neighbour_start[client + 1] as usize]
    }

    /// Shuffles each neighbour list's order (not its members).
    pub fn shuffle_neighbours(&mut self, rng: &mut crate::rng::Rng) {
        for client in 0..=self.num_clients {
            let (from, to) = (
                self.neighbour_start[client] as usize,
                self.neighbour_start[client + 1] as usize,
            );
            rng.shuffle(&mut self.neighbour_list[from..to]);
        }
    }

    /// How vehicle slot `slot`'s route starts.
    #[inline]
    pub fn start(&self, slot: usize) -> &RouteStart {
        match self.prefixes.get(slot) {
            Some(Some(start)) => start,
            _ => &self.depot_start,
        }
    }

    /// Whether slot `slot` has a fixed prefix (and so is used even without other clients).
    #[inline]
    pub fn has_prefix(&self, slot: usize) -> bool {
        matches!(self.prefixes.get(slot), Some(Some(_)))
    }

    /// Whether `fixed` names slot `slot`'s vehicle.
    #[inline]
    pub fn is_fixed_slot(&self, slot: usize) -> bool {
        self.fixed_slots.get(slot).copied().unwrap_or(false)
    }

    /// Whether client `client` may ride in slot `slot`.
    #[inline]
    pub fn allowed(&self, client: u32, slot: usize) -> bool {
        let vehicle = self.vehicle_of[client as usize];
        vehicle == FREE || vehicle as usize == slot
    }

    /// One visit to `client` as a time segment.
    #[inline]
    pub fn visit(&self, client: u32) -> Segment {
        self.visits[client as usize]
    }

    /// The total demand of all clients.
    pub fn total_demand(&self) -> i64 {
        self.demand.iter().sum()
    }

    /// How many route slots a plan has: the fleet if limited (at most one per client),
    /// otherwise `wanted`, and never fewer than the fixed vehicles need.
    pub fn slots(&self, wanted: usize) -> usize {
        let slots = match self.fleet {
            Some(fleet) => fleet.min(self.num_clients.max(1)),
            None => wanted.min(self.num_clients.max(1)),
        };
        slots.max(self.min_slots).max(1)
    }
}

/// A direction as a number in `0..65536` that grows with its polar angle: the "diamond
/// angle", which needs no trigonometry and so is the same on every platform.
pub fn pseudo_angle(dx: f64, dy: f64) -> i32 {
    let sum = dx.abs() + dy.abs();
    if sum == 0.0 {
        return 0;
    }
    let quarter = if dy >= 0.0 {
        if dx >= 0.0 { dy / sum } else { 1.0 - dx / sum }
    } else if dx < 0.0 {
        2.0 - dy / sum
    } else {
        3.0 + dx / sum
    };
    ((quarter * 16384.0) as i32).clamp(0, 65535)
}
