//! Runs the solver natively on qbsolv `.qubo` files, maximising (as Beasley's OR-Library
//! instances are posed), and prints each seed's objective, time to best and iterations per
//! second:
//!
//! ```sh
//! cargo run --release -p caseload-qubo --example qbsolv_files -- SECONDS SEEDS FILE...
//! ```

use std::time::{Duration, Instant};

use caseload_quadratic::{Limits, tabu_search};
use caseload_qubo::input::{QuboInput, model};
use caseload_qubo::model::{Bqm, Sense, Vartype};
use caseload_qubo::qbsolv;
use caseload_qubo::solve::{minimised, tabu_parameters};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [seconds, seeds, files @ ..] = args.as_slice() else {
        eprintln!("usage: qbsolv_files SECONDS SEEDS FILE...");
        std::process::exit(2);
    };
    let seconds: f64 = seconds.parse().expect("seconds");
    let seeds: u64 = seeds.parse().expect("seeds");
    for file in files {
        let bytes = std::fs::read(file).expect("readable");
        let mut terms = qbsolv::parse(&bytes).expect("a qbsolv file");
        terms.sense = Sense::Maximize;
        let (bqm, _) = model(&QuboInput::Terms(terms)).expect("valid");
        let qubo = minimised(&bqm);
        let mut line = format!("{:<14}", file.rsplit('/').next().unwrap_or(file));
        for seed in 1..=seeds {
            let limits = Limits {
                deadline: Instant::now() + Duration::from_secs_f64(seconds),
                max_iterations: None,
                seed,
            };
            let found = tabu_search(&qubo, &limits, &tabu_parameters(), &mut |_| false);
            let sample: Vec<i8> = found.x.iter().map(|&value| i8::from(value)).collect();
            let sample = Bqm::convert_sample(&sample, Vartype::Binary, bqm.vartype);
            line.push_str(&format!(
                " {:>8} ({:.2} s, {:.0}k it/s)",
                bqm.energy(&sample),
                found.time_to_best.as_secs_f64(),
                found.iterations as f64 / seconds / 1e3
            ));
        }
        println!("{line}");
    }
}
