//! The QUBO benchmark: the solver on qbsolv `.qubo` files, through the real sandbox (the
//! component the server embeds, under the limits a job gets) or natively, against best-known
//! values.
//!
//! Per instance it prints the objective of each seed, the median gap to the best-known value,
//! the median time to the best sample and the guest's peak memory; the summary counts, per
//! size, the instances whose median reaches the best-known value, and gives the median over
//! those instances of the time to reach it (a seed that did not reach it counts as never). Every objective is recomputed from the returned sample over the file's
//! terms, independently of the solver.
//!
//! ```sh
//! cargo bench -p caseload-host --bench qubo -- \
//!     --best-known qubo/best_known.csv --seconds 10 --seeds 3 --parallel 2 qubo/bqp*.qubo
//! ```
//!
//! Beasley's OR-Library instances are maximisation problems, so `--sense` is `maximize`
//! unless told otherwise; each file is launched as a dataset launch carrying the sense would
//! be. Relative paths are read from the repository's root, where the command is typed.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use caseload::options::JobOptions;
use caseload::plugins::QUBO_WASM;
use caseload_qubo::Qubo;
use caseload_qubo::input::QuboInput;
use caseload_qubo::qbsolv::QUBO_MEDIA_TYPE;
use clap::Parser;
use serde_json::Value;

use common::{
    Sandbox, decode_file, for_each_instance, from_root, instance_name, median, number,
    read_best_known, run_native, timed,
};

#[derive(Debug, Parser)]
#[command(about = "Runs the QUBO use case on qbsolv files in the sandbox or natively")]
struct Args {
    /// Time limit of each run, in seconds (the job's `time_limit_s`).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Runs per instance, with seeds 1, 2, ...
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Runs at once, each on a thread of its own (the solver is single-threaded).
    #[arg(long, default_value_t = 1)]
    parallel: usize,
    /// `maximize` or `minimize`: the sense each file is solved in.
    #[arg(long, default_value = "maximize")]
    sense: String,
    /// CSV with columns `instance` and `best_known` (or `optimum`).
    #[arg(long)]
    best_known: Option<PathBuf>,
    /// Run natively instead of in the sandbox, for tuning.
    #[arg(long)]
    native: bool,
    /// Instance files in qbsolv `.qubo` format.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Instance {
    name: String,
    json: String,
    num_variables: usize,
    linear: Vec<(usize, f64)>,
    quadratic: Vec<(usize, usize, f64)>,
    maximize: bool,
}

/// What one run returned, checked against the instance.
#[derive(Debug, Clone)]
struct Outcome {
    /// The objective, recomputed from the sample.
    objective: f64,
    time_to_best: f64,
    memory_bytes: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let maximize = match args.sense.as_str() {
        "maximize" => true,
        "minimize" => false,
        other => bail!("--sense is maximize or minimize, not {other}"),
    };
    let best_known = match &args.best_known {
        Some(path) => read_best_known(path)?,
        None => HashMap::new(),
    };
    let sandbox = Sandbox::as_server(QUBO_WASM.as_slice(), args.seconds)?;
    let instances = args
        .files
        .iter()
        .map(|path| read_instance(path, &args.sense, maximize))
        .collect::<anyhow::Result<Vec<_>>>()?;

