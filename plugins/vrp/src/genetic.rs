//! Hybrid genetic search (Vidal et al. 2012; Vidal 2022, HGS-CVRP), the run's driver: a
//! first plan by savings, an initial population of educated random plans, then generations
//! of parent selection, crossover, education by local search (with a repair pass for
//! infeasible children) and survivor selection, penalties adapting as it goes, and a restart
//! that keeps the best plan when the search has stalled. Deterministic by seed: every random
//! choice comes from one generator and no decision reads the clock (only the stop does).

use std::time::{Duration, Instant};

use crate::construction::savings;
use crate::crossover::{ordered, selective_route_exchange};
use crate::local_search::LocalSearch;
use crate::model::Model;
use crate::neighbours::NeighbourSettings;
use crate::penalty::{Penalties, PenaltyManager, PenaltySettings};
use crate::plan::Plan;
use crate::population::{Population, PopulationSettings};
use crate::problem::Problem;
use crate::rng::Rng;
use crate::solution::Individual;
use crate::split::split;
use crate::stop::Stop;

/// Which recombination a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crossover {
    /// OX on giant tours, then split.
    Ordered,
    /// SREX on routes.
    RouteExchange,
}

/// Every setting of the search.
#[derive(Debug, Clone)]
pub struct Settings {
    pub neighbours: NeighbourSettings,
    pub population: PopulationSettings,
    /// How many educated random plans the population starts with.
    pub initial_population: usize,
    pub penalty: PenaltySettings,
    /// Percent of infeasible children educated again with boosted penalties.
    pub repair_percent: u32,
    pub repair_boost: f64,
    /// Generations without a new best plan before the population restarts.
    pub restart_after: u64,
    pub swap_star: bool,
    pub crossover: Crossover,
    /// The most routes SREX moves from one parent to the other.
    pub max_moved_routes: usize,
    /// Whether the initial population is made of ruined and recreated copies of the first
    /// plan rather than random plans.
    pub ruined_starts: bool,
    /// The starting price of excess load, times HGS-CVRP's.
    pub initial_load_price_factor: f64,
}

impl Settings {
    /// The settings for a model: HGS-CVRP's, with SREX and wider neighbourhoods when time
    /// windows bind. Above [`LARGE`] clients, where educating random plans and OX children
    /// would take most of a short run, the population starts from ruined and recreated
    /// copies of the first plan, and children come from SREX moving at most a few routes,
    /// so that each child's local search stays near the routes that changed.
    pub fn for_model(model: &Model) -> Settings {
        let n = model.num_clients;
        let timed = model.timed;
        let large = n > LARGE;
        Settings {
            neighbours: NeighbourSettings {
                count: if timed { 40 } else { 20 },
                wait_weight: 0.2,
                warp_weight: 1.0,
            },
            population: PopulationSettings {
                min_size: 25,
                generation: 40,
                elite: 4,
                close: 5,
            },
            initial_population: if n > 2000 {
                8
            } else if large {
                25
            } else {
                100
            },
            penalty: PenaltySettings {
                target_feasible: 0.2,
                between_updates: if large { 20 } else { 100 },
                increase: 1.2,
                decrease: 0.85,
            },
            repair_percent: if large { 100 } else { 50 },
            repair_boost: 10.0,
            restart_after: 20_000,
            swap_star: true,
            crossover: if timed || large {
                Crossover::RouteExchange
            } else {
                Crossover::Ordered
            },
            max_moved_routes: if large { 5 } else { usize::MAX },
            ruined_starts: large,
            initial_load_price_factor: if large { 10.0 } else { 1.0 },
        }
    }
}

/// How many clients a ruined start removes besides the routes it empties.
const RUINED_STRAYS: usize = 10;

/// Above this many clients the search runs in its large-instance mode (see
/// [`Settings::for_model`]).
pub const LARGE: usize = 200;

/// What a run found.
pub struct Outcome {
    /// The best feasible plan.
    pub best: Option<Individual>,
    /// The population at the end (for a partial answer when nothing feasible was found).
    pub population: Vec<Individual>,
    /// Generations run.
    pub iterations: u64,
    /// From the solver's start to the best plan.
    pub time_to_best: Duration,
    pub restarts: u32,
}

