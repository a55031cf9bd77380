//! Builds the built-in plugins (and the test guests) for `wasm32-wasip2` with a nested cargo,
//! so that `cargo run` and `cargo test` need no extra command.
//!
//! The built-in components (max-cut, QUBO, routing, and linear programming where clang for
//! `wasm32-wasi` is installed) are compressed into `OUT_DIR` and embedded in the binary. The test
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
/// Built in where clang for `wasm32-wasi` is installed (it compiles HiGHS, which is C++):
/// `cargo run` works without it, and the server then has no `lp` use case.
const LP: (&str, &str) = ("caseload-lp", "caseload_lp");
/// What tells that clang can build for `wasm32-wasi` with libc++ (Debian's packages).
const WASI_LIBCXX: &str = "/usr/lib/wasm32-wasi/libc++.a";
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
    ("misreports", "misreports"),
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

    println!("cargo:rustc-check-cfg=cfg(caseload_lp)");
    println!("cargo:rerun-if-changed={WASI_LIBCXX}");
    // CASELOAD_WITHOUT_LP=1 leaves it out where clang is installed: a quicker first build.
    println!("cargo:rerun-if-env-changed=CASELOAD_WITHOUT_LP");
    let with_lp =
        env::var_os("CASELOAD_WITHOUT_LP").is_none_or(|value| value != "1") && clang_for_wasi();
    let built_in: Vec<(&str, &str)> = BUILT_IN
        .iter()
        .copied()
        .chain(with_lp.then_some(LP))
        .collect();
    if with_lp {
        println!("cargo:rustc-cfg=caseload_lp");
    } else {
        println!(
            "cargo:warning=the lp use case is left out: it needs clang for wasm32-wasi \
             (apt install clang lld wasi-libc libc++-dev-wasm32 libclang-rt-dev-wasm32)"
        );
    }
    let packages: Vec<&str> = built_in
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

    // Embedded compressed, to about a third (HiGHS makes the lp component 5.2 MB, 1.2 once
    // compressed): the container image has a budget of 50 MB. The server decompresses each
    // once, when it loads it.
    for (_, artifact) in &built_in {
        let built = wasm_dir.join(format!("{artifact}.wasm"));
        let bytes = std::fs::read(&built)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", built.display()));
        let compressed = zstd::encode_all(bytes.as_slice(), 19).expect("zstd compresses");
        let to = out_dir.join(format!("{artifact}.wasm.zst"));
        std::fs::write(&to, compressed)
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", to.display()));
    }
    println!(
        "cargo:rustc-env=CASELOAD_TEST_GUESTS_DIR={}",
        wasm_dir.display()
    );
}

/// Whether clang runs and Debian's libc++ for `wasm32-wasi` is installed.
fn clang_for_wasi() -> bool {
    Path::new(WASI_LIBCXX).is_file()
        && Command::new("clang")
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success())
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
