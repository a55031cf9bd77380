//! The max-cut benchmark: the solver on instance files, through the real sandbox (the
//! component the server embeds, under the limits a job gets) and natively, against best-known
//! or proven optimal values.
//!
//! Per instance it prints the cut of each seed, the gap to the best-known value, the time to
//! the best cut, the wasm/native time ratio on a fixed iteration budget (both runs must return
//! the same partition) and the guest's peak memory. Every cut is recomputed from the returned
//! partition over the file's edges, independently of the solver.
//!
//! ```sh
//! cargo bench -p caseload-host --bench maxcut -- \
//!     --best-known ../shared/gset/best_known.csv --seconds 10 --seeds 3 --parallel 2 ../shared/gset/G{1..54}.txt
//! ```
//!
//! Relative paths are read from the repository's root, where the command is typed (`cargo
//! bench` itself runs benches from `host/`). `--parallel 2` does two runs at once, one per
//! core (the solver is single-threaded); the wasm/native ratio is timed afterwards, one run
//! at a time, alternating between the two `--ratio-runs` times and comparing the fastest
//! of each. `--native` does the quality runs natively instead, for tuning; `--budget 0`
//! skips the ratio.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use caseload::options::JobOptions;
use caseload::plugins::MAXCUT_WASM;
use caseload::runtime::RuntimeConfig;
use caseload_maxcut::MaxCut;
use clap::Parser;
use serde_json::Value;

use common::{
    Sandbox, decode_file, for_each_instance, from_root, instance_name, median, number,
    read_best_known, run_native, timed,
};

#[derive(Debug, Parser)]
#[command(about = "Runs max-cut on instance files in the sandbox and natively")]
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
    /// Iteration budget of the wasm/native comparison (`max_iterations`); 0 skips it.
    #[arg(long, default_value_t = 100_000_000)]
    budget: u64,
    /// Runs of each side of the wasm/native comparison, alternating; the fastest of each is
    /// compared, since what a shared machine adds to a run is only ever delay.
    #[arg(long, default_value_t = 3)]
    ratio_runs: u32,
    /// Also times the sandbox with guests compiled without epoch checks, in this process,
    /// to show what the checks cost (nothing could stop these runs).
    #[arg(long)]
    unchecked: bool,
    /// Also times runs in a sandbox process, as the server runs jobs with long time
    /// limits (`--sandbox-processes-from`): compiled without epoch checks, killed at the
    /// deadline.
    #[arg(long)]
    processes: bool,
    /// CSV with columns `instance` and `best_known` (or `optimum`).
    #[arg(long)]
    best_known: Option<PathBuf>,
    /// Run the quality runs natively instead of in the sandbox.
    #[arg(long)]
    native: bool,
    /// A median gap above this, in percent, is flagged in the summary.
    #[arg(long, default_value_t = 0.1)]
    within: f64,
    /// Instance files in G-set (rudy) format.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

/// What one run returned, checked against the instance.
#[derive(Debug, Clone)]
struct Outcome {
    cut: f64,
    partition: Vec<u64>,
    time_to_best: f64,
    elapsed: f64,
    memory_bytes: usize,
}

struct Instance {
    name: String,
    json: String,
    input_edges: Vec<(usize, usize, f64)>,
    num_nodes: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let best_known = match &args.best_known {
        Some(path) => read_best_known(path)?,
        None => HashMap::new(),
    };
    let sandbox = Sandbox::as_server(MAXCUT_WASM.as_slice(), args.seconds)?;
    let instances = args
        .files
        .iter()
        .map(|path| read_instance(path))
        .collect::<anyhow::Result<Vec<_>>>()?;

