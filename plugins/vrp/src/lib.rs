//! caseload-vrp: vehicle routing as a caseload plugin.
//!
//! Input is one depot, clients with demands, service times and time windows, and a fleet of
//! identical vehicles (`schemas/vrp/input.schema.json`), travel measured from coordinates
//! or given as matrices, inline or in a dataset file: VRPLIB `.vrp` files are read by
//! [`vrplib`], Solomon's by [`solomon`]. Output is the cheapest plan found, its routes with
//! their schedules (`schemas/vrp/output.schema.json`).
//!
//! [`model::build`] checks the input and turns it into integers; [`genetic::solve`] runs
//! hybrid genetic search (HGS, Vidal 2022, with PyVRP's choices for time windows) until the
//! time limit; [`output`] recomputes the answer from the plan's routes. The design note is
//! `plugins/vrp/README.md`.
//!
//! Built for `wasm32-wasip2` by the host's build script; `cargo test -p caseload-vrp` runs
//! the tests natively, and `cargo run --release -p caseload-vrp --example solve -- FILE`
//! solves a dataset file from the command line.

pub mod construction;
pub mod crossover;
mod evaluate;
pub mod genetic;
pub mod input;
mod linked_routes;
pub mod local_search;
pub mod model;
pub mod neighbours;
pub mod output;
pub mod penalty;
pub mod plan;
pub mod population;
pub mod problem;
pub mod rng;
pub mod segment;
pub mod solomon;
pub mod solution;
pub mod split;
pub mod stop;
mod swap_star;
pub mod travel;
mod two_opt;
pub mod vrplib;

#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use caseload_sdk::{
    Describe, EvaluateError, Evaluation, LogLevel, RunContext, RunError, SolverReport, UseCase,
    Violation,
};

use crate::genetic::{Observer, Settings};
use crate::input::VrpInput;
use crate::model::Model;
use crate::output::VrpOutput;
use crate::problem::Problem;
use crate::solution::Individual;
use crate::stop::Stop;

/// The use case.
pub struct Vrp;

impl UseCase for Vrp {
    type Input = VrpInput;
    type Output = VrpOutput;

    fn describe() -> Describe {
        Describe {
            name: "vrp",
            version: env!("CARGO_PKG_VERSION"),
            aliases: &["cvrp", "vrptw", "urn:caseload:usecase:vrp"],
            description: "Vehicle routing from one depot with a fleet of identical vehicles: \
                          capacities, time windows, service times, a route duration limit \
                          and fixed vehicle costs; hybrid genetic search.",
            input_schema: include_str!("../../../schemas/vrp/input.schema.json"),
            output_schema: include_str!("../../../schemas/vrp/output.schema.json"),
            media_types: &[
                "application/json",
                vrplib::MEDIA_TYPE,
                solomon::MEDIA_TYPE,
                "text/plain",
            ],
        }
    }

    fn decode(media_type: &str, data: &[u8]) -> Result<VrpInput, Vec<Violation>> {
        match media_type {
            vrplib::MEDIA_TYPE => vrplib::parse(data),
            solomon::MEDIA_TYPE => solomon::parse(data),
            "text/plain" if solomon::sniff(data) => solomon::parse(data),
            "text/plain" => vrplib::parse(data),
            other => Err(vec![Violation::new(
                "",
                format!(
                    "vrp reads application/json, {} (VRPLIB), {} (Solomon) and text/plain \
                     (either, told apart by content) files, not {other}",
                    vrplib::MEDIA_TYPE,
                    solomon::MEDIA_TYPE
                ),
            )]),
        }
    }

    fn validate(input: &VrpInput) -> Result<(), Vec<Violation>> {
        model::build(input).map(|_| ())
    }

    /// `run` builds the model `validate` would, and answers its violations the same way.
    const RUN_CHECKS_INPUT: bool = true;

    /// The cost of the solution's routes, and every rule they break (`evaluate.rs`).
    fn evaluate(input: &VrpInput, solution: &str) -> Result<Evaluation, EvaluateError> {
        evaluate::evaluate(input, solution)
    }

    fn run(input: VrpInput, context: &RunContext) -> Result<VrpOutput, RunError> {
        let model = model::build(&input).map_err(RunError::InvalidInput)?;
        drop(input);
        Ok(solve(&model, context))
    }
}

/// How long before the deadline the search stops, to leave time for the answer.
fn answer_margin(time_limit: Duration) -> Duration {
    (time_limit / 50).min(Duration::from_millis(100))
}

/// Solves a checked model within the context's limits.
pub fn solve(model: &Model, context: &RunContext) -> VrpOutput {
    solve_with(model, Settings::for_model(model), context)
}

