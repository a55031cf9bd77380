//! `caseload plugin build`: turns a plugin project into a component, with the language's own
//! tool: cargo for Rust, componentize-py for Python.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::project::language_of;
use crate::config::Language;

/// The componentize-py release the Python path is built and tested with.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

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
        Language::Python => build_python(dir),
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

/// `componentize-py -d wit -w plugin componentize app`, into `target/<dir name>.wasm`.
fn build_python(dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = std::path::absolute(dir)?;
    if !dir.join("wit").is_dir() {
        anyhow::bail!(
            "{} has no wit/ directory with the caseload:plugin world; `caseload plugin new \
             --lang python` writes it",
            dir.display()
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
    let tool = componentize_py();
    let status = Command::new(&tool)
        .current_dir(&dir)
        .args([
            "-d",
            "wit",
            "-w",
            "plugin",
            "componentize",
            "-p",
            ".",
            "app",
            "-o",
        ])
        .arg(&component)
        .stdin(Stdio::null())
        // Its "Component built successfully" is not our output.
        .stdout(std::io::stderr())
        .status()
        .map_err(|error| {
            anyhow::anyhow!(
                "cannot run {tool}: {error}; install it with \
                 `pip install componentize-py=={COMPONENTIZE_PY_VERSION}`, or name it with \
                 CASELOAD_COMPONENTIZE_PY"
            )
        })?;
    if !status.success() {
        anyhow::bail!("componentize-py failed (see above)");
    }
    Ok(component)
}

/// The componentize-py to run: `CASELOAD_COMPONENTIZE_PY`, else the one on the path.
pub fn componentize_py() -> String {
    std::env::var("CASELOAD_COMPONENTIZE_PY").unwrap_or_else(|_| "componentize-py".to_owned())
}
