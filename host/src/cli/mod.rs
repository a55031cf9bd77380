//! The command line: `caseload` and its subcommands, with their `CASELOAD_*` environment
//! variables. The server's own flags (`serve`) are the library's `ServeArgs` and
//! `StorageArgs`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use caseload::config::{
    LogFormat, SandboxArgs, ServeArgs, StorageArgs, parse_bytes, parse_duration,
};
use caseload::store::Role;

mod plugin;

pub use self::plugin::{BuildArgs, CheckArgs, Language, PluginCommand};

/// caseload: run optimization jobs over HTTP, each use case a WebAssembly plugin.
#[derive(Debug, Parser)]
#[command(name = "caseload", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(flatten)]
    pub storage: StorageArgs,

    /// Serve options, for when no subcommand is given (`serve` is the default).
    #[command(flatten)]
    pub serve: ServeArgs,

    /// How log lines are written: `text` for a person, `json` (one object a line: time,
    /// level, message, fields, and the spans it is in: request id, route, user, job) for a
    /// log collector.
    #[arg(
        long,
        env = "CASELOAD_LOG_FORMAT",
        value_enum,
        default_value = "text",
        global = true
    )]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the HTTP server and its workers (the default).
    // Boxed: the serve flags outgrew clippy's `large_enum_variant` bound.
    Serve(Box<ServeArgs>),
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Work with plugin files.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Manage API keys (`Authorization: Bearer cl_...`), as `/api_keys` does over HTTP.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Launch, follow and read jobs on a server, from a shell or CI, with an API key.
    #[command(subcommand)]
    Job(JobCommand),
    /// Upload datasets to a server, from a shell or CI, with an API key.
    #[command(subcommand)]
    Data(DataCommand),
    /// Serve the Model Context Protocol over standard input and output, for an assistant that
    /// starts this process: its tools (use cases, launch, status, wait, output, cancel,
    /// upload, list, evaluate) call the server at --url with --key. `POST /mcp` serves the
    /// same tools over HTTP.
    Mcp {
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Apply the database's migrations and exit (what a deployment's init step runs before
    /// replicas that start with `serve --no-migrate`).
    Migrate,
    /// Exit 0 if a server is ready (`GET /readyz` answers 200), 1 otherwise, saying why: a
    /// container's health check, where there is no curl.
    Ready {
        /// The server's address; without it, the address `serve` listens on (`--listen`,
        /// `CASELOAD_LISTEN`), with 127.0.0.1 (or ::1) for an unspecified host.
        #[arg(long, env = "CASELOAD_URL")]
        url: Option<String>,
        /// The address the server listens on, read as `serve` reads it.
        #[arg(long, env = "CASELOAD_LISTEN", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
    },
    /// Run jobs for the server that started this process, over standard input and output
    /// (`--sandbox-processes-from`).
    #[command(hide = true)]
    Sandbox(SandboxArgs),
}

/// The server a command calls (`caseload job`, `data`, `plugin publish`), and the bearer it
/// calls with.
#[derive(Debug, Clone, Args)]
pub struct ServerTarget {
    /// The server's address: `http://host:port`, `https://...`, or `host:port` (taken as
    /// `http://`).
    #[arg(long, env = "CASELOAD_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// An API key (`cl_...`), or a token from `POST /login`; without it,
    /// `CASELOAD_API_KEY`, then `CASELOAD_TOKEN`.
    #[arg(
        long,
        visible_alias = "token",
        env = "CASELOAD_API_KEY",
        hide_env_values = true
    )]
    pub key: Option<String>,
}

