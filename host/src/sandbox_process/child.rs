//! A sandbox process (`caseload sandbox`): the server starts it, sends it components and
//! runs over its standard input, and reads reports and results from its standard output. Its
//! engine compiles guests without epoch checks; the server stops a guest by killing the
//! process. One run at a time.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use super::frame::{Report, ToChild, ToServer, read_frame, write_frame};
use crate::runtime::{
    BoundedLog, CallError, CompiledPlugin, ExecutionObserver, Runtime, RuntimeConfig,
};

/// At most one report in this interval: a guest that reports on every step does not spend
/// its time in `write`, and what it reported meanwhile goes with the next one.
const REPORT_INTERVAL: Duration = Duration::from_millis(10);

/// At most this many incumbents wait for the next report; older ones are dropped, as the
/// server's own writer does ([`crate::worker`]'s progress writer keeps 20).
const PENDING_INCUMBENTS: usize = 20;

/// How a sandbox process sets up its engine: as the server's, but for one instance at a time
/// and without epoch checks.
#[derive(Debug, Clone)]
pub struct ChildConfig {
    /// The largest memory cap of any use case: the pooled memory slot's size.
    pub memory_bytes: usize,
    pub compile_cache_dir: Option<PathBuf>,
}

/// Serves the server on standard input and output until the server closes them (or goes).
pub fn serve_child(config: &ChildConfig) -> anyhow::Result<()> {
    let output = protocol_output()?;
    let mut runtime_config = RuntimeConfig::default()
        .without_epoch_checks()
        .with_pooling(config.memory_bytes, 1);
    if let Some(dir) = &config.compile_cache_dir {
        runtime_config = runtime_config.with_compile_cache(dir.clone());
    }
    let runtime = Runtime::with_config(&runtime_config)?;
    let outbox = Arc::new(Outbox {
        writer: Mutex::new(BufWriter::new(output)),
        pending: Mutex::new(Pending::default()),
    });
    let finishing = Arc::new(AtomicBool::new(false));
    let requests = read_requests(finishing.clone());
    spawn_reporter(Arc::downgrade(&outbox));

    let mut plugins: HashMap<String, CompiledPlugin> = HashMap::new();
    for (request, body) in requests {
        match request {
            ToChild::Load { sha256 } => {
                let loaded = match runtime.compile(&body) {
                    Ok(plugin) => {
                        plugins.insert(sha256, plugin);
                        Ok(())
                    }
                    Err(error) => Err(error.to_string()),
                };
                outbox.send(&ToServer::Loaded(loaded), b"");
            }
            ToChild::Run {
                sha256,
                options,
                limits,
            } => {
                // A `Finish` for the run before this one was read before this `Run`.
                finishing.store(false, Ordering::SeqCst);
                outbox.begin_run();
                let report = match (plugins.get(&sha256), String::from_utf8(body)) {
                    (Some(plugin), Ok(input)) => {
                        let observer = Arc::new(ChildObserver {
                            outbox: outbox.clone(),
                            finishing: finishing.clone(),
                        });
                        plugin.run(
                            &input,
                            &options,
                            &limits,
                            Arc::new(AtomicBool::new(false)),
                            observer,
                        )
                    }
                    (None, _) => refused(format!("no component {sha256} was loaded")),
                    (_, Err(_)) => refused("the input is not UTF-8".to_owned()),
                };
                outbox.flush();
                let (result, output) = match report.result {
                    Ok(output) => (Ok(()), output),
                    Err(error) => (Err(error), String::new()),
                };
                let done = ToServer::Done {
                    result,
                    log: report.log,
                    peak_memory_bytes: report.peak_memory_bytes,
                };
                outbox.send(&done, output.as_bytes());
            }
            // The reader thread handles it.
            ToChild::Finish => {}
        }
    }
    Ok(())
}

/// A run the process could not start: the server's mistake, not the guest's.
fn refused(message: String) -> crate::runtime::RunReport {
    crate::runtime::RunReport {
        result: Err(CallError::PluginFailed(format!(
            "the sandbox process: {message}"
        ))),
        log: Default::default(),
        peak_memory_bytes: 0,
    }
}

/// The process's standard output as the protocol's stream, with file descriptor 1 pointed
/// at standard error: anything else that prints (a library, a panic hook) lands in the
/// server's log instead of in the middle of a frame.
fn protocol_output() -> io::Result<File> {
    let stdout = io::stdout();
    let _lock = stdout.lock();
    let protocol = rustix::io::dup(&stdout)?;
    rustix::stdio::dup2_stdout(io::stderr())?;
    Ok(File::from(protocol))
}

