//! Compiles HiGHS into the lp component, for `wasm32` only (natively the crate's tests cover
//! the model and the file formats, and nothing links HiGHS).
//!
//! HiGHS's source is crates.io's `highs-sys` 1.16.0, which carries it: `cargo metadata` on
//! `highs/source/Cargo.toml` downloads it (checksummed by that manifest's lock file) and says
//! where it is. Its own build script is never run. Each C and C++ file of the library (the
//! lists of HiGHS's `meson.build`) is compiled by Debian's clang for `wasm32-wasi` with
//! Debian's libc++:
//!
//! - one thread: libc++ for WASI has no threads, so `highs/compat/` gives the `<mutex>`,
//!   `<condition_variable>` and `<thread>` HiGHS includes, for one thread (HiGHS starts none
//!   when told `threads = 1`), and a `<dlfcn.h>` whose `dlopen` always fails;
//! - C++ exceptions on, which clang lowers to calls for a wasm target without exception
//!   handling: `highs/caseload_cxa.c` makes a throw a trap;
//! - `highs/caseload_highs.c`, the callback that stops a run, reports incumbents and passes
//!   HiGHS's log on to the job's log.
//!
//! The objects are linked into the component with libc++, libc++abi and wasi-libc's signal
//! emulation, copied out of Debian's `/usr/lib/wasm32-wasi` (its libc stays out: the Rust
//! target brings its own). Runs again only when this file or `highs/` changes.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Where Debian's `wasi-libc`, `libc++-dev-wasm32` and `libclang-rt-dev-wasm32` put the
/// libraries and headers for `wasm32-wasi`.
const SYSROOT_LIB: &str = "/usr/lib/wasm32-wasi";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=highs");
    if env::var("CARGO_CFG_TARGET_FAMILY").as_deref() != Ok("wasm") {
        return;
    }
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let ours = manifest_dir.join("highs");
    let highs = highs_source(&ours.join("source/Cargo.toml"));

    let mut sources = Vec::new();
    let meson = std::fs::read_to_string(highs.join("highs/meson.build"))
        .unwrap_or_else(|error| panic!("cannot read HiGHS's meson.build: {error}"));
    for list in [
        "_srcs",
        "_cupdlp_srcs",
        "_basiclu_srcs",
        "_ipx_srcs",
        "_hipo_srcs",
    ] {
        let files = meson_list(&meson, list);
        assert!(!files.is_empty(), "HiGHS's meson.build has no {list}");
        sources.extend(files.into_iter().map(|file| highs.join("highs").join(file)));
    }
    let shims = [ours.join("caseload_highs.c"), ours.join("caseload_cxa.c")];

    // Objects are kept between runs of this script, in folders named by what shapes them:
    // HiGHS's by the flags below, the headers of ours it includes and the pin of its
    // version; our shims' by every file of ours, so that a change to a shim compiles only
    // the shims.
    let includes = [
        ours.join("compat"),
        highs.join("highs"),
        highs.join("extern"),
        highs.join("extern/pdqsort"),
    ];
    let mut objects = Vec::new();
    for (name, sources, shaped_by) in [
        (
            "highs",
            &sources[..],
            vec![ours.join("compat"), ours.join("source")],
        ),
        ("shims", &shims[..], vec![ours.clone()]),
    ] {
        let objects_dir = out_dir.join(format!("{name}-{:016x}", fingerprint(&shaped_by)));
        std::fs::create_dir_all(&objects_dir).expect("OUT_DIR is writable");
        objects.extend(compile_all(sources, &objects_dir, &includes));
    }
    for object in &objects {
        println!("cargo:rustc-link-arg={}", object.display());
    }

    let libraries = out_dir.join("lib");
    std::fs::create_dir_all(&libraries).expect("OUT_DIR is writable");
    for library in ["c++", "c++abi", "wasi-emulated-signal"] {
        let file = format!("lib{library}.a");
        std::fs::copy(Path::new(SYSROOT_LIB).join(&file), libraries.join(&file)).unwrap_or_else(
            |error| {
                panic!(
                    "cannot copy {SYSROOT_LIB}/{file} ({error}): the lp plugin needs Debian's \
                     clang lld wasi-libc libc++-dev-wasm32 libclang-rt-dev-wasm32"
                )
            },
        );
        println!("cargo:rustc-link-lib=static={library}");
    }
    println!("cargo:rustc-link-search=native={}", libraries.display());
}

