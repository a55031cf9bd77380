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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};
use caseload::config::UseCaseLimits;
use caseload::options::JobOptions;
use caseload::plugins::MAXCUT_WASM;
use caseload::runtime::{
    BoundedLog, CompiledPlugin, ExecutionObserver, Limits, RunOptions, Runtime, RuntimeConfig,
};
use caseload_maxcut::{MaxCut, MaxCutInput};
use caseload_sdk::{RunContext, UseCase};
use clap::Parser;
use serde_json::Value;

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

struct IgnoreProgress;

impl ExecutionObserver for IgnoreProgress {
    fn progress(&self, _fraction: f64, _message: String, _log: &BoundedLog) {}

    fn logged(&self, _log: &BoundedLog) {}
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let best_known = match &args.best_known {
        Some(path) => read_best_known(path)?,
        None => HashMap::new(),
    };
    // As the server does: instances from a pool, each memory up to the job's cap.
    let runtime = Runtime::with_config(
        &RuntimeConfig::default().with_pooling(Limits::default().memory_bytes, 4),
    )?;
    let plugin = runtime.compile(MAXCUT_WASM)?;
    let job_limits = UseCaseLimits {
        default_time_limit: Duration::from_secs(10),
        max_time_limit: Duration::from_secs_f64(args.seconds.max(60.0)),
        sandbox: Limits::default(),
    };
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
        let options = JobOptions {
            time_limit_ms: (args.seconds * 1000.0) as u64,
            seed,
            max_iterations: None,
            memory_limit_mib: None,
        };
        if args.native {
            run_native(instance, &options)
        } else {
            run_sandbox(&plugin, instance, &options, &job_limits)
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
        let mut ratios = Vec::new();
        for instance in &instances {
            let options = JobOptions {
                time_limit_ms: 3_600_000,
                seed: 1,
                max_iterations: Some(args.budget),
                memory_limit_mib: None,
            };
            let runs = args.ratio_runs.max(1);
            let (mut native, mut sandboxed) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..runs {
                let native_run = run_native(instance, &options)?;
                let sandboxed_run = run_sandbox(&plugin, instance, &options, &job_limits)?;
                if native_run.partition != sandboxed_run.partition {
                    bail!(
                        "{}: the sandbox and the native run disagree on the same seed and budget",
                        instance.name
                    );
                }
                native = native.min(native_run.elapsed);
                sandboxed = sandboxed.min(sandboxed_run.elapsed);
            }
            let ratio = sandboxed / native;
            ratios.push(ratio);
            println!(
                "{:<18} {:>6.3} ({:.2} s in the sandbox, {:.2} s natively, fastest of {}, same partition)",
                instance.name, ratio, sandboxed, native, runs
            );
        }
        let worst = ratios.iter().copied().fold(0.0, f64::max);
        println!(
            "wasm/native: median {:.3}, worst {worst:.3}",
            median(&ratios)
        );
    }
    Ok(())
}