/// What the driver tells its caller as it runs.
pub trait Observer {
    /// A new best feasible plan.
    fn improved(&mut self, best: &Individual, objective: i64, elapsed: Duration);
    /// Called every generation, for progress reports (throttled by the observer).
    fn tick(&mut self, _iterations: u64, _elapsed: Duration) {}
    /// A line for the run's log.
    fn log(&mut self, _line: &str) {}
}

/// The search's state for one run.
struct Search<'p, 'o> {
    p: &'p Problem,
    settings: Settings,
    rng: Rng,
    ls: LocalSearch<'p>,
    penalties: PenaltyManager,
    population: Population,
    best: Option<Individual>,
    improved: bool,
    slots: usize,
    started: Instant,
    time_to_best: Duration,
    observer: &'o mut dyn Observer,
}

/// Solves `model` until `stop` or `max_iterations` generations.
pub fn solve(
    p: &Problem,
    model: &Model,
    settings: Settings,
    seed: u64,
    max_iterations: Option<u64>,
    stop: &Stop,
    observer: &mut dyn Observer,
) -> Outcome {
    let started = Instant::now();
    let mut initial = initial_penalties(p);
    // Few educations in a short run on a large instance leave little room to adapt from a
    // price that makes overloading pay: start high, and let it fall.
    initial.load *= settings.initial_load_price_factor;
    let mut search = Search {
        p,
        rng: Rng::new(seed),
        ls: LocalSearch::new(p, settings.swap_star),
        penalties: PenaltyManager::new(initial, settings.penalty),
        population: Population::new(settings.population, p.movable.clone()),
        settings,
        best: None,
        improved: false,
        slots: 0,
        started,
        time_to_best: Duration::ZERO,
        observer,
    };
    let mut iterations = 0u64;
    let mut restarts = 0u32;
    if p.movable.is_empty() {
        let routes = Plan::normalise(p, Vec::new(), p.slots(0), initial);
        search.record(&Individual::new(p, routes));
    } else {
        search.start(model, stop);
        let mut without_improvement = 0u64;
        while !stop.check_now() && max_iterations.is_none_or(|limit| iterations < limit) {
            iterations += 1;
            search.improved = false;
            search.generation(stop);
            if search.improved {
                without_improvement = 0;
            } else {
                without_improvement += 1;
            }
            if without_improvement >= search.settings.restart_after {
                restarts += 1;
                without_improvement = 0;
                search.population.clear();
                search.observer.log(&format!(
                    "restart {restarts} after {iterations} generations"
                ));
                search.initial_population(stop);
            }
            let elapsed = search.started.elapsed();
            search.observer.tick(iterations, elapsed);
        }
    }
    let population: Vec<Individual> = if search.best.is_none() {
        search.population.individuals().cloned().collect()
    } else {
        Vec::new()
    };
    Outcome {
        best: search.best,
        population,
        iterations,
        time_to_best: search.time_to_best,
        restarts,
    }
}

/// HGS-CVRP's starting prices: a unit of excess load at the longest trip per largest demand,
/// a unit of time warp at one unit of distance.
fn initial_penalties(p: &Problem) -> Penalties {
    let longest = (1..=p.num_clients as u32)
        .map(|client| p.travel.dist(0, client).max(p.travel.dist(client, 0)))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let largest = p.demand.iter().copied().max().unwrap_or(1).max(1) as f64;
    Penalties {
        load: (longest / largest).clamp(0.1, 1000.0),
        time: 1.0,
    }
}

impl Search<'_, '_> {
    /// Keeps `individual` if it is the best feasible plan so far.
    fn record(&mut self, individual: &Individual) {
        if !individual.cost.feasible() {
            return;
        }
        let objective = individual.cost.objective();
        if self
            .best
            .as_ref()
            .is_some_and(|best| best.cost.objective() <= objective)
        {
            return;
        }
        self.best = Some(individual.clone());
        self.improved = true;
        self.time_to_best = self.started.elapsed();
        self.observer
            .improved(individual, objective, self.time_to_best);
    }

