//! What the solver benches share: running a use case's component in the sandbox under a
//! job's limits, running instances' seeds on parallel threads, and reading best-known values.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};
use caseload::config::{SandboxArgs, SandboxPlace, UseCaseLimits};
use caseload::options::JobOptions;
use caseload::runtime::{
    BoundedLog, CompiledPlugin, ExecutionObserver, Limits, RunOptions, RunReport, Runtime,
    RuntimeConfig,
};
use caseload::sandbox_process::SandboxProcesses;
use caseload_sdk::{RunContext, UseCase};
use serde_json::Value;

/// A use case's component, compiled as the server compiles it, with a job's limits.
pub struct Sandbox {
    plugin: CompiledPlugin,
    limits: UseCaseLimits,
    /// Where runs go if not in this process: sandbox processes of the `caseload` binary, as
    /// the server runs jobs with long time limits.
    processes: Option<SandboxProcesses>,
}

/// What a sandboxed run returned.
pub struct SandboxRun {
    pub output: Value,
    pub peak_memory_bytes: usize,
}

impl Sandbox {
    /// As the server does: instances from a pool, each memory up to the job's cap, and time
    /// limits up to `max_seconds`.
    pub fn new(wasm: &[u8], max_seconds: f64) -> anyhow::Result<Sandbox> {
        Sandbox::with_config(wasm, max_seconds, RuntimeConfig::default())
    }

    /// As [`Sandbox::new`], with the engine set up by `config`.
    pub fn with_config(
        wasm: &[u8],
        max_seconds: f64,
        config: RuntimeConfig,
    ) -> anyhow::Result<Sandbox> {
        let runtime =
            Runtime::with_config(&config.with_pooling(Limits::default().memory_bytes, 4))?;
        Ok(Sandbox {
            plugin: runtime.compile(wasm)?,
            limits: UseCaseLimits {
                default_time_limit: Duration::from_secs(10),
                max_time_limit: Duration::from_secs_f64(max_seconds.max(60.0)),
                sandbox: Limits::default(),
            },
            processes: None,
        })
    }

    /// As the server runs a use case's jobs of `seconds` once one of them was long (its
    /// first runs in its own process): in a sandbox process from 1 s on
    /// (`--sandbox-processes-from`), in this process with epoch checks below.
    pub fn as_server(wasm: &[u8], seconds: f64) -> anyhow::Result<Sandbox> {
        if seconds >= 1.0 {
            Sandbox::in_processes(wasm, seconds)
        } else {
            Sandbox::new(wasm, seconds)
        }
    }

    /// As the server runs a job with a long time limit: in a sandbox process of the
    /// `caseload` binary, compiled without epoch checks and killed at the deadline.
    pub fn in_processes(wasm: &[u8], max_seconds: f64) -> anyhow::Result<Sandbox> {
        let config = SandboxArgs {
            memory_bytes: Limits::default().memory_bytes,
            compile_cache_dir: None,
        };
        Ok(Sandbox {
            processes: Some(SandboxProcesses::of_program(
                PathBuf::from(env!("CARGO_BIN_EXE_caseload")),
                Duration::ZERO,
                &config,
            )),
            ..Sandbox::new(wasm, max_seconds)?
        })
    }

    /// Runs the component on an input, as a job with these options.
    pub fn run(&self, name: &str, json: &str, options: &JobOptions) -> anyhow::Result<SandboxRun> {
        let report = self.run_observed(
            json,
            options,
            Arc::new(AtomicBool::new(false)),
            Arc::new(IgnoreProgress),
        );
        let output = report
            .result
            .map_err(|error| anyhow::anyhow!("{name}: the sandboxed run failed: {error}"))?;
        Ok(SandboxRun {
            output: serde_json::from_str(&output)?,
            peak_memory_bytes: report.peak_memory_bytes,
        })
    }

