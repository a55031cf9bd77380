//! Solves a dataset file natively and prints one result line, for benchmarks:
//!
//! ```sh
//! cargo run --release -p caseload-vrp --example solve -- FILE --seconds S --seed N \
//!     [--iterations I] [--rounding round|one_decimal|exact] [--verbose]
//! ```
//!
//! FILE is a VRPLIB `.vrp` file, a Solomon text file (told apart by content) or the
//! use case's JSON input. The line reads `RESULT name=... cost=... feasible=... vehicles=...
//! time_to_best=... iterations=...`; `--verbose` also prints each new best as found.

use std::time::{Duration, Instant};

use caseload_sdk::{RunContext, UseCase};
use caseload_vrp::Vrp;
use caseload_vrp::genetic::{self, Crossover, Observer, Settings};
use caseload_vrp::input::{Rounding, VrpInput};
use caseload_vrp::problem::Problem;
use caseload_vrp::solution::Individual;
use caseload_vrp::stop::Stop;

struct Printer {
    verbose: bool,
    scale: f64,
}

impl Observer for Printer {
    fn improved(&mut self, best: &Individual, objective: i64, elapsed: Duration) {
        if self.verbose {
            println!(
                "{:8.3} s  best {} ({} routes)",
                elapsed.as_secs_f64(),
                objective as f64 / self.scale,
                best.cost.routes_used
            );
        }
    }

    fn log(&mut self, line: &str) {
        if self.verbose {
            println!("           {line}");
        }
    }
}

/// The settings with overrides from the environment, for tuning runs: `VRP_NEIGHBOURS`,
/// `VRP_MIN_POPULATION`, `VRP_GENERATION`, `VRP_INITIAL`, `VRP_TARGET_FEASIBLE` (percent),
/// `VRP_REPAIR` (percent), `VRP_MOVED`, `VRP_SWAP_STAR` (0 or 1), `VRP_SREX` (0 or 1),
/// `VRP_RUINED` (0 or 1).
fn tuned(mut settings: Settings) -> Settings {
    let read = |name: &str| -> Option<usize> { std::env::var(name).ok()?.parse().ok() };
    if let Some(value) = read("VRP_NEIGHBOURS") {
        settings.neighbours.count = value;
    }
    if let Some(value) = read("VRP_MIN_POPULATION") {
        settings.population.min_size = value;
    }
    if let Some(value) = read("VRP_GENERATION") {
        settings.population.generation = value;
    }
    if let Some(value) = read("VRP_INITIAL") {
        settings.initial_population = value;
    }
    if let Some(value) = read("VRP_TARGET_FEASIBLE") {
        settings.penalty.target_feasible = value as f64 / 100.0;
    }
    if let Some(value) = read("VRP_REPAIR") {
        settings.repair_percent = value as u32;
    }
    if let Some(value) = read("VRP_MOVED") {
        settings.max_moved_routes = value;
    }
    if let Some(value) = read("VRP_SWAP_STAR") {
        settings.swap_star = value == 1;
    }
    if let Some(value) = read("VRP_SREX") {
        settings.crossover = if value == 1 {
            Crossover::RouteExchange
        } else {
            Crossover::Ordered
        };
    }
    if let Some(value) = read("VRP_LOAD_PRICE") {
        settings.initial_load_price_factor = value as f64;
    }
    if let Some(value) = read("VRP_RUINED") {
        settings.ruined_starts = value == 1;
    }
    settings
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut file = None;
    let mut seconds = 10.0;
    let mut seed = 1u64;
    let mut iterations = None;
    let mut rounding = None;
    let mut verbose = false;
    let mut index = 0;
    let value = |index: usize| -> &str {
        args.get(index + 1).map(String::as_str).unwrap_or_else(|| {
            eprintln!("{} needs a value", args[index]);
            std::process::exit(2)
        })
    };
    while index < args.len() {
        match args[index].as_str() {
            "--seconds" => seconds = value(index).parse().expect("seconds"),
            "--seed" => seed = value(index).parse().expect("seed"),
            "--iterations" => iterations = Some(value(index).parse().expect("iterations")),
            "--rounding" => {
                rounding = Some(match value(index) {
                    "round" => Rounding::Round,
                    "one_decimal" => Rounding::OneDecimal,
                    "exact" => Rounding::Exact,
                    other => panic!("unknown rounding {other}"),
                })
            }
            "--verbose" => {
                verbose = true;
                index += 1;
                continue;
            }
            path => {
                file = Some(path.to_owned());
                index += 1;
                continue;
            }
        }
        index += 2;
    }
    let Some(file) = file else {
        eprintln!(
            "usage: solve FILE --seconds S --seed N [--iterations I] [--rounding R] [--verbose]"
        );
        std::process::exit(2);
    };
    let bytes = std::fs::read(&file).expect("a readable file");
    let mut input: VrpInput = if file.ends_with(".json") {
        serde_json::from_slice(&bytes).expect("the use case's JSON input")
    } else if file.ends_with(".vrp") {
        Vrp::decode("text/x-vrplib", &bytes).expect("a VRPLIB file")
    } else {
        Vrp::decode("text/plain", &bytes).expect("a VRPLIB or Solomon file")
    };
    if rounding.is_some() {
        input.rounding = rounding;
    }
    let started = Instant::now();
    let context = RunContext::new(Duration::from_secs_f64(seconds), seed, iterations);
    let model = caseload_vrp::model::build(&input).expect("a valid instance");
    let settings = tuned(Settings::for_model(&model));
    let problem = Problem::new(&model, settings.neighbours);
    let stop = Stop::new(context.deadline(), &|| false);
    let mut printer = Printer {
        verbose,
        scale: model.scale as f64,
    };
    let outcome = genetic::solve(
        &problem,
        &model,
        settings,
        seed,
        iterations,
        &stop,
        &mut printer,
    );
    let name = model.name.clone().unwrap_or_else(|| file.clone());
    match outcome.best {
        Some(best) => {
            let cost = best.cost.objective() as f64 / model.scale as f64;
            println!(
                "RESULT name={name} cost={cost} feasible=true vehicles={} time_to_best={:.3} iterations={} elapsed={:.3}",
                best.cost.routes_used,
                outcome.time_to_best.as_secs_f64(),
                outcome.iterations,
                started.elapsed().as_secs_f64()
            );
        }
        None => println!(
            "RESULT name={name} cost=inf feasible=false vehicles=0 time_to_best=0 iterations={} elapsed={:.3}",
            outcome.iterations,
            started.elapsed().as_secs_f64()
        ),
    }
}
