//! Builds the built-in plugins (and the test guests) for `wasm32-wasip2` with a nested cargo,
//! so that `cargo run` and `cargo test` need no extra command.
//!
//! The built-in max-cut component is copied into `OUT_DIR` and embedded in the binary. The test
//! guests are left in the plugin target directory, whose path reaches the tests through the
//! `CASELOAD_TEST_GUESTS_DIR` variable; they are never embedded.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Packages compiled to components: the built-in use cases, then the guests the tests use.
const BUILT_IN: &[(&str, &str)] = &[("caseload-maxcut", "caseload_maxcut")];
const TEST_GUESTS: &[&str] = &["caseload-guest-runaway"];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .parent()
        .expect("host/ sits in the workspace")
        .to_owned();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    // A target directory of its own: the outer cargo holds a lock on its own one.
    let target_dir = workspace.join("target").join("wasm-plugins");

    for watched in [
        "plugins",
        "sdk",
        "schemas",
        "tests/guests",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    let mut command = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .current_dir(&workspace)
        .args(["build", "--profile", "plugin", "--target", "wasm32-wasip2"])
        .arg("--target-dir")
        .arg(&target_dir);
    for package in BUILT_IN
        .iter()
        .map(|(package, _)| *package)
        .chain(TEST_GUESTS.iter().copied())
    {
        command.args(["-p", package]);
    }
    // The outer build's flags, wrappers (clippy's among them) and target settings are for the
    // host, not for the guests.
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let keep = key == "CARGO_HOME"
            || key.starts_with("CARGO_NET_")
            || key.starts_with("CARGO_HTTP_")
            || key.starts_with("CARGO_REGISTRIES_")
            || key == "CARGO_REGISTRY_TOKEN";
        let strip = (key.starts_with("CARGO_") && !keep)
            || matches!(
                key,
                "RUSTFLAGS"
                    | "RUSTDOCFLAGS"
                    | "RUSTC_WRAPPER"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "RUSTC"
            );
        if strip {
            command.env_remove(key);
        }
    }

    let status = command
        .status()
        .expect("cargo can be started to build the plugins");
    if !status.success() {
        panic!(
            "building the plugins for wasm32-wasip2 failed (see above). \
             If the target is missing: rustup target add wasm32-wasip2"
        );
    }

    let wasm_dir = target_dir.join("wasm32-wasip2").join("plugin");
    for (_, artifact) in BUILT_IN {
        let built = wasm_dir.join(format!("{artifact}.wasm"));
        copy(&built, &out_dir.join(format!("{artifact}.wasm")));
    }
    println!(
        "cargo:rustc-env=CASELOAD_TEST_GUESTS_DIR={}",
        wasm_dir.display()
    );
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|error| {
        panic!(
            "cannot copy {} to {}: {error}",
            from.display(),
            to.display()
        )
    });
}