    /// How many slots plans get: the fleet when limited; otherwise room for the most routes
    /// a plan has used so far and a few more.
    fn slots_for(&self, routes_used: usize) -> usize {
        let p = self.p;
        match p.fleet {
            Some(_) => p.slots(0),
            None => {
                let by_load = if p.capacity > 0 {
                    (p.total_demand() as f64 * 1.3 / p.capacity as f64).ceil() as usize + 3
                } else {
                    p.num_clients
                };
                p.slots(by_load.max(routes_used + routes_used / 10 + 2))
            }
        }
    }

    /// The construction, the warm start and the initial population.
    fn start(&mut self, model: &Model, stop: &Stop) {
        let p = self.p;
        let penalties = self.penalties.penalties;
        let routes = savings(p);
        self.slots = self.slots_for(routes.len());
        let routes = Plan::normalise(p, routes, self.slots, penalties);
        let constructed = Individual::new(p, routes.clone());
        self.observer.log(&format!(
            "savings: {} routes, distance {}, {} after {:.3} s",
            constructed.cost.routes_used,
            constructed.cost.distance,
            if constructed.cost.feasible() {
                "feasible"
            } else {
                "infeasible"
            },
            self.started.elapsed().as_secs_f64()
        ));
        self.record(&constructed);
        self.educate(routes, None, stop);
        if let Some(initial) = &model.initial_routes {
            if model.ignored_initial_entries > 0 {
                self.observer.log(&format!(
                    "warm start: {} unknown or repeated client entries ignored",
                    model.ignored_initial_entries
                ));
            }
            let slots = self.slots.max(initial.len().min(p.slots(initial.len())));
            self.slots = self.slots.max(slots);
            let routes = Plan::normalise(p, initial.clone(), self.slots, penalties);
            let warm = Individual::new(p, routes.clone());
            self.observer.log(&format!(
                "warm start: {} routes, distance {}, {}",
                warm.cost.routes_used,
                warm.cost.distance,
                if warm.cost.feasible() {
                    "feasible"
                } else {
                    "infeasible"
                }
            ));
            self.record(&warm);
            self.educate(routes, None, stop);
        }
        self.initial_population(stop);
    }

    /// Educated random plans until the population has its initial size; on large
    /// instances, where educating a random plan takes long, ruined and recreated copies of
    /// the best plan instead.
    fn initial_population(&mut self, stop: &Stop) {
        let target = self.settings.initial_population;
        let mut made = 0;
        while made < target && !stop.check_now() {
            made += 1;
            let penalties = self.penalties.penalties;
            if self.settings.ruined_starts
                && let Some(base) = self
                    .population
                    .best_feasible()
                    .cloned()
                    .or_else(|| self.best.clone())
            {
                let (routes, dirty) = self.ruined(&base);
                self.educate(routes, Some(dirty), stop);
                continue;
            }
            let mut tour = self.p.movable.clone();
            self.rng.shuffle(&mut tour);
            let routes = split(self.p, &tour, &penalties, self.slots);
            let routes = Plan::normalise(self.p, routes, self.slots, penalties);
            self.educate(routes, None, stop);
        }
        self.observer.log(&format!(
            "initial population of {made} after {:.3} s, {} moves applied",
            self.started.elapsed().as_secs_f64(),
            self.ls.applied
        ));
    }

