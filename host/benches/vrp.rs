//! The vehicle routing benchmark in the sandbox: the `vrp` component the server embeds, run
//! under a job's limits, on VRPLIB instance files (CVRPLIB's X set, or files written by
//! `scripts/vrp-instance.py`).
//!
//! - **Quality** (`--seconds S`, 0 skips it): each file solved in the sandbox for S seconds
//!   per seed (`--seeds`), as the server runs a job of S seconds (in a sandbox process from
//!   1 s on); the cost, and the gap to the best known solution read from the `.sol` file
//!   beside the instance (its `Cost` line), when there is one.
//! - **wasm/native** (`--budget I`, 0 skips it): each file solved natively and in the
//!   sandbox on seed 1 and the same iteration budget (`max_iterations`), in this process
//!   with epoch checks and in a sandbox process without; every run must return the same
//!   routes and cost; the ratios of the fastest of `--ratio-runs` runs of each.
//! - **Scale** (`--large FILE`): a large instance checked by the component's `validate` under
//!   the default memory cap, then solved for `--large-seconds` in a sandbox process: when
//!   each incumbent reached the host and its cost, the answer, the peak memory.
//! - **Finish and cancel** (`--stops N`, on the large file, else the last one): the file
//!   started N times with a 60 s limit, then, after 1 s, 1.5 s, 2 s, ..., asked to finish
//!   (the answer must be a feasible plan) or cancelled, in this process (the server's way
//!   for runs under 1 s) and in a sandbox process (its way for longer ones); the time from
//!   the request until the run returned.
//!
//! ```sh
//! scripts/vrp-instance.py 10000 1 --depot random --customers mixed --demand wide \
//!     --route-size 12 > /tmp/G-n10001.vrp
//! cargo bench -p caseload-host --bench vrp -- --seconds 10 --budget 1000 \
//!     --large /tmp/G-n10001.vrp /work/bench-instances/X/X-n{101-k25,219-k73,439-k37,1001-k43}.vrp
//! ```
//!
//! Relative paths are read from the repository's root. Runs go one at a time.

#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use caseload::options::JobOptions;
use caseload::plugins::VRP_WASM;
use caseload::runtime::{BoundedLog, CallError, ExecutionObserver, Limits, Runtime};
use caseload_vrp::Vrp;
use clap::Parser;
use serde_json::Value;

use common::{Sandbox, decode_file, from_root, instance_name, median, number, run_native, timed};

#[derive(Debug, Parser)]
#[command(about = "Runs the vrp use case's component in the sandbox")]
struct Args {
    /// Time limit of each quality run, in seconds; 0 skips them.
    #[arg(long, default_value_t = 0.0)]
    seconds: f64,
    /// Quality runs per instance, with seeds 1, 2, ...
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// One quality run per instance, with this seed (instead of `--seeds`); each run also
    /// prints a `RESULT` line, as the native runner does, for `scripts/vrp-vs-pyvrp.py`.
    #[arg(long)]
    seed: Option<u64>,
    /// Iteration budget of the wasm/native comparison (`max_iterations`); 0 skips it.
    #[arg(long, default_value_t = 1000)]
    budget: u64,
    /// Runs of each side of the wasm/native comparison, alternating; the fastest of each is
    /// compared, since what a shared machine adds to a run is only ever delay.
    #[arg(long, default_value_t = 2)]
    ratio_runs: u32,
    /// A large instance for the scale measure, and the finish and cancel measures.
    #[arg(long)]
    large: Option<PathBuf>,
    /// Time limit of the run on the large instance, in seconds.
    #[arg(long, default_value_t = 20.0)]
    large_seconds: f64,
    /// Finish requests and cancellations timed, each way.
    #[arg(long, default_value_t = 5)]
    stops: u32,
    /// VRPLIB instance files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Instance {
    name: String,
    json: String,
    clients: usize,
    best_known: Option<f64>,
}

/// What the component reported during a run, and whether it was asked to finish.
struct Recorder {
    started: Instant,
    incumbents: Mutex<Vec<(Duration, f64)>>,
    finish: AtomicBool,
}

impl Recorder {
    fn new() -> Arc<Recorder> {
        Arc::new(Recorder {
            started: Instant::now(),
            incumbents: Mutex::new(Vec::new()),
            finish: AtomicBool::new(false),
        })
    }
}

