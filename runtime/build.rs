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
const BUILT_IN: &[(&str, &str)] = &[
    ("caseload-maxcut", "caseload_maxcut"),
    ("caseload-qubo", "caseload_qubo"),
    ("caseload-vrp", "caseload_vrp"),
];
const TEST_GUESTS: &[&str] = &["caseload-guest-runaway"];
/// The hot-reload guest's builds: (cargo features, suffix of the copied artifact).
const VERSIONED_VARIANTS: &[(&str, &str)] = &[
    ("", "v1"),
    ("v2", "v2"),
    ("describe-panics", "describe_panics"),
    ("describe-loops", "describe_loops"),
    ("bad-schema", "bad_schema"),
    ("v3", "v3"),
    ("other-bytes", "other_bytes"),
    ("bad-example", "bad_example"),
    ("slow-example", "slow_example"),
    ("bench-version", "bench"),
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .parent()
        .expect("host/ sits in the workspace")
        .to_owned();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    // A target directory of its own, beside the outer one (CARGO_TARGET_DIR's, when set, so
    // that a build directory kept outside the clone keeps the plugins too): the outer cargo
    // holds a lock on its own one.
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    let outer_target = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_relative() {
                workspace.join(dir)
            } else {
                dir
            }
        })
        .unwrap_or_else(|| workspace.join("target"));
    let target_dir = outer_target.join("wasm-plugins");

    for watched in [
        "plugins",
        "sdk",
        "schemas",
        "tests/guests",
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    std::fs::create_dir_all(&target_dir).expect("the plugin target directory can be created");
    // Two outer builds (debug and release, say) may run this at once; the variants below are
    // copied from the one path cargo writes each of them to, so they take turns.
    let lock = std::fs::File::create(target_dir.join("caseload-build.lock"))
        .expect("the build lock file can be created");
    lock.lock().expect("the build lock can be taken");

    let packages: Vec<&str> = BUILT_IN
        .iter()
        .map(|(package, _)| *package)
        .chain(TEST_GUESTS.iter().copied())
        .collect();
    build_wasm(&workspace, &target_dir, &packages, None);
    let wasm_dir = target_dir.join("wasm32-wasip2").join("plugin");
    // One guest in several builds: each is built in turn and copied under its variant's name
    // (cargo keeps every feature set's build, so an unchanged variant is not rebuilt).
    for (features, variant) in VERSIONED_VARIANTS {
        build_wasm(
            &workspace,
            &target_dir,
            &["caseload-guest-versioned"],
            Some(features),
        );
        copy(
            &wasm_dir.join("caseload_guest_versioned.wasm"),
            &wasm_dir.join(format!("caseload_guest_versioned_{variant}.wasm")),
        );
    }

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

/// Builds `packages` for `wasm32-wasip2` with the `plugin` profile, with `features` if given.
fn build_wasm(workspace: &Path, target_dir: &Path, packages: &[&str], features: Option<&str>) {
    let mut command = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .current_dir(workspace)
        .args(["build", "--profile", "plugin", "--target", "wasm32-wasip2"])
        .arg("--target-dir")
        .arg(target_dir);
    for package in packages {
        command.args(["-p", package]);
    }
    if let Some(features) = features.filter(|features| !features.is_empty()) {
        command.args(["--features", features]);
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
}
