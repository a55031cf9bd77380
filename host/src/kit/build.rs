//! `caseload plugin build`: turns a plugin project into a component, with the language's own
//! tool: cargo for Rust, componentize-py for Python, componentize-js for JavaScript, clang for
//! C and C++ (`clang.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::project::language_of;
use crate::cli::Language;

/// The componentize-py release the Python path is built and tested with.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// The componentize-js release (npm `@bytecodealliance/componentize-js`) the JavaScript path
/// is built and tested with.
pub const COMPONENTIZE_JS_VERSION: &str = "0.23.0";

/// How a build runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildOptions {
    /// Pass `--offline` to cargo: use only crates already downloaded.
    pub offline: bool,
}

/// Builds the project in `dir` and returns the component's path. The tools' own output goes
/// to standard error, so that the caller's standard output can carry the path alone.
pub fn build_project(dir: &Path, options: BuildOptions) -> anyhow::Result<PathBuf> {
    match language_of(dir)? {
        Language::Rust => build_rust(dir, options),
        Language::Python => build_snapshot(dir, &Snapshotter::python()),
        Language::Js => build_snapshot(dir, &Snapshotter::js()),
        #[cfg(feature = "c-plugins")]
        language @ (Language::C | Language::Cpp) => super::clang::build_clang(dir, language),
        #[cfg(not(feature = "c-plugins"))]
        Language::C | Language::Cpp => anyhow::bail!(
            "this caseload was built without C and C++ plugin builds (its `c-plugins` feature, \
             which the container image leaves out); build with a caseload built with its \
             default features"
        ),
    }
}

/// `cargo build --release --target wasm32-wasip2`, reading the component's path from cargo's
/// own report of what it wrote. The compiler's messages come as JSON too, printed as rustc
/// renders them.
fn build_rust(dir: &Path, options: BuildOptions) -> anyhow::Result<PathBuf> {
    let mut command = Command::new("cargo");
    command
        .current_dir(dir)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .args(["--message-format", "json"])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    if options.offline {
        command.arg("--offline");
    }
    let output = command
        .output()
        .map_err(|error| anyhow::anyhow!("cannot run cargo: {error}; is Rust installed?"))?;
    let mut component = None;
    let mut missing_target = false;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if message["reason"] == "compiler-message" {
            if let Some(rendered) = message["message"]["rendered"].as_str() {
                eprint!("{rendered}");
            }
            // "can't find crate for `std`": the standard library of the target is missing.
            missing_target |= message["message"]["code"]["code"] == "E0463";
            continue;
        }
        let is_cdylib = message["reason"] == "compiler-artifact"
            && message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "cdylib"));
        let wasm = message["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|file| file.ends_with(".wasm"));
        if let (true, Some(wasm)) = (is_cdylib, wasm) {
            component = Some(PathBuf::from(wasm));
        }
    }
    if missing_target {
        anyhow::bail!(
            "cargo build failed: this toolchain lacks the wasm32-wasip2 target; add it with \
             `rustup target add wasm32-wasip2`"
        );
    }
    if !output.status.success() {
        anyhow::bail!("cargo build failed (see above)");
    }
    component.ok_or_else(|| {
        anyhow::anyhow!(
            "cargo built no .wasm library: the package needs `[lib] crate-type = [\"cdylib\"]`"
        )
    })
}

/// A tool that builds a component by snapshotting an interpreter running the project's
/// sources: componentize-py (CPython) or componentize-js (SpiderMonkey).
struct Snapshotter {
    /// The project's language, as `plugin new --lang` names it.
    lang: &'static str,
    /// The program to run.
    tool: String,
    /// Its arguments before the component's path.
    args: &'static [&'static str],
    /// How to install it.
    install: String,
    /// The variable that names it.
    variable: &'static str,
}

impl Snapshotter {
    /// `componentize-py -d wit -w plugin componentize -p . app -o COMPONENT`.
    fn python() -> Snapshotter {
        Snapshotter {
            lang: "python",
            tool: componentize_py(),
            args: &[
                "-d",
                "wit",
                "-w",
                "plugin",
                "componentize",
                "-p",
                ".",
                "app",
                "-o",
            ],
            install: format!("pip install componentize-py=={COMPONENTIZE_PY_VERSION}"),
            variable: "CASELOAD_COMPONENTIZE_PY",
        }
    }