    /// `base` with the routes around a random client emptied and their clients (with a
    /// few random others) reinserted at their cheapest places; and which slots changed.
    fn ruined(&mut self, base: &Individual) -> (Vec<Vec<u32>>, Vec<bool>) {
        let p = self.p;
        let mut routes = base.routes.clone();
        routes.resize(self.slots.max(routes.len()), Vec::new());
        let mut slot_of = vec![usize::MAX; p.num_clients + 1];
        for (slot, route) in routes.iter().enumerate() {
            for &client in route {
                slot_of[client as usize] = slot;
            }
        }
        let centre = p.movable[self.rng.index(p.movable.len())];
        let wanted = 1 + self.rng.index(self.settings.max_moved_routes.clamp(1, 8));
        let mut emptied: Vec<usize> = vec![slot_of[centre as usize]];
        for &neighbour in p.neighbours(centre) {
            if emptied.len() >= wanted {
                break;
            }
            let slot = slot_of[neighbour as usize];
            if !emptied.contains(&slot) {
                emptied.push(slot);
            }
        }
        let mut removed: Vec<u32> = Vec::new();
        let mut dirty = vec![false; routes.len()];
        for &slot in &emptied {
            removed.append(&mut routes[slot]);
            dirty[slot] = true;
        }
        // A few clients elsewhere too, wherever they are.
        for _ in 0..RUINED_STRAYS {
            let client = p.movable[self.rng.index(p.movable.len())];
            let slot = slot_of[client as usize];
            if let Some(at) = routes[slot].iter().position(|&c| c == client) {
                routes[slot].remove(at);
                removed.push(client);
                dirty[slot] = true;
            }
        }
        self.rng.shuffle(&mut removed);
        let penalties = self.penalties.penalties;
        let routes = if p.has_fixed {
            Plan::normalise(p, routes, self.slots, penalties)
        } else {
            let mut plan = Plan::new(p, routes, penalties);
            plan.insert_all(&removed);
            plan.into_routes()
        };
        let dirty = routes
            .iter()
            .enumerate()
            .map(|(slot, route)| {
                dirty.get(slot).copied().unwrap_or(true)
                    || base.routes.get(slot).is_none_or(|old| old != route)
            })
            .collect();
        (routes, dirty)
    }

    /// One generation: two parents, a child, its education.
    fn generation(&mut self, stop: &Stop) {
        if self.population.is_empty() {
            self.initial_population(stop);
            return;
        }
        let first = self.population.tournament(&mut self.rng).clone();
        let second = self.population.tournament(&mut self.rng).clone();
        let penalties = self.penalties.penalties;
        let (routes, dirty) = match self.settings.crossover {
            Crossover::Ordered => (
                ordered(
                    self.p,
                    &first,
                    &second,
                    &mut self.rng,
                    &penalties,
                    self.slots,
                ),
                None,
            ),
            Crossover::RouteExchange => {
                let (routes, dirty) = selective_route_exchange(
                    self.p,
                    &first,
                    &second,
                    &mut self.rng,
                    &penalties,
                    self.slots,
                    self.settings.max_moved_routes,
                );
                (routes, Some(dirty))
            }
        };
        self.educate(routes, dirty, stop);
    }

    /// Local search on a plan, then into the population; an infeasible result is, at the
    /// repair rate, searched again with boosted penalties and added too if that made it
    /// feasible.
    fn educate(&mut self, routes: Vec<Vec<u32>>, dirty: Option<Vec<bool>>, stop: &Stop) {
        let penalties = self.penalties.penalties;
        self.ls.load(&routes);
        self.ls
            .run(penalties, dirty.as_deref(), &mut self.rng, stop);
        let individual = Individual::new(self.p, self.ls.routes());
        let feasible = individual.cost.feasible();
        if self.penalties.register(
            individual.cost.excess_load == 0,
            individual.cost.time_excess == 0,
        ) {
            self.population.reprice(&self.penalties.penalties);
        }
        self.grow_slots(&individual);
        self.record(&individual);
        self.population.add(individual, &self.penalties.penalties);
        if !feasible && !stop.stopped() && self.rng.percent(self.settings.repair_percent) {
            let boosted = penalties.boosted(self.settings.repair_boost);
            self.ls.run(boosted, None, &mut self.rng, stop);
            let repaired = Individual::new(self.p, self.ls.routes());
            if repaired.cost.feasible() {
                self.grow_slots(&repaired);
                self.record(&repaired);
                self.population.add(repaired, &self.penalties.penalties);
            }
        }
    }

    /// With an unlimited fleet, more slots once a plan uses nearly all.
    fn grow_slots(&mut self, individual: &Individual) {
        if self.p.fleet.is_none() && individual.cost.routes_used + 1 >= self.slots {
            self.slots = self.slots_for(individual.cost.routes_used).max(self.slots);
        }
    }
}
