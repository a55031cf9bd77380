//! The cost of one job in the sandbox, without HTTP or the database: a fresh `Store`,
//! instantiation through `InstancePre`, and max-cut's `run` on a 5-node graph.
//!
//! Run: `cargo bench -p caseload-host --bench instantiate_run` (on-demand allocation, a fresh
//! `mmap` per instance), or with `-- --pooling` (the instance pool the server uses).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use caseload::plugins::MAXCUT_WASM;
use caseload::runtime::{
    BoundedLog, ExecutionObserver, Limits, RunOptions, Runtime, RuntimeConfig,
};

struct IgnoreProgress;

impl ExecutionObserver for IgnoreProgress {
    fn progress(&self, _fraction: f64, _message: String, _log: &BoundedLog) {}

    fn logged(&self, _log: &BoundedLog) {}
}

const FIVE_CYCLE: &str =
    r#"{"num_nodes":5,"adj_matrix":[[0,1,0,0,1],[1,0,1,0,0],[0,1,0,1,0],[0,0,1,0,1],[1,0,0,1,0]]}"#;

fn main() {
    let pooling = std::env::args().any(|argument| argument == "--pooling");
    let mut config = RuntimeConfig::default();
    if pooling {
        config = config.with_pooling(Limits::default().memory_bytes, 16);
    }
    let runtime = Runtime::with_config(&config).expect("the engine starts");
    println!("instance allocation: {:?}", runtime.allocation());
    let started = Instant::now();
    let plugin = runtime
        .compile(MAXCUT_WASM.as_slice())
        .expect("max-cut compiles");
    let compile = started.elapsed();

    let limits = Limits::default();
    let options = RunOptions {
        time_limit: Duration::from_secs(10),
        seed: 1,
        max_iterations: None,
    };
    let observer: Arc<dyn ExecutionObserver> = Arc::new(IgnoreProgress);
    let run = || {
        let report = plugin.run(
            FIVE_CYCLE,
            &options,
            &limits,
            Arc::new(AtomicBool::new(false)),
            observer.clone(),
        );
        assert!(
            report
                .result
                .expect("max-cut solves the 5-cycle")
                .contains("\"cut_value\":4")
        );
    };

    for _ in 0..200 {
        run();
    }
    let mut samples = Vec::new();
    let rounds = 20;
    let per_round = 250;
    for _ in 0..rounds {
        let started = Instant::now();
        for _ in 0..per_round {
            run();
        }
        samples.push(started.elapsed() / per_round);
    }
    samples.sort();
    let validate_started = Instant::now();
    for _ in 0..1000 {
        plugin
            .validate(FIVE_CYCLE, &limits)
            .expect("the 5-cycle is valid");
    }
    let validate = validate_started.elapsed() / 1000;

    println!(
        "max-cut component: {} bytes, compiled in {:.1} ms",
        MAXCUT_WASM.as_slice().len(),
        compile.as_secs_f64() * 1e3
    );
    println!(
        "instantiate + run (5-node graph), {} rounds of {per_round}:",
        rounds
    );
    println!("  min    {:>8.1} µs", micros(samples[0]));
    println!("  median {:>8.1} µs", micros(samples[samples.len() / 2]));
    println!("  max    {:>8.1} µs", micros(samples[samples.len() - 1]));
    println!(
        "instantiate + validate (5-node graph): {:.1} µs",
        micros(validate)
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