    /// `componentize-js app.js --wit wit -n plugin -d http fetch-event -o COMPONENT`: no
    /// `wasi:http`, which the sandbox does not offer.
    fn js() -> Snapshotter {
        Snapshotter {
            lang: "js",
            tool: componentize_js(),
            args: &[
                "app.js",
                "--wit",
                "wit",
                "-n",
                "plugin",
                "-d",
                "http",
                "fetch-event",
                "-o",
            ],
            install: format!(
                "npm install -g @bytecodealliance/componentize-js@{COMPONENTIZE_JS_VERSION} \
                 @bytecodealliance/preview2-shim@0.25.0"
            ),
            variable: "CASELOAD_COMPONENTIZE_JS",
        }
    }
}

/// Builds with a [`Snapshotter`] into `target/<dir name>.wasm`.
///
/// Both tools snapshot a running interpreter, and two builds of the same sources give
/// different bytes. So the build is skipped when nothing it reads changed since the last one
/// (the project's files, and the tool's version, hashed into `target/<dir name>.wasm.inputs`):
/// the same sources give the same component, which `watch` does not compile again and a
/// publish finds published already.
fn build_snapshot(dir: &Path, snapshotter: &Snapshotter) -> anyhow::Result<PathBuf> {
    let dir = std::path::absolute(dir)?;
    if !dir.join("wit").is_dir() {
        anyhow::bail!(
            "{} has no wit/ directory with the caseload:plugin world; `caseload plugin new \
             --lang {}` writes it",
            dir.display(),
            snapshotter.lang
        );
    }
    let name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin".to_owned());
    let target = dir.join("target");
    std::fs::create_dir_all(&target)
        .map_err(|error| anyhow::anyhow!("cannot create {}: {error}", target.display()))?;
    let component = target.join(format!("{name}.wasm"));
    let tool = &snapshotter.tool;
    let fingerprint_file = target.join(format!("{name}.wasm.inputs"));
    let fingerprint = project_inputs(&dir, tool)?;
    let unchanged = std::fs::read_to_string(&fingerprint_file)
        .is_ok_and(|previous| previous.trim() == fingerprint);
    if unchanged && component.is_file() {
        eprintln!("{}: unchanged since its last build", dir.display());
        return Ok(component);
    }
    // Gone before the build, so that a failed one leaves no fingerprint of what it did not
    // build.
    let _ = std::fs::remove_file(&fingerprint_file);
    let status = Command::new(tool)
        .current_dir(&dir)
        .args(snapshotter.args)
        .arg(&component)
        .stdin(Stdio::null())
        // Its "Component built successfully" is not our output.
        .stdout(std::io::stderr())
        .status()
        .map_err(|error| {
            anyhow::anyhow!(
                "cannot run {tool}: {error}; install it with `{}`, or name it with {}",
                snapshotter.install,
                snapshotter.variable
            )
        })?;
    if !status.success() {
        anyhow::bail!("{tool} failed (see above)");
    }
    std::fs::write(&fingerprint_file, format!("{fingerprint}\n"))
        .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", fingerprint_file.display()))?;
    Ok(component)
}

/// A digest of what a snapshot build reads: the tool's version, and every file of the project
/// (its relative path and bytes) but `target/`, `__pycache__/`, `node_modules/` and hidden
/// ones, in order.
fn project_inputs(dir: &Path, tool: &str) -> anyhow::Result<String> {
    use sha2::{Digest, Sha256};

    let version = Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map(|output| output.stdout)
        .unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(&version);
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    files.sort();
    for relative in files {
        let bytes = std::fs::read(dir.join(&relative))
            .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", relative.display()))?;
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The files under `here` (following links, as the build does), relative to `root`.
fn collect_files(root: &Path, here: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(here)
        .map_err(|error| anyhow::anyhow!("cannot list {}: {error}", here.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.')
            || name == "__pycache__"
            || name == "node_modules"
            || (here == root && name == "target")
        {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            collect_files(root, &path, files)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            files.push(relative.to_owned());
        }
    }
    Ok(())
}

/// The componentize-py to run: `CASELOAD_COMPONENTIZE_PY`, else the one on the path.
pub fn componentize_py() -> String {
    std::env::var("CASELOAD_COMPONENTIZE_PY").unwrap_or_else(|_| "componentize-py".to_owned())
}

/// The componentize-js to run: `CASELOAD_COMPONENTIZE_JS`, else the one on the path.
pub fn componentize_js() -> String {
    std::env::var("CASELOAD_COMPONENTIZE_JS").unwrap_or_else(|_| "componentize-js".to_owned())
}
