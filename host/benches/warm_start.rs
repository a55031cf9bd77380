//! Warm starts of max-cut, through the real sandbox: per instance and seed, a run of
//! `--seconds` (10), then a second run of as long from its partition (`initial_partition`, as
//! `options.warm_start` fills it), against one run of twice as long with the same seed, on
//! the other core at the same time. Prints the three cuts and the gain of the warm start
//! over the start and over the long run; a warm start below its start is an error.
//!
//! ```sh
//! cargo bench -p caseload-host --bench warm_start -- --seconds 10 --seeds 2 \
//!     ../shared/gset/G{55..60}.txt
//! ```

// Shared with the maxcut and qubo benches, which use the rest of it.
#[allow(dead_code)]
mod common;

use std::path::PathBuf;

use anyhow::ensure;
use caseload::plugins::MAXCUT_WASM;
use caseload_maxcut::{MaxCut, RUDY_MEDIA_TYPE};
use clap::Parser;
use serde_json::Value;

use common::{Sandbox, decode_file, from_root, instance_name, median, number, timed};

#[derive(Debug, Parser)]
#[command(about = "Max-cut warm starts against one long run, in the sandbox")]
struct Args {
    /// The length of the start and of the warm start, in seconds; the long run takes twice.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Seeds per instance: 1, 2, ...
    #[arg(long, default_value_t = 2)]
    seeds: u64,
    /// G-set (rudy) files.
    instances: Vec<PathBuf>,
}

/// One seed's three cuts.
struct Outcome {
    start: f64,
    warm: f64,
    long: f64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(std::env::args().filter(|argument| argument != "--bench"));
    ensure!(!args.instances.is_empty(), "name some G-set files");
    let sandbox = Sandbox::as_server(MAXCUT_WASM.as_slice(), args.seconds * 2.0)?;
    println!(
        "{:<8} {:>4} {:>9} {:>9} {:>9} {:>8} {:>8}",
        "instance", "seed", "start", "warm", "long", "warm-st", "warm-lng"
    );
    let mut gains = Vec::new();
    for path in &args.instances {
        let path = from_root(path);
        let name = instance_name(&path);
        let input = decode_file::<MaxCut>(&path, RUDY_MEDIA_TYPE)?;
        let input = serde_json::to_value(&input)?;
        let cold = input.to_string();
        for seed in 1..=args.seeds {
            let outcome = std::thread::scope(|scope| -> anyhow::Result<Outcome> {
                let long =
                    scope.spawn(|| sandbox.run(&name, &cold, &timed(args.seconds * 2.0, seed)));
                let start = sandbox.run(&name, &cold, &timed(args.seconds, seed))?;
                let mut warm_input: Value = input.clone();
                warm_input["initial_partition"] = start.output["partition"].clone();
                let warm = sandbox.run(
                    &name,
                    &warm_input.to_string(),
                    &timed(args.seconds, seed + 1_000),
                )?;
                let long = long
                    .join()
                    .map_err(|_| anyhow::anyhow!("the long run panicked"))??;
                Ok(Outcome {
                    start: number(&start.output, "/cut_value", &name)?,
                    warm: number(&warm.output, "/cut_value", &name)?,
                    long: number(&long.output, "/cut_value", &name)?,
                })
            })?;
            ensure!(
                outcome.warm >= outcome.start,
                "{name} seed {seed}: the warm start ended at {} below its start {}",
                outcome.warm,
                outcome.start
            );
            println!(
                "{name:<8} {seed:>4} {:>9} {:>9} {:>9} {:>+8} {:>+8}",
                outcome.start,
                outcome.warm,
                outcome.long,
                outcome.warm - outcome.start,
                outcome.warm - outcome.long
            );
            gains.push((outcome.warm - outcome.start, outcome.warm - outcome.long));
        }
    }
    let over_start: Vec<f64> = gains.iter().map(|gain| gain.0).collect();
    let over_long: Vec<f64> = gains.iter().map(|gain| gain.1).collect();
    println!(
        "median gain of the warm start: {:+} over its start, {:+} over one run of {} s; \
         warm ≥ long in {} of {} runs",
        median(&over_start),
        median(&over_long),
        args.seconds * 2.0,
        over_long.iter().filter(|gain| **gain >= 0.0).count(),
        over_long.len()
    );
    Ok(())
}
