//! A sandbox process (`caseload sandbox`): the server starts it, sends it components and
//! runs over its standard input, and reads reports and results from its standard output. Its
//! engine compiles guests without epoch checks; the server stops a guest by killing the
//! process. One run at a time.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use super::SandboxArgs;
use super::frame::{ToChild, ToServer, read_frame};
use super::outbox::{ChildObserver, Outbox};
use crate::runtime::{CallError, CompiledPlugin, Runtime, RuntimeConfig, RuntimeError};

/// Why a sandbox process could not start serving.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// Its standard output could not be set aside for frames.
    #[error("cannot set standard output aside for the server's frames: {0}")]
    Output(io::Error),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Serves the server on standard input and output until the server closes them (or goes).
/// Its engine is the server's, but for one instance at a time (a memory slot of
/// `memory_bytes`) and without epoch checks.
pub fn serve_child(config: &SandboxArgs) -> Result<(), ChildError> {
    let output = protocol_output().map_err(ChildError::Output)?;
    let mut runtime_config = RuntimeConfig::default()
        .without_epoch_checks()
        .with_pooling(config.memory_bytes, 1);
    if let Some(dir) = &config.compile_cache_dir {
        runtime_config = runtime_config.with_compile_cache(dir.clone());
    }
    let runtime = Runtime::with_config(&runtime_config)?;
    let outbox = Outbox::start(output);
    let finishing = Arc::new(AtomicBool::new(false));
    let requests = read_requests(finishing.clone());

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
                outbox.send(&ToServer::Started, b"");
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
                outbox.end_run();
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
                        // Frames come in the order they were sent: a `Finish` read before
                        // this `Run` was for the run before it.
                        if matches!(request.0, ToChild::Run { .. }) {
                            finishing.store(false, Ordering::SeqCst);
                        }
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