/// Solves a checked model with the given settings within the context's limits.
pub fn solve_with(model: &Model, settings: Settings, context: &RunContext) -> VrpOutput {
    let started = Instant::now();
    context.log(
        LogLevel::Info,
        &format!(
            "{}{} clients, {} vehicles of capacity {}{}, time limit {:?}, seed {}",
            model
                .name
                .as_ref()
                .map(|name| format!("{name}: "))
                .unwrap_or_default(),
            model.num_clients,
            model
                .fleet
                .map_or("unlimited".to_owned(), |fleet| fleet.to_string()),
            model.load_to_input(model.capacity),
            if model.timed { ", timed" } else { "" },
            context.time_limit(),
            context.seed()
        ),
    );
    let problem = Problem::new(model, settings.neighbours);
    context.log(
        LogLevel::Info,
        &format!(
            "granular neighbourhoods ready after {:.3} s",
            started.elapsed().as_secs_f64()
        ),
    );
    let cancelled = || context.cancelled();
    let deadline = context.deadline() - answer_margin(context.time_limit());
    let stop = Stop::new(deadline, &cancelled);
    let mut reporter = Reporter {
        context,
        model,
        problem: &problem,
        last_logged: None,
        last_progress: None,
        best: None,
    };
    let outcome = genetic::solve(
        &problem,
        model,
        settings,
        context.seed(),
        context.max_iterations(),
        &stop,
        &mut reporter,
    );
    let report = SolverReport::new("hgs", outcome.iterations, outcome.time_to_best, context);
    let answer = match &outcome.best {
        Some(best) => {
            let routes = full_routes(&problem, best);
            output::output(model, &problem, &routes, Vec::new(), report)
        }
        None => {
            // The cheapest partial answer among the best few plans of the population.
            let mut chosen: Option<VrpOutput> = None;
            for individual in outcome.population.iter().take(10) {
                let (routes, unserved) =
                    output::partial(model, &problem, &full_routes(&problem, individual));
                let candidate = output::output(model, &problem, &routes, unserved, report.clone());
                if chosen
                    .as_ref()
                    .is_none_or(|best| candidate.cost < best.cost)
                {
                    chosen = Some(candidate);
                }
            }
            chosen.unwrap_or_else(|| {
                // Stopped before any plan was educated: every client unserved.
                let unserved = (1..=model.num_clients)
                    .map(|client| output::Unserved {
                        client: model.ids[client].clone(),
                        violation: "vehicles",
                        message: "the run stopped before any plan served it".to_owned(),
                    })
                    .collect();
                output::output(model, &problem, &[], unserved, report)
            })
        }
    };
    context.log(
        LogLevel::Info,
        &format!(
            "hgs: cost {} with {} vehicles{} after {} generations, {} restarts",
            answer.cost,
            answer.vehicles_used,
            if answer.feasible {
                String::new()
            } else {
                format!(
                    ", {} clients unserved (no feasible plan found)",
                    answer.unserved.len()
                )
            },
            outcome.iterations,
            outcome.restarts
        ),
    );
    answer
}

/// A plan's routes by slot with their prefixes.
fn full_routes(problem: &Problem, individual: &Individual) -> Vec<Vec<u32>> {
    individual
        .routes
        .iter()
        .enumerate()
        .map(|(slot, clients)| output::full_route(problem, slot, clients))
        .collect()
}

/// Tells the host about the search: incumbents, progress and a few log lines.
struct Reporter<'a> {
    context: &'a RunContext,
    model: &'a Model,
    problem: &'a Problem,
    last_logged: Option<Instant>,
    last_progress: Option<Instant>,
    best: Option<i64>,
}

/// Progress is reported at most this often (the host stores it at most every 500 ms).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// New bests are logged at most this often.
const BEST_LOG_INTERVAL: Duration = Duration::from_secs(1);

impl Observer for Reporter<'_> {
    fn improved(&mut self, best: &Individual, objective: i64, elapsed: Duration) {
        let cost = self.model.units_to_input(objective);
        self.best = Some(objective);
        self.context.incumbent(cost, || {
            output::incumbent(self.model, self.problem, &best.routes, objective)
        });
        let now = Instant::now();
        if self
            .last_logged
            .is_none_or(|at| now - at >= BEST_LOG_INTERVAL)
        {
            self.last_logged = Some(now);
            self.context.log(
                LogLevel::Info,
                &format!(
                    "best {cost} with {} vehicles at {:.2} s",
                    best.cost.routes_used,
                    elapsed.as_secs_f64()
                ),
            );
        }
    }

    fn tick(&mut self, iterations: u64, elapsed: Duration) {
        let now = Instant::now();
        if self
            .last_progress
            .is_some_and(|at| now - at < PROGRESS_INTERVAL)
        {
            return;
        }
        self.last_progress = Some(now);
        let fraction = match self.context.max_iterations() {
            Some(limit) if limit > 0 => iterations as f64 / limit as f64,
            _ => elapsed.as_secs_f64() / self.context.time_limit().as_secs_f64().max(1e-9),
        };
        let message = match self.best {
            Some(best) => format!("best cost {}", self.model.units_to_input(best)),
            None => "no feasible plan yet".to_owned(),
        };
        self.context.progress(fraction, &message);
    }

    fn log(&mut self, line: &str) {
        self.context.log(LogLevel::Info, line);
    }
}

caseload_sdk::export_use_case!(Vrp);