/// How a command prints what the server answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Lines for a person or `cut`, tab-separated.
    #[default]
    Text,
    /// The server's JSON answer, as it is.
    Json,
}

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Launch a job; prints its id (with --wait, waits and prints its output).
    Submit {
        /// The use case (`maxcut`, `qubo@1.2.0`...).
        problem: String,
        /// The launch body, JSON (an input, or `{data_file_identifier}`, with `options`
        /// and `labels`); `-` for standard input.
        #[arg(long, default_value = "-")]
        input: PathBuf,
        /// A project to launch in (`GET /projects`).
        #[arg(long)]
        project: Option<String>,
        /// Wait for the job to end; exit 1 unless it completed.
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Print a job's status and executions (`GET /job/<id>`, JSON).
    Get {
        job: String,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Wait for a job to end and print its status; exit 0 if it completed, 1 otherwise.
    Wait {
        job: String,
        /// Give up after this long (`500ms`, `30s`, `2h`...; exit 1).
        #[arg(long, value_parser = parse_duration, default_value = "1h")]
        timeout: Duration,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Print a completed job's output (JSON).
    Output {
        job: String,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Cancel a job; prints its status after.
    Cancel {
        job: String,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Stop a running job now and keep the best it found (it ends COMPLETED with it); a
    /// pending one is cancelled. Prints its status after.
    Finish {
        job: String,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Launch a job again with what another was launched with (input, options with the seed
    /// it ran with, labels, project) on the version it ran; prints the new job's id.
    Rerun {
        job: String,
        /// Run this version instead (`1.2.0` or `sha256:<hex>`).
        #[arg(long)]
        version: Option<String>,
        /// Options that replace the job's, one by one (JSON: `{"time_limit_s": 5}`).
        #[arg(long, value_name = "JSON")]
        options: Option<String>,
        /// Wait for the new job to end and print its output; exit 1 unless it completed.
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// Print a job's log (its latest attempt's); with --follow, the log as it is written,
    /// until the job ends (exit 1 unless it completed).
    Logs {
        job: String,
        /// Follow the job's event stream.
        #[arg(long, short = 'f')]
        follow: bool,
        #[command(flatten)]
        target: ServerTarget,
    },
    /// List jobs, newest first: id, status, use case, creation time, one per line (or with
    /// `--output json`, the server's page as it is: `{jobs, next}`).
    List {
        /// Only these statuses (`PENDING,RUNNING`).
        #[arg(long)]
        status: Option<String>,
        /// A project's jobs instead of the caller's own.
        #[arg(long)]
        project: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
        #[command(flatten)]
        target: ServerTarget,
    },
}

#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Upload a dataset file (sent as it is read); prints its `data_file_identifier` (or with
    /// `--output json`, the server's answer), to launch on with
    /// `{"data_file_identifier": ...}`.
    Upload {
        file: PathBuf,
        /// Its media type (`text/plain`, `application/json`...); by default the server
        /// guesses it from the file's extension.
        #[arg(long)]
        media_type: Option<String>,
        /// The name it is kept under [default: the file's name].
        #[arg(long)]
        filename: Option<String>,
        /// A project to upload to: its members launch on it.
        #[arg(long)]
        project: Option<String>,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
        #[command(flatten)]
        target: ServerTarget,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Make a key for a user and print it (shown this once).
    Create {
        /// Whose key it is: it acts as this user, within its scopes.
        #[arg(long)]
        user: String,
        /// What the key is for, as lists show it.
        #[arg(long)]
        name: String,
        /// read, launch, publish or admin (repeat, or separate with commas); publish and
        /// admin only for an administrator.
        #[arg(long = "scope", value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// Days until the key stops working (never, by default).
        #[arg(long)]
        expires_in_days: Option<u32>,
        /// Bind the key to a project the user is in (its id, as GET /projects lists):
        /// it launches and lists there and reads no job of another.
        #[arg(long)]
        project: Option<String>,
    },
    /// List the keys of a user, or of every user.
    List {
        #[arg(long)]
        user: Option<String>,
    },
    /// Revoke a key (its id, or its `cl_<id>` prefix): it stops within seconds on every
    /// replica.
    Revoke { id: String },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// List the users: name, role, enabled or disabled, creation time, one per line.
    List,
    /// Create a user; the password is read from standard input.
    Add {
        name: String,
        /// Read the password from standard input (its first line).
        #[arg(long, required = true)]
        password_stdin: bool,
        /// Make the user an administrator (as `--role admin`).
        #[arg(long, conflicts_with = "role")]
        admin: bool,
        /// admin (users, keys, quotas, the plugin registry, everything), member (launch,
        /// cancel and read its own) or viewer (read only).
        #[arg(long, value_parser = parse_role, default_value = "member")]
        role: Role,
    },
    /// Give a user a role: admin, member or viewer (the last administrator stays one).
    Role {
        name: String,
        #[arg(value_parser = parse_role)]
        role: Role,
    },
    /// Make a user an administrator, or not (the last one stays).
    Admin {
        name: String,
        #[arg(value_enum)]
        switch: AdminSwitch,
    },
    /// Set a user's password, read from standard input; its tokens stop working.
    Passwd {
        name: String,
        /// Read the password from standard input (its first line).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Stop a user from logging in; its tokens stop working (within seconds on every replica).
    Disable { name: String },
    /// Let a disabled user log in again (with a new login: its tokens stay revoked).
    Enable { name: String },
    /// Make every token issued to a user until now stop working; it can log in again.
    Revoke { name: String },
    /// Set a user's own quotas; a flag left out means the server's default for it.
    Quota {
        name: String,
        /// Jobs the user may have pending at once.
        #[arg(long)]
        pending_jobs: Option<u64>,
        /// Bytes of datasets the user may keep (`500MiB`, `20GiB`...).
        #[arg(long, value_parser = parse_bytes)]
        dataset_bytes: Option<u64>,
        /// Bytes of job outputs the user may keep (`1GiB`...).
        #[arg(long, value_parser = parse_bytes)]
        output_bytes: Option<u64>,
    },
    /// Delete a user with its jobs and data files (refused while a job of it is pending or
    /// running).
    Delete { name: String },
}

fn parse_role(text: &str) -> Result<Role, String> {
    Role::parse(text).ok_or_else(|| format!("{text:?} is not a role: admin, member or viewer"))
}

/// `caseload user admin NAME on|off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AdminSwitch {
    On,
    Off,
}