    println!(
        "max-cut: {} runs of {} s per instance ({}, {} at a time), cuts recomputed from the partitions",
        args.seeds,
        args.seconds,
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
        "{:<18} {:>6} {:>10} {:<26} {:>8} {:>8} {:>10} {:>9}",
        "instance", "nodes", "best", "cuts", "mean gap", "med gap", "to best", "memory"
    );
    let mut median_gaps = Vec::new();
    let mut mean_gaps = Vec::new();
    let mut flagged = Vec::new();
    let run = |instance: &Instance, seed: u64| {
        let options = timed(args.seconds, seed);
        if args.native {
            run_natively(instance, &options)
        } else {
            run_sandbox(&sandbox, instance, &options)
        }
    };
    for_each_instance(
        &instances,
        args.seeds,
        args.parallel,
        run,
        |instance, outcomes| {
            let best = best_known.get(&instance.name).copied();
            let cuts: Vec<f64> = outcomes.iter().map(|outcome| outcome.cut).collect();
            let gaps: Vec<f64> = match best {
                Some(best) => cuts.iter().map(|cut| 100.0 * (best - cut) / best).collect(),
                None => Vec::new(),
            };
            let (mean_gap, median_gap) = if gaps.is_empty() {
                ("-".to_owned(), "-".to_owned())
            } else {
                let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
                let median = median(&gaps);
                mean_gaps.push(mean);
                median_gaps.push(median);
                if median > args.within {
                    flagged.push(format!("{} ({median:.3} %)", instance.name));
                }
                (format!("{mean:.3} %"), format!("{median:.3} %"))
            };
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
                "{:<18} {:>6} {:>10} {:<26} {:>8} {:>8} {:>8.2} s {:>5.1} MiB",
                instance.name,
                instance.num_nodes,
                best.map_or("-".to_owned(), |best| best.to_string()),
                cuts.iter()
                    .map(|cut| cut.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                mean_gap,
                median_gap,
                to_best,
                memory as f64 / f64::from(1 << 20),
            );
        },
    )?;

    println!();
    if !median_gaps.is_empty() {
        let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
        println!(
            "{} instances: mean gap {:.4} % (mean of per-instance means), {:.4} % (mean of medians); median gap within {} %: {} of {}",
            median_gaps.len(),
            mean(&mean_gaps),
            mean(&median_gaps),
            args.within,
            median_gaps.len() - flagged.len(),
            median_gaps.len()
        );
        if !flagged.is_empty() {
            println!("over {} %: {}", args.within, flagged.join(", "));
        }
    }

    // The ratio is timed one run at a time, after the quality runs, so that the two runs it
    // compares share the machine with nothing of the benchmark's own.
    if args.budget > 0 {
        println!();
        println!(
            "wasm/native: the solver's elapsed time in the sandbox over natively, on {} iterations, seed 1",
            args.budget
        );
        let unchecked = if args.unchecked {
            // Nothing can stop these runs: this is only for measuring what the checks cost.
            let config = RuntimeConfig::default().without_epoch_checks();
            Some(Sandbox::with_config(
                MAXCUT_WASM.as_slice(),
                args.seconds,
                config,
            )?)
        } else {
            None
        };
        // In this process, with epoch checks: the server's way for runs under 1 s.
        let checked = Sandbox::new(MAXCUT_WASM.as_slice(), args.seconds)?;
        let in_processes = if args.processes {
            Some(Sandbox::in_processes(MAXCUT_WASM.as_slice(), args.seconds)?)
        } else {
            None
        };
        let mut ratios = Vec::new();
        let mut unchecked_ratios = Vec::new();
        let mut process_ratios = Vec::new();
        for instance in &instances {
            let options = JobOptions {
                time_limit_ms: 3_600_000,
                seed: 1,
                max_iterations: Some(args.budget),
                memory_limit_mib: None,
                priority: 0,
            };
            let runs = args.ratio_runs.max(1);
            let (mut native, mut sandboxed) = (f64::INFINITY, f64::INFINITY);
            let mut sandboxed_unchecked = f64::INFINITY;
            let mut in_a_process = f64::INFINITY;
            for _ in 0..runs {
                let native_run = run_natively(instance, &options)?;
                let sandboxed_run = run_sandbox(&checked, instance, &options)?;
                if native_run.partition != sandboxed_run.partition {
                    bail!(
                        "{}: the sandbox and the native run disagree on the same seed and budget",
                        instance.name
                    );
                }
                native = native.min(native_run.elapsed);
                sandboxed = sandboxed.min(sandboxed_run.elapsed);
                if let Some(unchecked) = &unchecked {
                    let unchecked_run = run_sandbox(unchecked, instance, &options)?;
                    if unchecked_run.partition != native_run.partition {
                        bail!("{}: the unchecked run disagrees", instance.name);
                    }
                    sandboxed_unchecked = sandboxed_unchecked.min(unchecked_run.elapsed);
                }
                if let Some(in_processes) = &in_processes {
                    let process_run = run_sandbox(in_processes, instance, &options)?;
                    if process_run.partition != native_run.partition {
                        bail!("{}: the run in a sandbox process disagrees", instance.name);
                    }
                    in_a_process = in_a_process.min(process_run.elapsed);
                }
            }
            let ratio = sandboxed / native;
            ratios.push(ratio);
            print!(
                "{:<18} {:>6.3} ({:.2} s in the sandbox, {:.2} s natively, fastest of {}, same partition)",
                instance.name, ratio, sandboxed, native, runs
            );
            if unchecked.is_some() {
                let ratio = sandboxed_unchecked / native;
                unchecked_ratios.push(ratio);
                print!("; without epoch checks {ratio:.3} ({sandboxed_unchecked:.2} s)");
            }
            if in_processes.is_some() {
                let ratio = in_a_process / native;
                process_ratios.push(ratio);
                print!("; in a sandbox process {ratio:.3} ({in_a_process:.2} s)");
            }
            println!();
        }
        let worst = ratios.iter().copied().fold(0.0, f64::max);
        println!(
            "wasm/native: median {:.3}, worst {worst:.3}",
            median(&ratios)
        );
        if !unchecked_ratios.is_empty() {
            let worst = unchecked_ratios.iter().copied().fold(0.0, f64::max);
            println!(
                "without epoch checks: median {:.3}, worst {worst:.3}",
                median(&unchecked_ratios)
            );
        }
        if !process_ratios.is_empty() {
            let worst = process_ratios.iter().copied().fold(0.0, f64::max);
            println!(
                "in a sandbox process: median {:.3}, worst {worst:.3}",
                median(&process_ratios)
            );
        }
    }
    Ok(())
}

