//! A plugin project on disk, and the language it is written in.

use std::path::Path;

use crate::cli::Language;

/// The language of the project in `dir`: a `Cargo.toml` makes it Rust, an `app.py` Python, an
/// `app.js` JavaScript,
/// a `src/` with C++ sources (`.cpp`, `.cc`, `.cxx`) C++, and one with `.c` sources C.
pub fn language_of(dir: &Path) -> anyhow::Result<Language> {
    if dir.join("Cargo.toml").is_file() {
        return Ok(Language::Rust);
    }
    if dir.join("app.py").is_file() {
        return Ok(Language::Python);
    }
    if dir.join("app.js").is_file() {
        return Ok(Language::Js);
    }
    let extensions: Vec<String> = std::fs::read_dir(dir.join("src"))
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            Some(path.extension()?.to_str()?.to_owned())
        })
        .collect();
    let has = |wanted: &[&str]| {
        extensions
            .iter()
            .any(|found| wanted.contains(&found.as_str()))
    };
    if has(&["cpp", "cc", "cxx"]) {
        Ok(Language::Cpp)
    } else if has(&["c"]) {
        Ok(Language::C)
    } else {
        anyhow::bail!(
            "{} is not a plugin project: it holds no Cargo.toml (Rust), no app.py (Python), \
             no app.js (JavaScript) and no src/*.c (C) or src/*.cpp (C++); `caseload plugin new NAME` writes one",
            dir.display()
        )
    }
}
