//! Which version of a use case a launch names (after `@` in its `problem_id`), why a name
//! leads to no plugin, and a version as the versions listing shows it.

use crate::store::Millis;

/// Which version of a use case a launch asks for: after `@` in its `problem_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionRequest {
    /// No `@`: the current version.
    Current,
    /// `@1.3.0`.
    Version(String),
    /// `@sha256:<hex>`.
    Digest(String),
}

impl VersionRequest {
    /// Splits a `problem_id` into the use case's name (or alias) and the version asked for.
    pub fn split(problem_id: &str) -> (&str, VersionRequest) {
        match problem_id.split_once('@') {
            None => (problem_id, VersionRequest::Current),
            Some((name, version)) => (name, VersionRequest::parse(version)),
        }
    }

    /// A version as a client gives it: `1.3.0` or `sha256:<hex>`.
    pub fn parse(version: &str) -> VersionRequest {
        if version.starts_with("sha256:") {
            VersionRequest::Digest(version.to_ascii_lowercase())
        } else {
            VersionRequest::Version(version.to_owned())
        }
    }

    /// What a job records as requested: `None` for the current version.
    pub fn recorded(&self) -> Option<String> {
        match self {
            VersionRequest::Current => None,
            VersionRequest::Version(version) | VersionRequest::Digest(version) => {
                Some(version.clone())
            }
        }
    }
}

/// Why a `problem_id` leads to no plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unresolved {
    #[error("no use case named {0:?}; GET /problems lists them")]
    NoUseCase(String),
    #[error("{name} has no version {requested} in service; it has {}", available_text(.available))]
    NoVersion {
        name: String,
        requested: String,
        /// The versions that serve, oldest first.
        available: Vec<String>,
    },
}

fn available_text(available: &[String]) -> String {
    if available.is_empty() {
        "none".to_owned()
    } else {
        available.join(", ")
    }
}

/// One version of a use case, as `GET /problem/<id>/versions` lists it.
#[derive(Debug, Clone)]
pub struct VersionEntry {
    pub name: String,
    pub version: String,
    /// `sha256:<hex>`.
    pub digest: String,
    pub world: String,
    /// `built-in`, `directory` or `store`.
    pub source: &'static str,
    /// For a directory's plugin, its file's name.
    pub file: Option<String>,
    pub size: Option<u64>,
    pub published_at: Option<Millis>,
    pub published_by: Option<String>,
    /// Whether an unpinned launch on this replica gets it.
    pub current: bool,
    /// For a stored version: whether the registry names it current, which every replica
    /// serves unless its plugins directory holds a file of the use case's name.
    pub registry_current: bool,
    /// The plugins directory's file that serves unpinned launches here instead of this
    /// version, though the registry names it current.
    pub shadowed_by: Option<String>,
    pub retired: bool,
    /// Whether this replica has it compiled and ready (a stored version it could not
    /// compile is listed, not served).
    pub loaded: bool,
}
