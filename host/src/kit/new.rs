//! `caseload plugin new`: writes a complete, buildable plugin project.
//!
//! The binary carries what a project needs to build offline: the templates, and for Rust the
//! SDK's sources and WIT world, written beside the project in `caseload-sdk/` and named as a
//! path dependency, together with the `Cargo.lock` this release was built and tested with (so
//! that cargo picks crates already downloaded, and the same versions). A project therefore
//! builds against the very contract of the binary that wrote it, with no registry of our own
//! and no checkout of this repository.

use std::path::{Path, PathBuf};

use crate::cli::Language;

/// The Rust template: `(path in the project, contents)`.
const RUST_FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/rust/src/lib.rs"),
    ),
    (
        "schema/input.schema.json",
        include_str!("../../templates/rust/schema/input.schema.json"),
    ),
    (
        "schema/output.schema.json",
        include_str!("../../templates/rust/schema/output.schema.json"),
    ),
    ("README.md", include_str!("../../templates/rust/README.md")),
    (".gitignore", include_str!("../../templates/rust/gitignore")),
    ("Cargo.lock", include_str!("../../../Cargo.lock")),
];

/// The SDK crate, as a Rust project carries it.
const SDK_FILES: &[(&str, &str)] = &[
    (
        "caseload-sdk/Cargo.toml",
        include_str!("../../templates/sdk/Cargo.toml"),
    ),
    (
        "caseload-sdk/src/lib.rs",
        include_str!("../../../sdk/src/lib.rs"),
    ),
    (
        "caseload-sdk/src/memory.rs",
        include_str!("../../../sdk/src/memory.rs"),
    ),
    (
        "caseload-sdk/src/solver_report.rs",
        include_str!("../../../sdk/src/solver_report.rs"),
    ),
    (
        "caseload-sdk/src/text.rs",
        include_str!("../../../sdk/src/text.rs"),
    ),
    ("caseload-sdk/wit/caseload.wit", WIT),
];

/// The Python template.
const PYTHON_FILES: &[(&str, &str)] = &[
    ("app.py", include_str!("../../templates/python/app.py")),
    (
        "schemas.py",
        include_str!("../../templates/python/schemas.py"),
    ),
    (
        "README.md",
        include_str!("../../templates/python/README.md"),
    ),
    (
        ".gitignore",
        include_str!("../../templates/python/gitignore"),
    ),
    ("wit/caseload.wit", WIT),
];

/// The JavaScript template.
const JS_FILES: &[(&str, &str)] = &[
    ("app.js", include_str!("../../templates/js/app.js")),
    ("schemas.js", include_str!("../../templates/js/schemas.js")),
    ("README.md", include_str!("../../templates/js/README.md")),
    (".gitignore", include_str!("../../templates/js/gitignore")),
    ("wit/caseload.wit", WIT),
];

/// The C template.
const C_FILES: &[(&str, &str)] = &[
    (
        "src/plugin.c",
        include_str!("../../templates/c/src/plugin.c"),
    ),
    ("src/json.h", include_str!("../../templates/c/src/json.h")),
    (
        "schema/input.schema.json",
        include_str!("../../templates/c/schema/input.schema.json"),
    ),
    (
        "schema/output.schema.json",
        include_str!("../../templates/c/schema/output.schema.json"),
    ),
    ("README.md", include_str!("../../templates/c/README.md")),
    (".gitignore", include_str!("../../templates/c/gitignore")),
    ("wit/caseload.wit", WIT),
];

/// The C++ template.
const CPP_FILES: &[(&str, &str)] = &[
    (
        "src/plugin.cpp",
        include_str!("../../templates/cpp/src/plugin.cpp"),
    ),
    // The same reader as C's: it compiles as both.
    ("src/json.h", include_str!("../../templates/c/src/json.h")),
    (
        "schema/input.schema.json",
        include_str!("../../templates/cpp/schema/input.schema.json"),
    ),
    (
        "schema/output.schema.json",
        include_str!("../../templates/cpp/schema/output.schema.json"),
    ),
    ("README.md", include_str!("../../templates/cpp/README.md")),
    (".gitignore", include_str!("../../templates/cpp/gitignore")),
    ("wit/caseload.wit", WIT),
];

/// The plugin world this binary speaks.
const WIT: &str = include_str!("../../../sdk/wit/caseload.wit");