/// Runs `run(instance, seed)` for seeds `1..=seeds` of every instance on `parallel` threads,
/// and hands each instance's outcomes, in seed order, to `done` in the order of `instances`,
/// as soon as they and the instances before them are in.
fn for_each_instance(
    instances: &[Instance],
    seeds: u64,
    parallel: usize,
    run: impl Fn(&Instance, u64) -> anyhow::Result<Outcome> + Sync,
    mut done: impl FnMut(&Instance, &[Outcome]),
) -> anyhow::Result<()> {
    let tasks: Vec<(usize, u64)> = (0..instances.len())
        .flat_map(|index| (1..=seeds).map(move |seed| (index, seed)))
        .collect();
    let next_task = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..parallel.max(1) {
            let sender = sender.clone();
            let (tasks, next_task, run) = (&tasks, &next_task, &run);
            scope.spawn(move || {
                while let Some(&(index, seed)) =
                    tasks.get(next_task.fetch_add(1, Ordering::Relaxed))
                {
                    let outcome = run(&instances[index], seed);
                    let failed = outcome.is_err();
                    if sender.send((index, seed, outcome)).is_err() || failed {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut outcomes: Vec<Vec<Option<Outcome>>> =
            vec![vec![None; seeds as usize]; instances.len()];
        let mut printed = 0;
        for (index, seed, outcome) in receiver {
            outcomes[index][(seed - 1) as usize] = Some(outcome?);
            while printed < instances.len() && outcomes[printed].iter().all(Option::is_some) {
                let complete: Vec<Outcome> = outcomes[printed].iter().flatten().cloned().collect();
                done(&instances[printed], &complete);
                printed += 1;
            }
        }
        Ok(())
    })
}

/// `path` as typed at the repository's root.
fn from_root(path: &Path) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn read_instance(path: &Path) -> anyhow::Result<Instance> {
    let path = &from_root(path);
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let input = MaxCut::decode(caseload_maxcut::RUDY_MEDIA_TYPE, &data).map_err(|violations| {
        anyhow::anyhow!(
            "{}: {}",
            path.display(),
            violations
                .iter()
                .map(|violation| violation.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )
    })?;
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Instance {
        name,
        json: serde_json::to_string(&input)?,
        input_edges: input.edges.clone().unwrap_or_default(),
        num_nodes: input.num_nodes,
    })
}

fn run_sandbox(
    plugin: &CompiledPlugin,
    instance: &Instance,
    options: &JobOptions,
    limits: &UseCaseLimits,
) -> anyhow::Result<Outcome> {
    let run_options = RunOptions {
        time_limit: options.time_limit(),
        seed: options.seed,
        max_iterations: options.max_iterations,
    };
    let report = plugin.run(
        &instance.json,
        &run_options,
        &limits.for_run(options),
        Arc::new(AtomicBool::new(false)),
        Arc::new(IgnoreProgress),
    );
    let output = report
        .result
        .map_err(|error| anyhow::anyhow!("{}: the sandboxed run failed: {error}", instance.name))?;
    checked_outcome(
        instance,
        &serde_json::from_str(&output)?,
        report.peak_memory_bytes,
    )
}

fn run_native(instance: &Instance, options: &JobOptions) -> anyhow::Result<Outcome> {
    let input: MaxCutInput = serde_json::from_str(&instance.json)?;
    let context = RunContext::new(options.time_limit(), options.seed, options.max_iterations);
    let output = MaxCut::run(input, &context)
        .map_err(|error| anyhow::anyhow!("{}: the native run failed: {error:?}", instance.name))?;
    checked_outcome(instance, &serde_json::to_value(&output)?, 0)
}

/// Reads a run's output and checks that its cut is the cut of its partition.
fn checked_outcome(
    instance: &Instance,
    output: &Value,
    memory_bytes: usize,
) -> anyhow::Result<Outcome> {
    let number = |pointer: &str| {
        output
            .pointer(pointer)
            .and_then(Value::as_f64)
            .with_context(|| format!("{}: the output has no {pointer}", instance.name))
    };
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
        time_to_best: number("/solver/time_to_best_s")?,
        elapsed: number("/solver/elapsed_s")?,
        memory_bytes,
    })
}

/// `instance` to its best-known value, from a CSV with a header naming the columns.
fn read_best_known(path: &Path) -> anyhow::Result<HashMap<String, f64>> {
    let path = &from_root(path);
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let column = |names: &[&str]| header.iter().position(|field| names.contains(field));
    let (Some(name), Some(value)) = (column(&["instance"]), column(&["best_known", "optimum"]))
    else {
        bail!(
            "{}: the header must name `instance` and `best_known` or `optimum`",
            path.display()
        );
    };
    let mut values = HashMap::new();
    for line in lines.filter(|line| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.split(',').collect();
        if let (Some(instance), Some(best)) = (fields.get(name), fields.get(value)) {
            values.insert(
                (*instance).to_owned(),
                best.parse()
                    .with_context(|| format!("{}: {line}", path.display()))?,
            );
        }
    }
    Ok(values)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        len if len % 2 == 1 => sorted[len / 2],
        len => (sorted[len / 2 - 1] + sorted[len / 2]) / 2.0,
    }
}
