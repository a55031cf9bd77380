//! Sandbox processes: long runs go to a pool of long-lived child processes (this binary's
//! hidden `sandbox` command) whose engine compiles guests without epoch checks. The server
//! keeps the hard limits from outside: it kills the process at the deadline, on a cancel, or
//! when a run asked to finish now outlives its grace, and starts another for the next run. A
//! guest then runs as fast as the compiled code allows (the checks cost about a fifth of a
//! solver's time: `docs/benchmarks.md`), and a crash in a guest or in wasmtime takes only
//! its process down. Memory caps are the child's own limiter, as in the server.
//!
//! Short runs stay in the server's process with epoch checks, where a tiny job costs less
//! than a round trip to a process: those with a time limit under `--sandbox-processes-from`,
//! and those of a component whose last runs were all short ([`recent_runs`]). A use case's
//! `sandbox` in `--plugin-limits` may choose for it instead.
//!
//! A process that was picked while it died takes no run (it never answers `Started`), and
//! the run goes to a fresh one. A run sent to a process for speed waits at most a tenth of
//! its time for the component to load there ([`load_patience`]); a longer compile goes on
//! apart, and the run, like every such run of the component until that load ends, runs in
//! the server's process in the time it has left.

mod child;
mod frame;
mod outbox;
mod process;
mod recent_runs;

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use self::child::{ChildError, serve_child};
use self::process::{Loading, SandboxProcess, SlowLoad, Unavailable};
use self::recent_runs::{RecentRuns, thread_cpu_time};
use crate::limits::SandboxPlace;
use crate::runtime::{CompiledPlugin, ExecutionObserver, Limits, RunOptions, RunReport};

/// A sandbox process's settings: the flags of `caseload sandbox`, which the server that
/// starts it passes (`sandbox_process`).
#[derive(Debug, Clone, clap::Args)]
pub struct SandboxArgs {
    /// The memory slot's size: the largest memory cap of any use case, in bytes.
    #[arg(long)]
    pub memory_bytes: usize,
    /// The server's compile cache.
    #[arg(long)]
    pub compile_cache_dir: Option<PathBuf>,
}

/// A process keeps at most this many components; one that would take another is retired
/// and a fresh one starts, so that plugins reloaded all day do not pile up in it.
const MAX_COMPONENTS: usize = 16;

/// Where long runs go: the idle processes, and how to start another.
pub struct SandboxProcesses {
    /// Runs whose time limit is at least this go to a process.
    from: Duration,
    program: PathBuf,
    args: Vec<OsString>,
    idle: Arc<Mutex<Vec<SandboxProcess>>>,
    /// Components a process is loading apart from any run ([`SandboxProcesses::finish_loading`]).
    loading: Arc<Mutex<HashSet<String>>>,
    recent: RecentRuns,
}

impl std::fmt::Debug for SandboxProcesses {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SandboxProcesses")
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

impl SandboxProcesses {
    /// Processes of this binary (`/proc/self/exe`, which still runs if the file was replaced
    /// since), set up as `config` says, for runs whose time limit is at least `from`.
    pub fn new(from: Duration, config: &SandboxArgs) -> SandboxProcesses {
        let program = if cfg!(target_os = "linux") {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("caseload"))
        };
        SandboxProcesses::of_program(program, from, config)
    }

    /// As [`SandboxProcesses::new`], with processes of `program` (a `caseload` binary): for
    /// a bench, whose own binary is not one.
    pub fn of_program(program: PathBuf, from: Duration, config: &SandboxArgs) -> SandboxProcesses {
        let mut args: Vec<OsString> = vec![
            "sandbox".into(),
            "--memory-bytes".into(),
            config.memory_bytes.to_string().into(),
        ];
        if let Some(dir) = &config.compile_cache_dir {
            args.push("--compile-cache-dir".into());
            args.push(dir.into());
        }
        SandboxProcesses {
            from,
            program,
            args,
            idle: Arc::default(),
            loading: Arc::default(),
            recent: RecentRuns::default(),
        }
    }

