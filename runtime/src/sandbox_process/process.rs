//! One sandbox process as the server drives it: started, given components, given a run and
//! watched until it answers, or killed at the deadline, on a cancel, or when a run asked to
//! finish now outlives its grace.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{self, BufReader, BufWriter};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::frame::{ToChild, ToServer, read_frame, write_frame};
// A waiting server looks at the deadline, the cancel flag and finish-now as often as the
// epoch callback does for runs in its own process.
use crate::runtime::EPOCH_TICK as TICK;
use crate::runtime::{
    BoundedLog, CallError, CompiledPlugin, ExecutionObserver, Limits, RunOptions, RunReport,
};

/// How long a sandbox process may take to compile a component (or read it from the compile
/// cache) before the server gives up on it and runs the job in its own process.
const LOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a process between runs may take to say it took one: it answers at once, unless
/// it is stuck or dying.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a run could not go to a sandbox process; it runs in the server's process instead.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unavailable {
    /// No process could be started (the binary is gone, no more processes allowed...).
    #[error("cannot start a sandbox process: {0}")]
    Spawn(io::Error),
    /// The process could not compile the component, answered out of turn, or took too long.
    #[error("the sandbox process did not load the component: {0}")]
    Load(String),
    /// The process was gone when asked to load or run (it exited, or its pipes broke): it
    /// died since its last run, and another process can take this one.
    #[error("the sandbox process was gone: {0}")]
    Gone(String),
    /// The component was not loaded within the run's patience; it goes on loading apart.
    #[error("the sandbox process is still compiling the component")]
    Compiling,
    /// The process did not take the run: it answered out of turn or not in time, or the run
    /// was cancelled first.
    #[error("the sandbox process took no run: {0}")]
    Run(String),
}

/// How a load that did not end in a loaded process ended.
pub(super) enum Loading {
    /// The process cannot take the run.
    Failed(Unavailable),
    /// The component still compiles: the run goes elsewhere, the load goes on.
    Slow(Box<SlowLoad>),
}

/// A process still loading a component, given up on by the run that asked for it.
pub(super) struct SlowLoad {
    process: SandboxProcess,
    sha256: String,
    deadline: Instant,
}

impl SlowLoad {
    /// Waits for the load to end (at most [`LOAD_TIMEOUT`] since it was asked for): the
    /// process, holding the component, if it did.
    pub(super) fn finish(mut self) -> Option<SandboxProcess> {
        match self.process.await_loaded(&self.sha256, None, self.deadline) {
            Ok(true) => Some(self.process),
            Ok(false) => {
                tracing::warn!("a sandbox process took too long to load a component");
                None
            }
            Err(why) => {
                tracing::warn!(%why, "a sandbox process loading in the background");
                None
            }
        }
    }
}

/// One child process, between runs or in one. Dropping it kills the process.
pub(super) struct SandboxProcess {
    child: Child,
    input: BufWriter<ChildStdin>,
    /// Its frames, read on a thread of their own; an error or a closed channel means the
    /// process is gone.
    frames: mpsc::Receiver<io::Result<(ToServer, Vec<u8>)>>,
    /// The sha256 of the components it holds.
    loaded: HashSet<String>,
}