    println!(
        "qubo: {} runs of {} s per instance, {} ({}, {} at a time), objectives recomputed from the samples",
        args.seeds,
        args.seconds,
        args.sense,
        if args.native {
            "natively"
        } else if args.seconds >= 1.0 {
            "in sandbox processes, under a job's limits, as the server runs jobs of 1 s or more"
        } else {
            "in the sandbox, under a job's limits"
        },
        args.parallel.max(1),
    );
    println!();
    println!(
        "{:<14} {:>6} {:>10} {:<30} {:>8} {:>10} {:>9}",
        "instance", "vars", "best", "objectives", "med gap", "to best", "memory"
    );
    // Per size (number of variables): instances compared, instances whose median reached the
    // best-known value, and each instance's median time to it.
    let mut by_size: BTreeMap<usize, (usize, usize, Vec<f64>)> = BTreeMap::new();
    let mut missed = Vec::new();
    let run = |instance: &Instance, seed: u64| {
        let options = timed(args.seconds, seed);
        if args.native {
            run_natively(instance, &options)
        } else {
            let run = sandbox.run(&instance.name, &instance.json, &options)?;
            checked_outcome(instance, &run.output, run.peak_memory_bytes)
        }
    };
    for_each_instance(
        &instances,
        args.seeds,
        args.parallel,
        run,
        |instance, outcomes| {
            let objectives: Vec<f64> = outcomes.iter().map(|outcome| outcome.objective).collect();
            let middle = median(&objectives);
            let best = best_known.get(&instance.name).copied();
            let gap = best.map(|best| {
                let shortfall = if instance.maximize {
                    best - middle
                } else {
                    middle - best
                };
                100.0 * shortfall / best.abs().max(1e-12)
            });
            if let Some(best) = best {
                let (compared, reached, times_to_best_known) =
                    by_size.entry(instance.num_variables).or_default();
                *compared += 1;
                if gap.is_some_and(|gap| gap <= 0.0) {
                    *reached += 1;
                } else {
                    missed.push(instance.name.clone());
                }
                // The time to the best-known value, over the seeds that reached it; a seed that
                // did not counts as never.
                let to_best_known: Vec<f64> = outcomes
                    .iter()
                    .map(|outcome| {
                        let there = if instance.maximize {
                            outcome.objective >= best
                        } else {
                            outcome.objective <= best
                        };
                        if there {
                            outcome.time_to_best
                        } else {
                            f64::INFINITY
                        }
                    })
                    .collect();
                times_to_best_known.push(median(&to_best_known));
            }
            let to_best = median(
                &outcomes
                    .iter()
                    .map(|outcome| outcome.time_to_best)
                    .collect::<Vec<_>>(),
            );
            let memory = outcomes
                .iter()
                .map(|outcome| outcome.memory_bytes)
                .max()
                .unwrap_or(0);
            println!(
                "{:<14} {:>6} {:>10} {:<30} {:>8} {:>8.2} s {:>5.1} MiB",
                instance.name,
                instance.num_variables,
                best.map_or("-".to_owned(), |best| best.to_string()),
                objectives
                    .iter()
                    .map(|objective| objective.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                gap.map_or("-".to_owned(), |gap| format!("{gap:.3} %")),
                to_best,
                memory as f64 / f64::from(1 << 20),
            );
        },
    )?;

    println!();
    for (size, (compared, reached, times_to_best_known)) in &by_size {
        println!(
            "{size} variables, {compared} instances: the median reaches the best-known value on {reached}; median time to it {:.2} s",
            median(times_to_best_known)
        );
    }
    if !missed.is_empty() {
        println!("short of it: {}", missed.join(", "));
    }
    Ok(())
}

fn read_instance(path: &Path, sense: &str, maximize: bool) -> anyhow::Result<Instance> {
    let path = &from_root(path);
    let input = decode_file::<Qubo>(path, QUBO_MEDIA_TYPE)?;
    let QuboInput::Terms(terms) = &input else {
        bail!("{}: a qbsolv file reads as terms", path.display());
    };
    let index = |i: u64| usize::try_from(i).unwrap_or(usize::MAX);
    let num_variables = index(terms.num_variables);
    let linear = terms.linear.iter().map(|&(i, h)| (index(i), h)).collect();
    let quadratic = terms
        .quadratic
        .iter()
        .map(|&(i, j, weight)| (index(i), index(j), weight))
        .collect();
    // As a dataset launch with the sense beside it: the host merges it into the input.
    let mut json = serde_json::to_value(&input)?;
    json["sense"] = Value::from(sense);
    Ok(Instance {
        name: instance_name(path),
        json: json.to_string(),
        num_variables,
        linear,
        quadratic,
        maximize,
    })
}

fn run_natively(instance: &Instance, options: &JobOptions) -> anyhow::Result<Outcome> {
    let output = run_native::<Qubo>(&instance.name, &instance.json, options)?;
    checked_outcome(instance, &output, 0)
}

/// Reads a run's output and checks that its energy is the objective of its sample.
fn checked_outcome(
    instance: &Instance,
    output: &Value,
    memory_bytes: usize,
) -> anyhow::Result<Outcome> {
    let energy = number(output, "/energy", &instance.name)?;
    let sample: Vec<f64> = output["sample"]
        .as_array()
        .context("the output has no sample")?
        .iter()
        .map(|value| value.as_f64().unwrap_or(f64::NAN))
        .collect();
    if sample.len() != instance.num_variables
        || sample.iter().any(|&value| value != 0.0 && value != 1.0)
    {
        bail!(
            "{}: the sample is not one 0 or 1 per variable",
            instance.name
        );
    }
    let objective = instance
        .linear
        .iter()
        .map(|&(i, h)| h * sample[i])
        .chain(
            instance
                .quadratic
                .iter()
                .map(|&(i, j, weight)| weight * sample[i] * sample[j]),
        )
        .sum::<f64>();
    if (objective - energy).abs() > 1e-6 * objective.abs().max(1.0) {
        bail!(
            "{}: the output claims an energy of {energy}, its sample has {objective}",
            instance.name
        );
    }
    Ok(Outcome {
        objective,
        time_to_best: number(output, "/solver/time_to_best_s", &instance.name)?,
        memory_bytes,
    })
}
