//! `caseload plugin watch`: rebuilds a project on every change to its sources, checks the
//! component as the server would load it, and publishes it into a server's plugins directory.
//!
//! Publishing writes `.NAME.wasm.partial` beside the served `NAME.wasm` and renames it into
//! place: the server ignores hidden names and sees the new file whole, in one step. A build or
//! a check that fails publishes nothing, so the version that serves keeps serving.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::{Event, EventKind, RecursiveMode, Watcher};

use super::build::{BuildOptions, build_project};
use super::check::{CheckOptions, Checker};
use caseload::plugins::digest;

/// Changes closer together than this make one rebuild: an editor's save is several events.
const QUIET: Duration = Duration::from_millis(200);

/// What a watch does on each change.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The running server's plugins directory.
    pub plugins_dir: PathBuf,
    pub build: BuildOptions,
    pub check: CheckOptions,
}

/// Watches `dir` until the process is stopped: one build, check and publish at start, then one
/// after each change.
pub fn watch(dir: &Path, options: &WatchOptions) -> anyhow::Result<()> {
    let dir = std::path::absolute(dir)?;
    std::fs::create_dir_all(&options.plugins_dir).map_err(|error| {
        anyhow::anyhow!("cannot create {}: {error}", options.plugins_dir.display())
    })?;
    let checker = Checker::new(options.check.clone())?;
    let (sender, events) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = sender.send(event);
    })?;
    watcher.watch(&dir, RecursiveMode::Recursive)?;
    say(&format!(
        "watching {} and publishing into {}",
        dir.display(),
        options.plugins_dir.display()
    ));
    let mut cycle = Cycle {
        dir: &dir,
        options,
        checker,
        published: None,
    };
    cycle.run();
    loop {
        let event = events.recv()?;
        if !event.is_ok_and(|event| is_source_change(&dir, &event)) {
            continue;
        }
        // Wait for quiet; events from the build itself (under target/) are not sources.
        loop {
            match events.recv_timeout(QUIET) {
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
        say("change seen");
        cycle.run();
    }
}

struct Cycle<'a> {
    dir: &'a Path,
    options: &'a WatchOptions,
    checker: Checker,
    /// The file this watch published last and its digest.
    published: Option<(PathBuf, String)>,
}

impl Cycle<'_> {
    /// Build, check, publish; each step's outcome and time printed as it ends.
    fn run(&mut self) {
        let started = Instant::now();
        let component = match build_project(self.dir, self.options.build) {
            Ok(component) => component,
            Err(error) => {
                say(&format!(
                    "build failed after {}: {error:#}; {}",
                    seconds(started),
                    self.still_serving()
                ));
                return;
            }
        };
        say(&format!(
            "built {} in {}",
            component.display(),
            seconds(started)
        ));

        let started = Instant::now();
        let checked = self.checker.check(&component);
        for line in &checked.report {
            println!("    {line}");
        }
        let plugin = match checked.outcome {
            Ok(plugin) => plugin,
            Err(why) => {
                say(&format!(
                    "check failed after {}: {why}; {}",
                    seconds(started),
                    self.still_serving()
                ));
                return;
            }
        };
        say(&format!("checked in {}", seconds(started)));

        let started = Instant::now();
        let served = self.served_path(&plugin.info.name);
        if std::fs::read(&served).is_ok_and(|bytes| digest(&bytes) == plugin.digest) {
            say(&format!(
                "unchanged: {} already serves {}",
                served.display(),
                plugin.digest
            ));
            self.published = Some((served, plugin.digest));
            return;
        }
        match publish(&component, &served) {
            Ok(()) => {
                say(&format!(
                    "published {} {} as {} in {}; now serving {}",
                    plugin.info.name,
                    plugin.info.version,
                    served.display(),
                    seconds(started),
                    plugin.digest
                ));
                self.published = Some((served, plugin.digest));
            }
            Err(error) => say(&format!(
                "publishing failed: {error:#}; {}",
                self.still_serving()
            )),
        }
    }

    fn served_path(&self, name: &str) -> PathBuf {
        self.options.plugins_dir.join(format!("{name}.wasm"))
    }

    /// What serves after a failure: what this watch published last, untouched.
    fn still_serving(&self) -> String {
        match &self.published {
            Some((path, digest)) => format!("{} keeps serving {digest}", path.display()),
            None => "nothing was published".to_owned(),
        }
    }
}

/// Copies `component` to `served` through a hidden temporary name and a rename.
fn publish(component: &Path, served: &Path) -> anyhow::Result<()> {
    let name = served
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = served.with_file_name(format!(".{name}.partial"));
    let bytes = std::fs::read(component)
        .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", component.display()))?;
    let file = std::fs::File::create(&partial)
        .map_err(|error| anyhow::anyhow!("cannot create {}: {error}", partial.display()))?;
    let written = std::io::Write::write_all(&mut &file, &bytes).and_then(|()| file.sync_all());
    if let Err(error) = written {
        let _ = std::fs::remove_file(&partial);
        anyhow::bail!("cannot write {}: {error}", partial.display());
    }
    std::fs::rename(&partial, served).map_err(|error| {
        let _ = std::fs::remove_file(&partial);
        anyhow::anyhow!("cannot rename it to {}: {error}", served.display())
    })
}

/// A change to a project's sources: not its build output, caches or hidden files.
fn is_source_change(dir: &Path, event: &Event) -> bool {
    let changes = matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
    );
    changes
        && event.paths.iter().any(|path| {
            let Ok(relative) = path.strip_prefix(dir) else {
                return false;
            };
            !relative.components().any(|part| {
                let part = part.as_os_str().to_string_lossy();
                part == "target" || part == "__pycache__" || part.starts_with('.')
            })
        })
}

fn seconds(since: Instant) -> String {
    format!("{:.2} s", since.elapsed().as_secs_f64())
}

/// One line of the watch's story, timed.
fn say(line: &str) {
    println!("{} {line}", chrono::Local::now().format("%H:%M:%S"));
}