    /// Runs the component on an input, as a job with these options, telling `observer` what
    /// it reports; setting `cancelled` cancels the run.
    pub fn run_observed(
        &self,
        json: &str,
        options: &JobOptions,
        cancelled: Arc<AtomicBool>,
        observer: Arc<dyn ExecutionObserver>,
    ) -> RunReport {
        let run_options = RunOptions {
            time_limit: options.time_limit(),
            seed: options.seed,
            max_iterations: options.max_iterations,
        };
        let limits = self.limits.for_run(options);
        match &self.processes {
            Some(processes) => processes.run(
                &self.plugin,
                SandboxPlace::Process,
                json,
                &run_options,
                &limits,
                cancelled,
                observer,
            ),
            None => self
                .plugin
                .run(json, &run_options, &limits, cancelled, observer),
        }
    }
}

struct IgnoreProgress;

impl ExecutionObserver for IgnoreProgress {
    fn progress(&self, _fraction: f64, _message: String, _log: &BoundedLog) {}

    fn logged(&self, _log: &BoundedLog) {}
}

/// The options of a timed run with a seed.
pub fn timed(seconds: f64, seed: u64) -> JobOptions {
    JobOptions {
        time_limit_ms: (seconds * 1000.0) as u64,
        seed,
        max_iterations: None,
        memory_limit_mib: None,
        priority: 0,
    }
}

/// Runs `run(instance, seed)` for seeds `1..=seeds` of every instance on `parallel` threads,
/// and hands each instance's outcomes, in seed order, to `done` in the order of `instances`,
/// as soon as they and the instances before them are in.
pub fn for_each_instance<I: Sync, O: Clone + Send>(
    instances: &[I],
    seeds: u64,
    parallel: usize,
    run: impl Fn(&I, u64) -> anyhow::Result<O> + Sync,
    mut done: impl FnMut(&I, &[O]),
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
        let mut outcomes: Vec<Vec<Option<O>>> = vec![vec![None; seeds as usize]; instances.len()];
        let mut printed = 0;
        for (index, seed, outcome) in receiver {
            outcomes[index][(seed - 1) as usize] = Some(outcome?);
            while printed < instances.len() && outcomes[printed].iter().all(Option::is_some) {
                let complete: Vec<O> = outcomes[printed].iter().flatten().cloned().collect();
                done(&instances[printed], &complete);
                printed += 1;
            }
        }
        Ok(())
    })
}

/// Reads an instance file (a path as typed at the repository's root) with the use case's own
/// `decode`, as a dataset of this media type would be read.
pub fn decode_file<U: UseCase>(path: &Path, media_type: &str) -> anyhow::Result<U::Input> {
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    U::decode(media_type, &data).map_err(|violations| {
        anyhow::anyhow!(
            "{}: {}",
            path.display(),
            violations
                .iter()
                .map(|violation| violation.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

/// Runs the use case natively on a JSON input, as a job with these options; its output.
pub fn run_native<U: UseCase>(
    name: &str,
    json: &str,
    options: &JobOptions,
) -> anyhow::Result<Value> {
    let input: U::Input = serde_json::from_str(json)?;
    let context = RunContext::new(options.time_limit(), options.seed, options.max_iterations);
    let output = U::run(input, &context)
        .map_err(|error| anyhow::anyhow!("{name}: the native run failed: {error:?}"))?;
    Ok(serde_json::to_value(&output)?)
}

/// `path` as typed at the repository's root (`cargo bench` runs benches from `host/`).
pub fn from_root(path: &Path) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// A file's name without its extension: what the best-known CSVs call an instance.
pub fn instance_name(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A number at a JSON pointer of a run's output.
pub fn number(output: &Value, pointer: &str, name: &str) -> anyhow::Result<f64> {
    output
        .pointer(pointer)
        .and_then(Value::as_f64)
        .with_context(|| format!("{name}: the output has no {pointer}"))
}

/// `instance` to its best-known value, from a CSV with a header naming the columns.
pub fn read_best_known(path: &Path) -> anyhow::Result<HashMap<String, f64>> {
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

pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        len if len % 2 == 1 => sorted[len / 2],
        len => (sorted[len / 2 - 1] + sorted[len / 2]) / 2.0,
    }
}