/// The `HiGHS` folder of crates.io's highs-sys, downloaded if it is not yet.
fn highs_source(manifest: &Path) -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--manifest-path",
        ])
        .arg(manifest);
    // The outer build's target settings are not this command's.
    for (key, _) in env::vars_os() {
        if key
            .to_str()
            .is_some_and(|key| key.starts_with("CARGO_CFG_") || key == "CARGO_TARGET_DIR")
        {
            command.env_remove(key);
        }
    }
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo metadata on {} failed: {}",
        manifest.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let package = metadata["packages"]
        .as_array()
        .and_then(|packages| {
            packages
                .iter()
                .find(|package| package["name"] == "highs-sys")
        })
        .expect("highs-sys is in the metadata");
    let highs = Path::new(package["manifest_path"].as_str().expect("a path"))
        .parent()
        .expect("the manifest is in a folder")
        .join("HiGHS");
    assert!(
        highs.join("highs/Highs.h").is_file(),
        "no HiGHS source in {}",
        highs.display()
    );
    highs
}

/// The quoted file names of `name = [ ... ]` in a Meson file.
fn meson_list(meson: &str, name: &str) -> Vec<String> {
    let Some(start) = meson
        .lines()
        .position(|line| line.trim_start() == format!("{name} = ["))
    else {
        return Vec::new();
    };
    meson
        .lines()
        .skip(start + 1)
        .take_while(|line| !line.trim_start().starts_with(']'))
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| line.split('\'').nth(1))
        .map(str::to_owned)
        .collect()
}

/// Compiles every source into `objects_dir` on as many threads as cargo allows; the objects'
/// paths, in the sources' order.
fn compile_all(sources: &[PathBuf], objects_dir: &Path, includes: &[PathBuf]) -> Vec<PathBuf> {
    let jobs = env::var("NUM_JOBS")
        .ok()
        .and_then(|jobs| jobs.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let next = Mutex::new(0usize);
    let failures = Mutex::new(Vec::new());
    let objects: Vec<PathBuf> = sources
        .iter()
        .map(|source| {
            let relative = source
                .components()
                .rev()
                .take(3)
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            let name: Vec<&str> = relative.iter().rev().map(String::as_str).collect();
            objects_dir.join(format!("{}.o", name.join("_")))
        })
        .collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().expect("not poisoned");
                        let index = *next;
                        *next += 1;
                        index
                    };
                    let Some(source) = sources.get(index) else {
                        return;
                    };
                    if let Err(message) = compile(source, &objects[index], includes) {
                        failures.lock().expect("not poisoned").push(message);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().expect("not poisoned");
    assert!(
        failures.is_empty(),
        "compiling HiGHS for wasm32-wasi failed:\n{}",
        failures.join("\n")
    );
    objects
}

/// clang's flags for every file, then for C++ and for C.
const FLAGS: &[&str] = &[
    "--target=wasm32-wasi",
    "-O2",
    "-w",
    "-DNDEBUG",
    "-D_WASI_EMULATED_SIGNAL",
    "-DCUPDLP_CPU",
];
const CPP_FLAGS: &[&str] = &["-std=c++17", "-fexceptions"];
const C_FLAGS: &[&str] = &["-std=c11"];

/// A hash of the compiler flags and of every file under `folders`.
fn fingerprint(folders: &[PathBuf]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (FLAGS, CPP_FLAGS, C_FLAGS).hash(&mut hasher);
    let mut files = Vec::new();
    let mut folders = folders.to_vec();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    for file in files {
        file.hash(&mut hasher);
        std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
    }
    hasher.finish()
}

fn compile(source: &Path, object: &Path, includes: &[PathBuf]) -> Result<(), String> {
    if object.is_file() {
        return Ok(());
    }
    // Written beside, then renamed: an interrupted build leaves no half object.
    let partial = object.with_extension("o.partial");
    let cpp = source
        .extension()
        .is_some_and(|extension| extension == "cpp" || extension == "cc");
    let mut command = Command::new(if cpp { "clang++" } else { "clang" });
    command
        .args(FLAGS)
        .args(if cpp { CPP_FLAGS } else { C_FLAGS });
    for include in includes {
        command.arg("-I").arg(include);
    }
    command.arg("-c").arg(source).arg("-o").arg(&partial);
    let output = command.output().map_err(|error| {
        format!(
            "cannot run clang ({error}): the lp plugin needs Debian's clang lld wasi-libc \
             libc++-dev-wasm32 libclang-rt-dev-wasm32"
        )
    })?;
    if output.status.success() {
        std::fs::rename(&partial, object).map_err(|error| format!("{}: {error}", object.display()))
    } else {
        Err(format!(
            "{}:\n{}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
