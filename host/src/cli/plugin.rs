//! The `caseload plugin` commands' arguments: what an author types.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use super::{Output, ServerTarget, parse_duration};

/// The languages `caseload plugin new` writes projects in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Language {
    /// Rust, built with cargo for `wasm32-wasip2` against the SDK crate.
    Rust,
    /// Python, built with componentize-py against the WIT world.
    Python,
    /// JavaScript, built with componentize-js against the WIT world.
    Js,
    /// C, built with clang for `wasm32-wasi` against the WIT world's C bindings.
    C,
    /// C++ (no exceptions), built with clang++ and libc++ for `wasm32-wasi` against the WIT
    /// world's C bindings.
    Cpp,
}

#[derive(Debug, Clone, Subcommand)]
pub enum PluginCommand {
    /// Write a new plugin project: source implementing the contract, input and output
    /// schemas with an example input, a README, and what it builds against (for Rust the SDK
    /// in `caseload-sdk/`, for Python the WIT world in `wit/`).
    New {
        /// The use case's name, its `problem_id`: lowercase letters, digits and '-'.
        name: String,
        #[arg(long, value_enum, default_value_t = Language::Rust)]
        lang: Language,
        /// The project directory to create [default: ./NAME].
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Build the project in DIR (cargo for Rust, componentize-py for Python, componentize-js
    /// for JavaScript, clang for C and C++) and print the
    /// component's path as the last line of standard output.
    Build {
        #[arg(default_value = ".")]
        dir: PathBuf,
        #[command(flatten)]
        build: BuildArgs,
    },
    /// Load plugin files as the server would (compile, link against the plugin world, call
    /// `describe` within 5 s, check the name, compile the schemas), run each example input
    /// through the input schema, `validate` and `run`, and check the outputs against the
    /// output schema. Exits with status 1 if any file would be refused or any input fails.
    Check {
        /// Plugin files (`.wasm` components).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        run: CheckArgs,
    },
    /// Publish a component to a server's store (`POST /plugins`): the server checks it as
    /// `check` does, keeps it under its name and version, and every replica serves it.
    /// Needs an administrator (or a key with the `publish` scope). Exits with status 1 if
    /// the server refuses it, or if its gate does.
    Publish {
        /// The plugin file (a `.wasm` component).
        file: PathBuf,
        #[command(flatten)]
        target: ServerTarget,
        /// Keep the current version as it is; the new one serves pinned launches only.
        #[arg(long, conflicts_with = "gate")]
        no_current: bool,
        /// Promote the new version only if it loses on none of this experiment template's
        /// inputs against the current one (`{"inputs": [...], "seeds": [...], "options": {}}`,
        /// a JSON file); otherwise it is stored, not current, and the command exits 1.
        #[arg(long, value_name = "FILE.json")]
        gate: Option<PathBuf>,
    },
    /// List a use case's versions on a server: name, version, source, current or retired,
    /// digest, jobs bound to it (or with `--output json`, the server's answer).
    Versions {
        /// The use case (`maxcut`).
        problem: String,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Make a version what unpinned launches of its use case get, on every replica (a
    /// rollback is the same command). Needs an administrator.
    Promote {
        problem: String,
        /// `1.2.0` or `sha256:<hex>`.
        version: String,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Retire a published version: no new job runs it; jobs bound to it still do. Needs an
    /// administrator.
    Retire {
        problem: String,
        version: String,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Download a published version's component (a retired one too), to check or keep.
    Download {
        problem: String,
        version: String,
        /// Where to write it (by default `<name>-<version>.wasm`, here).
        #[arg(long, short = 'o')]
        output: Option<PathBuf>,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Rebuild the project in DIR on every change to its sources, check it, and publish the
    /// component into a server's plugins directory (written aside, then renamed into place).
    /// A failed build or check publishes nothing.
    Watch {
        dir: PathBuf,
        /// The server's plugins directory (default: `<data-dir>/plugins`).
        #[arg(long, env = "CASELOAD_PLUGINS_DIR")]
        plugins_dir: Option<PathBuf>,
        #[command(flatten)]
        build: BuildArgs,
        #[command(flatten)]
        run: CheckArgs,
    },
}

#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    /// Build a Rust project with crates already downloaded only (`cargo --offline`).
    #[arg(long)]
    pub offline: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Run this JSON input instead of the examples in the input schema.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// The time limit of each example's run (or `--input`'s). Short by default: an anytime
    /// solver uses all of it, and a check only shows that the plugin runs; raise it to see
    /// what a longer run answers.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub time_limit: Duration,
    /// The server's compile cache, where the code compiled for the check is kept so that the
    /// server loads the file without compiling it again (default:
    /// `<data-dir>/compile-cache`, if `<data-dir>` exists).
    #[arg(long, env = "CASELOAD_COMPILE_CACHE_DIR")]
    pub compile_cache_dir: Option<PathBuf>,
}
