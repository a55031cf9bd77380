//! What a large component costs the server, and whether it slows the small ones: the size,
//! cold compile time, compile-cache load time, per-call instantiation from the instance pool,
//! and peak linear memory of a plugin file (the Python knapsack use case, say), and max-cut's
//! instantiate + run beside it in the same pool.
//!
//! ```sh
//! caseload plugin build plugins/knapsack          # needs componentize-py
//! cargo bench -p caseload-host --bench component_cost -- plugins/knapsack/target/knapsack.wasm
//! ```
//!
//! Max-cut calls are timed right after another max-cut call, right after one of the
//! component's, and right after native code wrote as much memory as the component's instance
//! used, in turn in one run: the ratios of the medians say what running beside the component
//! costs max-cut, and how much of it any work of that size would cost.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use caseload::plugins::MAXCUT_WASM;
use caseload::runtime::{
    BoundedLog, CompiledPlugin, ExecutionObserver, Limits, RunOptions, Runtime, RuntimeConfig,
};
use clap::Parser;
use serde_json::Value;

#[derive(Debug, Parser)]
#[command(about = "Measures what a plugin component costs the server")]
struct Args {
    /// The component (`.wasm`) to measure.
    component: PathBuf,
    /// Cold compiles to time.
    #[arg(long, default_value_t = 3)]
    compiles: usize,
    /// Calls timed per measure.
    #[arg(long, default_value_t = 50)]
    calls: usize,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Quiet;

impl ExecutionObserver for Quiet {
    fn progress(&self, _fraction: f64, _message: String, _log: &BoundedLog) {}
    fn logged(&self, _log: &BoundedLog) {}
}

const FIVE_CYCLE: &str =
    r#"{"num_nodes":5,"adj_matrix":[[0,1,0,0,1],[1,0,1,0,0],[0,1,0,1,0],[0,0,1,0,1],[1,0,0,1,0]]}"#;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // As typed at the repository's root: `cargo bench` runs benches from `host/`.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(&args.component);
    let wasm = std::fs::read(&path)?;
    println!(
        "{}: {:.1} MB",
        args.component.display(),
        wasm.len() as f64 / 1e6
    );
    let limits = Limits::default();
    let pooled = || RuntimeConfig::default().with_pooling(limits.memory_bytes, 16);

    // Cold compiles, each in a fresh engine without a cache.
    let mut compiles = Vec::new();
    for _ in 0..args.compiles {
        let runtime = Runtime::with_config(&pooled())?;
        let started = Instant::now();
        runtime.compile(&wasm)?;
        compiles.push(started.elapsed());
    }
    print_summary("cold compile", &mut compiles);

    // The compile cache: filled once, then read by fresh engines as a restart would.
    let cache_dir = tempfile::tempdir()?;
    let cached = || pooled().with_compile_cache(cache_dir.path().to_owned());
    Runtime::with_config(&cached())?.compile(&wasm)?;
    let entry_bytes: u64 = walk(cache_dir.path()).iter().sum();
    let mut loads = Vec::new();
    let mut plugin = None;
    for _ in 0..5 {
        let runtime = Runtime::with_config(&cached())?;
        let started = Instant::now();
        let compiled = runtime.compile(&wasm)?;
        loads.push(started.elapsed());
        assert_eq!(compiled.code_origin().as_str(), "compile-cache");
        plugin = Some((runtime, compiled));
    }
    print_summary("compile-cache load", &mut loads);
    println!("  compile-cache entry: {:.1} MB", entry_bytes as f64 / 1e6);
    let (runtime, plugin) = plugin.expect("five loads");
    println!("instance allocation: {:?}", runtime.allocation());

    // Per call: instantiate + describe, then instantiate + run on the first example.
    let info = plugin.describe(&limits)?;
    let schema: Value = serde_json::from_str(&info.input_schema)?;
    let example = schema["examples"][0].to_string();
    let mut describes = timed_calls(args.calls, || {
        plugin.describe(&limits).expect("describe");
    });
    print_summary(
        &format!("{}: instantiate + describe", info.name),
        &mut describes,
    );
    let mut peak = 0;
    let mut runs = timed_calls(args.calls, || {
        peak = run(&plugin, &example, &limits);
    });
    print_summary(
        &format!("{}: instantiate + run (example 1)", info.name),
        &mut runs,
    );
    println!(
        "  peak linear memory of one instance: {:.1} MB",
        peak as f64 / 1e6
    );

    // Max-cut in the same pool: one call right after another max-cut call, one right after a
    // call of the component (whose instance has just given its slot back), and one right
    // after native code wrote as many bytes as the component's instance peaked at, which
    // evicts the caches alike without touching the pool.
    let maxcut = runtime.compile(MAXCUT_WASM.as_slice())?;
    let rounds = args.calls * 4;
    let mut alone = Vec::new();
    let mut after = Vec::new();
    let mut after_sweep = Vec::new();
    let time_maxcut = |samples: &mut Vec<Duration>| {
        samples.push(time(|| {
            run(&maxcut, FIVE_CYCLE, &limits);
        }));
    };
    for _ in 0..rounds {
        run(&maxcut, FIVE_CYCLE, &limits);
        time_maxcut(&mut alone);
        run(&plugin, &example, &limits);
        time_maxcut(&mut after);
        sweep(peak);
        time_maxcut(&mut after_sweep);
    }
    print_summary(
        "max-cut instantiate + run, after a max-cut call",
        &mut alone,
    );
    print_summary(
        &format!("max-cut instantiate + run, after a {} call", info.name),
        &mut after,
    );
    print_summary(
        &format!(
            "max-cut instantiate + run, after writing {:.1} MB natively",
            peak as f64 / 1e6
        ),
        &mut after_sweep,
    );
    println!(
        "  ratios of medians to after max-cut: after {} {:.2}, after the native writes {:.2}",
        info.name,
        median(&after).as_secs_f64() / median(&alone).as_secs_f64(),
        median(&after_sweep).as_secs_f64() / median(&alone).as_secs_f64()
    );
    Ok(())
}

fn run(plugin: &CompiledPlugin, input: &str, limits: &Limits) -> usize {
    let options = RunOptions {
        time_limit: Duration::from_secs(10),
        seed: 1,
        max_iterations: None,
    };
    let report = plugin.run(
        input,
        &options,
        limits,
        Arc::new(AtomicBool::new(false)),
        Arc::new(Quiet),
    );
    report.result.expect("the example runs");
    report.peak_memory_bytes
}

/// Writes one byte in every cache line of `bytes` fresh bytes.
fn sweep(bytes: usize) {
    let mut buffer = vec![1u8; bytes];
    for byte in buffer.iter_mut().step_by(64) {
        *byte = byte.wrapping_add(1);
    }
    std::hint::black_box(&buffer);
}

fn timed_calls(calls: usize, mut call: impl FnMut()) -> Vec<Duration> {
    call();
    (0..calls).map(|_| time(&mut call)).collect()
}

fn time(mut work: impl FnMut()) -> Duration {
    let started = Instant::now();
    work();
    started.elapsed()
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn print_summary(what: &str, samples: &mut [Duration]) {
    samples.sort();
    println!(
        "{what}: median {} (min {}, max {}, {} samples)",
        show(samples[samples.len() / 2]),
        show(samples[0]),
        show(samples[samples.len() - 1]),
        samples.len()
    );
}

fn show(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// The sizes of the files under `dir`.
fn walk(dir: &std::path::Path) -> Vec<u64> {
    let mut sizes = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sizes.extend(walk(&path));
        } else if let Ok(metadata) = entry.metadata() {
            sizes.push(metadata.len());
        }
    }
    sizes
}