fn read_instance(path: &Path) -> anyhow::Result<Instance> {
    let path = &from_root(path);
    let input = decode_file::<MaxCut>(path, caseload_maxcut::RUDY_MEDIA_TYPE)?;
    Ok(Instance {
        name: instance_name(path),
        json: serde_json::to_string(&input)?,
        input_edges: input.edges.clone().unwrap_or_default(),
        num_nodes: input.num_nodes,
    })
}

fn run_sandbox(
    sandbox: &Sandbox,
    instance: &Instance,
    options: &JobOptions,
) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    let run = sandbox.run(&instance.name, &instance.json, options)?;
    let elapsed = started.elapsed().as_secs_f64();
    checked_outcome(instance, &run.output, run.peak_memory_bytes, elapsed)
}

fn run_natively(instance: &Instance, options: &JobOptions) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    let output = run_native::<MaxCut>(&instance.name, &instance.json, options)?;
    checked_outcome(instance, &output, 0, started.elapsed().as_secs_f64())
}

/// Reads a run's output and checks that its cut is the cut of its partition. `elapsed` is
/// the run's time as the caller measured it (a run on an iteration budget reports none).
fn checked_outcome(
    instance: &Instance,
    output: &Value,
    memory_bytes: usize,
    elapsed: f64,
) -> anyhow::Result<Outcome> {
    let number = |pointer: &str| number(output, pointer, &instance.name);
    let cut = number("/cut_value")?;
    let partition: Vec<u64> = output["partition"]
        .as_array()
        .context("the output has no partition")?
        .iter()
        .map(|side| side.as_u64().unwrap_or(u64::MAX))
        .collect();
    if partition.len() != instance.num_nodes || partition.iter().any(|&side| side > 1) {
        bail!("{}: the partition is not one side per node", instance.name);
    }
    let recomputed: f64 = instance
        .input_edges
        .iter()
        .filter(|&&(i, j, _)| partition[i] != partition[j])
        .map(|&(_, _, weight)| weight)
        .sum();
    if (recomputed - cut).abs() > 1e-6 * cut.abs().max(1.0) {
        bail!(
            "{}: the output claims a cut of {cut}, its partition cuts {recomputed}",
            instance.name
        );
    }
    Ok(Outcome {
        cut,
        partition,
        // A run on an iteration budget reports no times; those runs are timed by the caller.
        time_to_best: output
            .pointer("/solver/time_to_best_s")
            .and_then(Value::as_f64)
            .unwrap_or(elapsed),
        elapsed,
        memory_bytes,
    })
}