/// Reads requests on a thread of their own, so that `Finish` is heard while a run goes on.
/// The process exits when the server closes its end (or dies).
fn read_requests(finishing: Arc<AtomicBool>) -> mpsc::Receiver<(ToChild, Vec<u8>)> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("sandbox-requests".into())
        .spawn(move || {
            let mut input = BufReader::new(io::stdin().lock());
            loop {
                match read_frame::<ToChild>(&mut input) {
                    Ok(Some((ToChild::Finish, _))) => finishing.store(true, Ordering::SeqCst),
                    Ok(Some(request)) => {
                        if sender.send(request).is_err() {
                            return;
                        }
                    }
                    Ok(None) => std::process::exit(0),
                    Err(error) => {
                        tracing::error!(%error, "unreadable request from the server; exiting");
                        std::process::exit(1)
                    }
                }
            }
        })
        .expect("the request thread starts");
    receiver
}

/// Sends what waits every [`REPORT_INTERVAL`], so that a guest that reports once and then
/// computes for a while is not left unheard.
fn spawn_reporter(outbox: std::sync::Weak<Outbox>) {
    std::thread::Builder::new()
        .name("sandbox-reports".into())
        .spawn(move || {
            while let Some(outbox) = outbox.upgrade() {
                outbox.send_report(true);
                drop(outbox);
                std::thread::sleep(REPORT_INTERVAL);
            }
        })
        .expect("the report thread starts");
}

/// Frames on their way to the server, and the report being gathered.
struct Outbox {
    writer: Mutex<BufWriter<File>>,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    report: Report,
    /// The run's log, read into each report.
    log: Option<BoundedLog>,
    /// [`BoundedLog::written`] when the log was last read into a report.
    log_read: u64,
    last_sent: Option<Instant>,
}

impl Outbox {
    fn send(&self, header: &ToServer, body: &[u8]) {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if write_frame(&mut *writer, header, body).is_err() {
            // The server is gone: nobody wants the result.
            std::process::exit(0);
        }
    }

    /// Clears the report for a new run. Its first report goes [`REPORT_INTERVAL`] in, like
    /// every other: a run shorter than that sends only its end.
    fn begin_run(&self) {
        *self.pending.lock().unwrap_or_else(PoisonError::into_inner) = Pending {
            last_sent: Some(Instant::now()),
            ..Pending::default()
        };
    }

    /// The run's log, read into every report from now on.
    fn follow(&self, log: &BoundedLog) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .log = Some(log.clone());
    }

    /// Adds to the report, and sends it if the last went [`REPORT_INTERVAL`] ago.
    fn gather(&self, add: impl FnOnce(&mut Report)) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            add(&mut pending.report);
            let excess = pending
                .report
                .incumbents
                .len()
                .saturating_sub(PENDING_INCUMBENTS);
            pending.report.incumbents.drain(..excess);
        }
        self.send_report(true);
    }

    /// Sends the report, with what the log gained since the last, if it holds anything: at
    /// once, or only if the last went [`REPORT_INTERVAL`] ago. The report is written under
    /// the lock that gathers it, so that the end of a run ([`Outbox::flush`], then `Done`)
    /// never overtakes its last report.
    fn send_report(&self, only_if_due: bool) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let due = pending
            .last_sent
            .is_none_or(|sent| sent.elapsed() >= REPORT_INTERVAL);
        if only_if_due && !due {
            return;
        }
        if let Some(log) = pending.log.clone() {
            let new = log.since(pending.log_read);
            pending.log_read = log.written();
            pending.report.log.extend_from_slice(&new);
        }
        if pending.report.is_empty() {
            return;
        }
        pending.last_sent = Some(Instant::now());
        let report = std::mem::take(&mut pending.report);
        self.send(&ToServer::Report(report), b"");
    }

    /// At the end of a run: sends its progress and incumbents not sent yet. The log stops
    /// being followed, since `Done` carries it whole.
    fn flush(&self) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .log = None;
        self.send_report(false);
    }
}

/// Gathers what the guest reports into the outbox; asked to finish once the server says so.
struct ChildObserver {
    outbox: Arc<Outbox>,
    finishing: Arc<AtomicBool>,
}

impl ExecutionObserver for ChildObserver {
    fn started(&self, log: &BoundedLog) {
        self.outbox.follow(log);
    }

    fn progress(&self, fraction: f64, message: String, _log: &BoundedLog) {
        self.outbox
            .gather(|report| report.progress = Some((fraction, message)));
    }

    fn logged(&self, _log: &BoundedLog) {
        self.outbox.gather(|report| report.logged = true);
    }

    fn finishing(&self) -> bool {
        self.finishing.load(Ordering::SeqCst)
    }

    fn incumbent(&self, objective: f64, solution: String) {
        self.outbox
            .gather(|report| report.incumbents.push((objective, solution)));
    }
}
