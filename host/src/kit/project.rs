//! A plugin project on disk, and the language it is written in.

use std::path::Path;

use crate::cli::Language;

/// The language of the project in `dir`: a `Cargo.toml` makes it Rust, an `app.py` Python.
pub fn language_of(dir: &Path) -> anyhow::Result<Language> {
    if dir.join("Cargo.toml").is_file() {
        Ok(Language::Rust)
    } else if dir.join("app.py").is_file() {
        Ok(Language::Python)
    } else {
        anyhow::bail!(
            "{} is not a plugin project: it holds neither a Cargo.toml (Rust) nor an \
             app.py (Python); `caseload plugin new NAME` writes one",
            dir.display()
        )
    }
}