    /// Runs `plugin` as [`CompiledPlugin::run`] does, with the same limits, reports and
    /// errors, where `place` says: left to choose, in a sandbox process if its time limit is
    /// at least `from` and one of the component's last runs was long ([`RecentRuns`]). In
    /// this process otherwise, or if no process can take it.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        plugin: &CompiledPlugin,
        place: SandboxPlace,
        input: &str,
        options: &RunOptions,
        limits: &Limits,
        cancelled: Arc<AtomicBool>,
        observer: Arc<dyn ExecutionObserver>,
    ) -> RunReport {
        let in_a_process = match place {
            SandboxPlace::Process => true,
            SandboxPlace::Server => false,
            SandboxPlace::Auto => {
                options.time_limit >= self.from && self.recent.long_lately(plugin.wasm_sha256())
            }
        };
        let started = Instant::now();
        let (report, run_time) = if in_a_process {
            // A process asked for by name waits for its load: the place is the operator's
            // demand. Chosen for speed, it is not worth more than a tenth of the run.
            let patience = match place {
                SandboxPlace::Process => None,
                SandboxPlace::Auto | SandboxPlace::Server => Some(load_patience(options)),
            };
            let report = self.run_in_a_process(
                plugin, patience, input, options, limits, cancelled, observer,
            );
            (report, started.elapsed())
        } else {
            let cpu_before = thread_cpu_time();
            let report = plugin.run(input, options, limits, cancelled, observer);
            let cpu = cpu_before.zip(thread_cpu_time());
            let run_time = cpu.map_or_else(
                || started.elapsed(),
                |(before, after)| after.saturating_sub(before),
            );
            (report, run_time)
        };
        self.recent.record(plugin.wasm_sha256(), run_time);
        report
    }

    #[allow(clippy::too_many_arguments)]
    fn run_in_a_process(
        &self,
        plugin: &CompiledPlugin,
        patience: Option<Duration>,
        input: &str,
        options: &RunOptions,
        limits: &Limits,
        cancelled: Arc<AtomicBool>,
        observer: Arc<dyn ExecutionObserver>,
    ) -> RunReport {
        let began = Instant::now();
        // A run that gave up on a process runs in what is left of its time: the job's clock
        // began with the wait (a tenth of its time limit at most, unless a process that was
        // demanded failed). A process's own load from the compile cache takes milliseconds,
        // and the guest then has its whole time.
        let left = || {
            let waited = began.elapsed();
            let options = RunOptions {
                time_limit: options.time_limit.saturating_sub(waited),
                ..*options
            };
            let limits = Limits {
                wall_time: limits.wall_time.saturating_sub(waited),
                ..*limits
            };
            (options, limits)
        };
        // One that holds the component already, if any is idle; dropping one kills it, and
        // one that died while idle (the OOM killer, an operator) is dropped too. None if a
        // process is loading the component apart already, for a run that would not wait for
        // a second one to.
        let (idle, loading_elsewhere) = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.retain_mut(SandboxProcess::is_alive);
            let holding = idle.iter().rposition(|process| process.holds(plugin));
            let loading_elsewhere = holding.is_none()
                && patience.is_some()
                && self.loading().contains(plugin.wasm_sha256());
            let picked = if loading_elsewhere {
                None
            } else {
                holding
                    .or(idle.len().checked_sub(1))
                    .map(|index| idle.swap_remove(index))
            };
            (picked, loading_elsewhere)
        };
        let idle =
            idle.filter(|process| process.holds(plugin) || process.components() < MAX_COMPONENTS);
        let attempt = |process: SandboxProcess| {
            let mut process = match process.load(plugin, &cancelled, patience) {
                Ok(process) => process,
                Err(Loading::Failed(why)) => return Err(why),
                Err(Loading::Slow(load)) => {
                    self.finish_loading(plugin.wasm_sha256(), load);
                    return Err(Unavailable::Compiling);
                }
            };
            let (report, reusable) = process.run(
                plugin,
                input,
                options,
                limits,
                &cancelled,
                observer.as_ref(),
            )?;
            Ok::<_, Unavailable>((process, report, reusable))
        };
        let fresh = || SandboxProcess::spawn(&self.program, &self.args).map_err(Unavailable::Spawn);
        let ran = match idle {
            _ if loading_elsewhere => Err(Unavailable::Compiling),
            // An idle process that was gone when asked (it was dying as it was picked)
            // leaves the run to a fresh one.
            Some(process) => attempt(process).or_else(|why| match why {
                Unavailable::Gone(_) if !cancelled.load(Ordering::Relaxed) => {
                    tracing::warn!(%why, "starting another sandbox process");
                    fresh().and_then(attempt)
                }
                _ => Err(why),
            }),
            None => fresh().and_then(attempt),
        };
        let (process, report, reusable) = match ran {
            Ok(ran) => ran,
            Err(why) => {
                tracing::info!(%why, "running the job in the server's process");
                let (options, limits) = left();
                return plugin.run(input, &options, &limits, cancelled, observer);
            }
        };
        if reusable {
            self.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(process);
        }
        report
    }

    /// The components loading in a process apart from any run, by sha256.
    fn loading(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.loading.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets `load` of the component `sha256` go on on a thread of its own; the process
    /// joins the idle ones if it ends loaded.
    fn finish_loading(&self, sha256: &str, load: Box<SlowLoad>) {
        let (idle, loading) = (self.idle.clone(), self.loading.clone());
        let key = sha256.to_owned();
        self.loading().insert(key.clone());
        let spawned = std::thread::Builder::new()
            .name("sandbox-load".into())
            .spawn(move || {
                let loaded = load.finish();
                // Idle before the component counts as loading no more, so that no run finds
                // neither.
                if let Some(process) = loaded {
                    idle.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(process);
                }
                loading
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&key);
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot wait for a sandbox process's load");
            self.loading().remove(sha256);
        }
    }
}

/// How long a run sent to a sandbox process for speed waits for it to load the component: a
/// tenth of its time limit, at least half a second (a compile cache's entry loads in far
/// less). A component new to the processes' engine may compile for seconds (tens of seconds
/// for a large one in a debug build); the run does not wait for that, but runs in the
/// server's process, where the component is compiled already, while the load goes on for
/// the runs after it.
fn load_patience(options: &RunOptions) -> Duration {
    (options.time_limit / 10).max(Duration::from_millis(500))
}