impl SandboxProcess {
    pub(super) fn spawn(program: &Path, args: &[OsString]) -> io::Result<SandboxProcess> {
        // A process group of its own: a Ctrl-C in the server's terminal, or a signal to the
        // server's group, is the server's to handle (it lets running jobs finish or gives
        // them back), not a crash of the jobs' processes.
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("the child's pipes are missing"));
        };
        let (sender, frames) = mpsc::channel();
        let reader = std::thread::Builder::new()
            .name("sandbox-frames".into())
            .spawn(move || {
                let mut output = BufReader::new(output);
                loop {
                    let frame = match read_frame::<ToServer>(&mut output) {
                        Ok(Some(frame)) => Ok(frame),
                        Ok(None) => return,
                        Err(error) => Err(error),
                    };
                    let failed = frame.is_err();
                    if sender.send(frame).is_err() || failed {
                        return;
                    }
                }
            });
        if let Err(error) = reader {
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
        tracing::debug!(pid = child.id(), "sandbox process started");
        Ok(SandboxProcess {
            child,
            input: BufWriter::new(input),
            frames,
            loaded: HashSet::new(),
        })
    }

    /// Whether the process still runs (it may have been killed while idle).
    pub(super) fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Whether it holds `plugin`'s component.
    pub(super) fn holds(&self, plugin: &CompiledPlugin) -> bool {
        self.loaded.contains(plugin.wasm_sha256())
    }

    /// How many components it holds.
    pub(super) fn components(&self) -> usize {
        self.loaded.len()
    }

    /// Makes sure the process holds `plugin`'s component, waiting for it to compile (or be
    /// read from the compile cache) until `patience` is over, if given, or [`LOAD_TIMEOUT`].
    /// A load still under way after `patience` is handed back as [`Loading::Slow`], to be
    /// finished apart from the run.
    pub(super) fn load(
        mut self,
        plugin: &CompiledPlugin,
        cancelled: &AtomicBool,
        patience: Option<Duration>,
    ) -> Result<SandboxProcess, Loading> {
        let patience = patience.unwrap_or(LOAD_TIMEOUT);
        if self.loaded.contains(plugin.wasm_sha256()) {
            return Ok(self);
        }
        let load = ToChild::Load {
            sha256: plugin.wasm_sha256().to_owned(),
        };
        write_frame(&mut self.input, &load, plugin.wasm())
            .map_err(|error| Loading::Failed(Unavailable::Gone(error.to_string())))?;
        let deadline = Instant::now() + patience.min(LOAD_TIMEOUT);
        match self.await_loaded(plugin.wasm_sha256(), Some(cancelled), deadline) {
            Ok(true) => Ok(self),
            Ok(false) if patience >= LOAD_TIMEOUT => Err(Loading::Failed(Unavailable::Load(
                "it took too long".to_owned(),
            ))),
            Ok(false) => Err(Loading::Slow(Box::new(SlowLoad {
                process: self,
                sha256: plugin.wasm_sha256().to_owned(),
                deadline: Instant::now() + LOAD_TIMEOUT.saturating_sub(patience),
            }))),
            Err(why) => Err(Loading::Failed(why)),
        }
    }

    /// Waits for the answer to a `Load` of `sha256` until `deadline` (false if it has not
    /// come) or until `cancelled` is set.
    fn await_loaded(
        &mut self,
        sha256: &str,
        cancelled: Option<&AtomicBool>,
        deadline: Instant,
    ) -> Result<bool, Unavailable> {
        loop {
            match self.frames.recv_timeout(TICK) {
                Ok(Ok((ToServer::Loaded(Ok(())), _))) => {
                    self.loaded.insert(sha256.to_owned());
                    return Ok(true);
                }
                Ok(Ok((ToServer::Loaded(Err(message)), _))) => {
                    return Err(Unavailable::Load(message));
                }
                Ok(Ok((other, _))) => {
                    return Err(Unavailable::Load(format!("it answered {other:?}")));
                }
                Ok(Err(error)) => return Err(Unavailable::Gone(error.to_string())),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Unavailable::Gone(format!("it exited ({})", self.end())));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if cancelled.is_some_and(|cancelled| cancelled.load(Ordering::Relaxed)) {
                        return Err(Unavailable::Load("the run was cancelled first".to_owned()));
                    }
                    if Instant::now() >= deadline {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Runs the component, passing on what the guest reports, until it answers or is
    /// stopped. Returns the report and whether the process can take another run; an error if
    /// the process took no run, which then has not begun.
    pub(super) fn run(
        &mut self,
        plugin: &CompiledPlugin,
        input: &str,
        options: &RunOptions,
        limits: &Limits,
        cancelled: &AtomicBool,
        observer: &dyn ExecutionObserver,
    ) -> Result<(RunReport, bool), Unavailable> {
        let deadline = Instant::now() + limits.wall_time;
        // What the guest logged, as far as its reports told: the log of a run that is
        // killed, and what progress and log writes read meanwhile.
        let log = BoundedLog::new(limits.log_bytes);
        let run = ToChild::Run {
            sha256: plugin.wasm_sha256().to_owned(),
            options: *options,
            limits: *limits,
        };
        write_frame(&mut self.input, &run, input.as_bytes())
            .map_err(|error| Unavailable::Gone(error.to_string()))?;
        self.started(cancelled, limits.wall_time)?;
        let mut finish_by: Option<Instant> = None;
        loop {
            match self.frames.recv_timeout(TICK) {
                Ok(Ok((ToServer::Report(report), _))) => {
                    log.append(&report.log);
                    for (objective, solution) in report.incumbents {
                        observer.incumbent(objective, solution);
                    }
                    match report.progress {
                        Some((fraction, message)) => observer.progress(fraction, message, &log),
                        None if report.logged => observer.logged(&log),
                        None => {}
                    }
                }
                Ok(Ok((
                    ToServer::Done {
                        result,
                        log: tail,
                        peak_memory_bytes,
                    },
                    output,
                ))) => {
                    let result = match result {
                        // Stopped while it ran: what it returned does not count, as in the
                        // server's own process.
                        _ if cancelled.load(Ordering::Relaxed) => Err(CallError::Cancelled),
                        Ok(()) => String::from_utf8(output).map_err(|_| {
                            CallError::PluginFailed("the output is not UTF-8".to_owned())
                        }),
                        Err(error) => Err(error),
                    };
                    let report = RunReport {
                        result,
                        log: tail,
                        peak_memory_bytes,
                    };
                    return Ok((report, true));
                }
                Ok(Ok((other, _))) => {
                    return Ok(self.died(&log, format!("it answered a run with {other:?}")));
                }
                Ok(Err(error)) => return Ok(self.died(&log, error.to_string())),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.end();
                    return Ok(self.died(&log, format!("it exited ({status})")));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            if cancelled.load(Ordering::Relaxed) {
                return Ok(self.killed(&log, CallError::Cancelled));
            }
            if now >= deadline {
                return Ok(self.killed(&log, CallError::Timeout(limits.wall_time)));
            }
            // Asked to finish: the guest hears `cancelled()` and has its grace to return.
            if observer.finishing() {
                match finish_by {
                    None => {
                        finish_by = Some(now + limits.finish_grace);
                        if let Err(error) = write_frame(&mut self.input, &ToChild::Finish, b"") {
                            return Ok(self.died(&log, format!("it took no finish: {error}")));
                        }
                    }
                    Some(by) if now >= by => return Ok(self.killed(&log, CallError::Cancelled)),
                    Some(_) => {}
                }
            }
        }
    }

    /// Waits for the process to take the run it was sent. A process killed while idle (the
    /// OOM killer, an operator) may still have looked alive when it was picked, as the kernel
    /// takes down its threads; it answers nothing, and the run goes elsewhere.
    fn started(&mut self, cancelled: &AtomicBool, wall_time: Duration) -> Result<(), Unavailable> {
        let deadline = Instant::now() + START_TIMEOUT.min(wall_time);
        loop {
            match self.frames.recv_timeout(TICK) {
                Ok(Ok((ToServer::Started, _))) => return Ok(()),
                Ok(Ok((other, _))) => {
                    return Err(Unavailable::Run(format!("it answered {other:?}")));
                }
                Ok(Err(error)) => return Err(Unavailable::Gone(error.to_string())),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Unavailable::Gone(format!("it exited ({})", self.end())));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if cancelled.load(Ordering::Relaxed) {
                        return Err(Unavailable::Run("the run was cancelled first".to_owned()));
                    }
                    if Instant::now() >= deadline {
                        return Err(Unavailable::Run("it did not answer".to_owned()));
                    }
                }
            }
        }
    }

    /// A run whose process went away or spoke out of turn: a trap, as a crash of the guest
    /// in the server's own process would have been, had it not taken the server down.
    fn died(&mut self, log: &BoundedLog, why: String) -> (RunReport, bool) {
        let summary = format!("the sandbox process running it failed: {why}");
        let error = CallError::Trap {
            details: summary.clone(),
            summary,
            panic: None,
        };
        self.killed(log, error)
    }

    /// Kills the process in a run, which ends with `error` and what `log` holds; the
    /// process takes no other run.
    fn killed(&mut self, log: &BoundedLog, error: CallError) -> (RunReport, bool) {
        self.kill();
        let report = RunReport {
            result: Err(error),
            log: log.tail(),
            peak_memory_bytes: 0,
        };
        (report, false)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process, which has closed its output, and says how it ended.
    fn end(&mut self) -> String {
        match self.child.wait() {
            Ok(status) => status.to_string(),
            Err(error) => format!("its status is unknown: {error}"),
        }
    }
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