/// Writes a new project for the use case `name` in `dir` (default `./NAME`), which must not
/// exist or be empty. Nothing is left behind if a file cannot be written. Returns the
/// project's directory.
pub fn new_project(name: &str, language: Language, dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    check_name(name)?;
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_path_buf);
    let existed = dir.exists();
    if existed
        && std::fs::read_dir(&dir)
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(true)
    {
        anyhow::bail!(
            "{} already exists and is not empty: give a new directory with --dir",
            dir.display()
        );
    }
    let files: Vec<(&str, &str)> = match language {
        Language::Rust => RUST_FILES.iter().chain(SDK_FILES).copied().collect(),
        Language::Python => PYTHON_FILES.to_vec(),
        Language::Js => JS_FILES.to_vec(),
        Language::C => C_FILES.to_vec(),
        Language::Cpp => CPP_FILES.to_vec(),
    };
    let written = write_files(&dir, name, &files);
    if let Err(error) = written {
        if existed {
            for (path, _) in &files {
                let _ = std::fs::remove_file(dir.join(path));
            }
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return Err(error);
    }
    Ok(dir)
}

fn write_files(dir: &Path, name: &str, files: &[(&str, &str)]) -> anyhow::Result<()> {
    for (path, template) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|error| anyhow::anyhow!("cannot create {}: {error}", parent.display()))?;
        }
        std::fs::write(&path, fill(template, name))
            .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", path.display()))?;
    }
    Ok(())
}

/// The template with its placeholders filled in.
fn fill(template: &str, name: &str) -> String {
    template
        .replace("{{name}}", name)
        .replace("{{crate_name}}", &name.replace('-', "_"))
        .replace("{{sdk_version}}", env!("CARGO_PKG_VERSION"))
}

/// A use case's name serves as `problem_id`, crate name and file name alike.
fn check_name(name: &str) -> anyhow::Result<()> {
    let valid = name.starts_with(|first: char| first.is_ascii_lowercase())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !name.ends_with('-');
    if !valid {
        anyhow::bail!(
            "invalid name {name:?}: a use case's name is its problem_id; use lowercase letters, \
             digits and '-', starting with a letter"
        );
    }
    Ok(())
}

/// What to do next, printed after the project is written.
pub fn next_steps(dir: &Path, language: Language) -> String {
    let dir = dir.display();
    let needs = match language {
        Language::Rust => "cargo and the wasm32-wasip2 target (rustup target add wasm32-wasip2)",
        Language::Python => "componentize-py (pip install componentize-py==0.25.1)",
        Language::Js => {
            "componentize-js (npm install -g @bytecodealliance/componentize-js@0.23.0 \
             @bytecodealliance/preview2-shim@0.25.0)"
        }
        Language::C => "clang for wasm32-wasi (on Debian: apt install clang lld wasi-libc)",
        Language::Cpp => {
            "clang++ and libc++ for wasm32-wasi (on Debian: apt install clang lld wasi-libc \
             libc++-dev-wasm32 libclang-rt-dev-wasm32)"
        }
    };
    format!(
        "wrote {dir}\n\
         next, with {needs}:\n  \
         caseload plugin build {dir}\n  \
         caseload plugin watch {dir} --data-dir ./data   # rebuild, check and publish on every change"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_carries_every_file_of_the_sdk() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/src");
        for entry in std::fs::read_dir(&sdk).expect("sdk/src") {
            let name = entry.expect("entry").file_name();
            let carried = format!("caseload-sdk/src/{}", name.to_string_lossy());
            assert!(
                SDK_FILES.iter().any(|(path, _)| *path == carried),
                "{carried} is not in SDK_FILES"
            );
        }
    }

    #[test]
    fn names_must_be_usable_as_problem_ids_and_crate_names() {
        for good in ["knapsack", "bin-packing-2"] {
            check_name(good).expect(good);
        }
        for bad in ["", "Knapsack", "2opt", "bin_packing", "trailing-", "a b"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_existing_directory_with_files_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("keep.txt"), "mine").expect("write");
        let error = new_project("demo", Language::Python, Some(dir.path())).expect_err("refused");
        assert!(error.to_string().contains("not empty"), "{error}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("keep.txt")).expect("kept"),
            "mine"
        );
    }

    #[test]
    fn placeholders_are_all_filled() {
        let dir = tempfile::tempdir().expect("temp dir");
        for language in [
            Language::Rust,
            Language::Python,
            Language::Js,
            Language::C,
            Language::Cpp,
        ] {
            let project = dir.path().join(format!("{language:?}"));
            new_project("demo-case", language, Some(&project)).expect("written");
            for entry in walk(&project) {
                let text = std::fs::read_to_string(&entry).expect("text");
                assert!(
                    !text.contains("{{"),
                    "{} keeps a placeholder",
                    entry.display()
                );
            }
        }
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).expect("dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else {
                files.push(path);
            }
        }
        files
    }
}