impl ExecutionObserver for Recorder {
    fn progress(&self, _fraction: f64, _message: String, _log: &BoundedLog) {}

    fn logged(&self, _log: &BoundedLog) {}

    fn finishing(&self) -> bool {
        self.finish.load(Ordering::SeqCst)
    }

    fn incumbent(&self, objective: f64, _solution: String) {
        let at = self.started.elapsed();
        self.incumbents
            .lock()
            .expect("the recorder's lock")
            .push((at, objective));
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let instances = args
        .files
        .iter()
        .map(|path| read_instance(path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let large = args.large.as_deref().map(read_instance).transpose()?;

    if args.seconds > 0.0 {
        quality(&args, &instances)?;
    }
    if args.budget > 0 {
        wasm_over_native(&args, &instances)?;
    }
    if let Some(large) = &large {
        scale(&args, large)?;
    }
    if args.stops > 0 {
        let instance = large
            .as_ref()
            .or(instances.last())
            .context("no instance to stop")?;
        stops(&args, instance)?;
    }
    Ok(())
}

fn quality(args: &Args, instances: &[Instance]) -> anyhow::Result<()> {
    let sandbox = Sandbox::as_server(VRP_WASM.as_slice(), args.seconds)?;
    println!(
        "quality: {} s per run in the sandbox ({}), seeds {}",
        args.seconds,
        if args.seconds >= 1.0 {
            "in a sandbox process, as the server runs jobs of 1 s or more"
        } else {
            "in this process, under a job's limits"
        },
        args.seed
            .map_or(format!("1 to {}", args.seeds), |seed| seed.to_string())
    );
    println!(
        "{:<14} {:>7} {:>9} {:<26} {:>8} {:>9}",
        "instance", "clients", "BKS", "costs", "med gap", "memory"
    );
    let mut gaps = Vec::new();
    for instance in instances {
        let mut costs = Vec::new();
        let mut memory = 0;
        let seeds = args.seed.map_or(1..=args.seeds, |seed| seed..=seed);
        for seed in seeds {
            let run = sandbox.run(&instance.name, &instance.json, &timed(args.seconds, seed))?;
            if run.output["feasible"] != Value::Bool(true) {
                bail!("{}: seed {seed} found no feasible plan", instance.name);
            }
            let cost = number(&run.output, "/cost", &instance.name)?;
            if args.seed.is_some() {
                println!(
                    "RESULT name={}-s{seed} cost={cost} feasible=true iterations={}",
                    instance.name,
                    number(&run.output, "/solver/iterations", &instance.name)?
                );
            }
            costs.push(cost);
            memory = memory.max(run.peak_memory_bytes);
        }
        let gap = instance
            .best_known
            .map(|best| 100.0 * (median(&costs) - best) / best);
        if let Some(gap) = gap {
            gaps.push(gap);
        }
        println!(
            "{:<14} {:>7} {:>9} {:<26} {:>8} {:>5.1} MiB",
            instance.name,
            instance.clients,
            instance
                .best_known
                .map_or("-".to_owned(), |best| best.to_string()),
            costs
                .iter()
                .map(f64::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            gap.map_or("-".to_owned(), |gap| format!("{gap:.2} %")),
            memory as f64 / f64::from(1 << 20),
        );
    }
    if !gaps.is_empty() {
        println!(
            "mean of the median gaps: {:.2} %",
            gaps.iter().sum::<f64>() / gaps.len() as f64
        );
    }
    println!();
    Ok(())
}

fn wasm_over_native(args: &Args, instances: &[Instance]) -> anyhow::Result<()> {
    // In this process, with epoch checks: the server's way for runs under 1 s. In a sandbox
    // process, compiled without them: its way for longer runs, every routing job of note.
    let checked = Sandbox::new(VRP_WASM.as_slice(), 3600.0)?;
    let in_processes = Sandbox::in_processes(VRP_WASM.as_slice(), 3600.0)?;
    println!(
        "wasm/native: elapsed time in the sandbox over natively, seed 1, {} iterations, fastest of {}",
        args.budget, args.ratio_runs
    );
    let options = JobOptions {
        time_limit_ms: 3_600_000,
        seed: 1,
        max_iterations: Some(args.budget),
        memory_limit_mib: None,
        priority: 0,
    };
    let (mut ratios, mut process_ratios) = (Vec::new(), Vec::new());
    for instance in instances {
        let mut best = [f64::INFINITY; 3];
        let mut cost = 0.0;
        for _ in 0..args.ratio_runs.max(1) {
            let started = Instant::now();
            let native = run_native::<Vrp>(&instance.name, &instance.json, &options)?;
            best[0] = best[0].min(started.elapsed().as_secs_f64());
            for (index, sandbox) in [(1, &checked), (2, &in_processes)] {
                let started = Instant::now();
                let sandboxed = sandbox
                    .run(&instance.name, &instance.json, &options)?
                    .output;
                best[index] = best[index].min(started.elapsed().as_secs_f64());
                if plan(&native) != plan(&sandboxed) {
                    bail!(
                        "{}: the sandbox and the native run disagree on the same seed and budget",
                        instance.name
                    );
                }
            }
            cost = number(&native, "/cost", &instance.name)?;
        }
        let [native, checked, in_a_process] = best;
        ratios.push(checked / native);
        process_ratios.push(in_a_process / native);
        println!(
            "{:<14} {:.3} ({checked:.2} s in this process, {native:.2} s natively); in a sandbox process {:.3} ({in_a_process:.2} s); same routes, cost {cost}",
            instance.name,
            checked / native,
            in_a_process / native,
        );
    }
    let worst = |ratios: &[f64]| ratios.iter().copied().fold(0.0, f64::max);
    println!(
        "wasm/native in this process (epoch checks): median {:.3}, worst {:.3}",
        median(&ratios),
        worst(&ratios)
    );
    println!(
        "wasm/native in a sandbox process: median {:.3}, worst {:.3}",
        median(&process_ratios),
        worst(&process_ratios)
    );
    println!();
    Ok(())
}

/// What two runs on the same seed and budget must agree on: the cost and every route.
fn plan(output: &Value) -> (Value, Vec<Value>) {
    let routes = output["routes"]
        .as_array()
        .map(|routes| {
            routes
                .iter()
                .map(|route| route["clients"].clone())
                .collect()
        })
        .unwrap_or_default();
    (output["cost"].clone(), routes)
}

fn scale(args: &Args, large: &Instance) -> anyhow::Result<()> {
    let limits = Limits::default();
    let runtime = Runtime::new()?;
    let plugin = runtime.compile(VRP_WASM.as_slice())?;
    let started = Instant::now();
    plugin
        .validate(&large.json, &limits)
        .map_err(|error| anyhow::anyhow!("{}: not accepted: {error}", large.name))?;
    println!(
        "scale: {} ({} clients, {:.1} MB of JSON) accepted by validate under the default memory cap ({} MiB) in {:.2} s",
        large.name,
        large.clients,
        large.json.len() as f64 / 1e6,
        limits.memory_bytes >> 20,
        started.elapsed().as_secs_f64()
    );

    let sandbox = Sandbox::in_processes(VRP_WASM.as_slice(), args.large_seconds)?;
    // The sandbox process loads the component on its first run: not part of the measure.
    sandbox.run("warm-up", &large.json, &timed(0.5, 1))?;
    let recorder = Recorder::new();
    let report = sandbox.run_observed(
        &large.json,
        &timed(args.large_seconds, 1),
        Arc::new(AtomicBool::new(false)),
        recorder.clone(),
    );
    let elapsed = recorder.started.elapsed();
    let output: Value = serde_json::from_str(
        &report
            .result
            .map_err(|error| anyhow::anyhow!("{}: the run failed: {error}", large.name))?,
    )?;
    let incumbents = recorder
        .incumbents
        .lock()
        .expect("the recorder's lock")
        .clone();
    let (first_at, first_cost) = *incumbents.first().context("no incumbent")?;
    let (last_at, last_cost) = *incumbents.last().context("no incumbent")?;
    println!(
        "{} s in a sandbox process, seed 1: first incumbent {first_cost} at {:.2} s; {} incumbents; the last {last_cost} at {:.2} s; answered after {:.2} s: cost {}, feasible {}, {} routes; peak memory {:.0} MiB",
        args.large_seconds,
        first_at.as_secs_f64(),
        incumbents.len(),
        last_at.as_secs_f64(),
        elapsed.as_secs_f64(),
        output["cost"],
        output["feasible"],
        output["routes"].as_array().map_or(0, Vec::len),
        report.peak_memory_bytes as f64 / f64::from(1 << 20),
    );
    println!(
        "incumbents (s: cost): {}",
        incumbents
            .iter()
            .map(|(at, cost)| format!("{:.2}: {cost}", at.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!();
    Ok(())
}

/// How one stop is asked for.
#[derive(Debug, Clone, Copy)]
enum Stop {
    Finish,
    Cancel,
}

fn stops(args: &Args, instance: &Instance) -> anyhow::Result<()> {
    println!(
        "finish and cancel: {} ({} clients), 60 s limit, stopped after 1 s, 1.5 s, ...; from the request to the run's return",
        instance.name, instance.clients
    );
    for (place, sandbox) in [
        ("in this process", Sandbox::new(VRP_WASM.as_slice(), 60.0)?),
        (
            "in a sandbox process",
            Sandbox::in_processes(VRP_WASM.as_slice(), 60.0)?,
        ),
    ] {
        sandbox.run("warm-up", &instance.json, &timed(0.5, 1))?;
        for stop in [Stop::Finish, Stop::Cancel] {
            let mut latencies = Vec::new();
            for trial in 0..args.stops {
                let after = Duration::from_millis(1000 + 500 * u64::from(trial));
                latencies.push(stop_once(&sandbox, instance, stop, after)?);
            }
            let ms: Vec<f64> = latencies
                .iter()
                .map(|latency| latency.as_secs_f64() * 1000.0)
                .collect();
            println!(
                "{place}, {}: median {:.1} ms, max {:.1} ms ({})",
                match stop {
                    Stop::Finish => "finish (answers its best plan)",
                    Stop::Cancel => "cancel",
                },
                median(&ms),
                ms.iter().copied().fold(0.0, f64::max),
                ms.iter()
                    .map(|ms| format!("{ms:.1}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    Ok(())
}

/// Starts a 60 s run, asks it to stop after `after`, and returns how long it took to return.
fn stop_once(
    sandbox: &Sandbox,
    instance: &Instance,
    stop: Stop,
    after: Duration,
) -> anyhow::Result<Duration> {
    let recorder = Recorder::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    let asked = Mutex::new(None);
    let (report, returned) = std::thread::scope(|scope| {
        let (stopper_recorder, stopper_cancelled) = (recorder.clone(), cancelled.clone());
        let asked = &asked;
        scope.spawn(move || {
            std::thread::sleep(after);
            *asked.lock().expect("the request's lock") = Some(Instant::now());
            match stop {
                Stop::Finish => stopper_recorder.finish.store(true, Ordering::SeqCst),
                Stop::Cancel => stopper_cancelled.store(true, Ordering::SeqCst),
            }
        });
        let report = sandbox.run_observed(
            &instance.json,
            &timed(60.0, 1),
            cancelled.clone(),
            recorder.clone(),
        );
        (report, Instant::now())
    });
    let asked = asked
        .into_inner()
        .expect("the request's lock")
        .context("the run returned before it was asked to stop")?;
    match (stop, report.result) {
        (Stop::Finish, Ok(output)) => {
            let output: Value = serde_json::from_str(&output)?;
            if output["feasible"] != Value::Bool(true) {
                bail!(
                    "{}: a finished run answered no feasible plan",
                    instance.name
                );
            }
        }
        (Stop::Cancel, Err(CallError::Cancelled)) => {}
        (stop, result) => bail!(
            "{}: {stop:?} ended the run with {:?}",
            instance.name,
            result.map(|_| "an answer")
        ),
    }
    Ok(returned.saturating_duration_since(asked))
}

fn read_instance(path: &Path) -> anyhow::Result<Instance> {
    let path = &from_root(path);
    let input = decode_file::<Vrp>(path, caseload_vrp::vrplib::MEDIA_TYPE)?;
    let json = serde_json::to_value(&input)?;
    let clients = json["clients"].as_array().map_or(0, Vec::len);
    Ok(Instance {
        name: instance_name(path),
        json: json.to_string(),
        clients,
        best_known: read_solution_cost(&path.with_extension("sol")),
    })
}

/// The `Cost` line of a CVRPLIB solution file, if there is one.
fn read_solution_cost(path: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("Cost"))
        .and_then(|cost| cost.trim().parse().ok())
}
