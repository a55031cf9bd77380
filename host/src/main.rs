//! The `caseload` binary: the command line, the commands that call a server or open its
//! store (`user`, `key`, `job`, `data`, `registry`), and the plugin kit; the server itself is
//! the library (`caseload-server`).
//!
//! `cargo run --release` starts the server on 127.0.0.1:8080 with SQLite under `./data`;
//! `caseload --help` lists the options.

use std::path::Path;

use clap::Parser;

use caseload::sandbox_process::serve_child;

use crate::cli::{BuildArgs, CheckArgs, Cli, Command, PluginCommand};
use crate::kit::build::{BuildOptions, build_project};
use crate::kit::check::{CheckOptions, check_plugins};
use crate::kit::new::{new_project, next_steps};
use crate::kit::publish::{PublishOptions, publish};
use crate::kit::watch::{WatchOptions, watch};

mod api_client;
mod cli;
mod data_command;
mod job_command;
mod key_command;
mod kit;
mod mcp_command;
mod registry_command;
mod user_command;

/// musl's allocator takes one lock for every thread; mimalloc keeps the static build (the
/// container image) as fast as the glibc one.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if !matches!(
        cli.command,
        None | Some(Command::Serve(_) | Command::Sandbox(_))
    ) {
        end_quietly_on_a_closed_pipe();
    }
    // A sandbox process runs guests on its main thread, outside any async runtime: the
    // blocking calls of wasmtime-wasi start one of their own.
    if let Some(Command::Sandbox(args)) = &cli.command {
        let _telemetry = caseload::telemetry::init("warn", cli.log_format, None)?;
        serve_child(args)?;
        return Ok(());
    }
    tokio::runtime::Runtime::new()?.block_on(run(cli))
}

/// A command whose reader closes the pipe early (`caseload job list | head -1`) ends as other
/// Unix tools do, by SIGPIPE, instead of panicking in `println!`. Rust ignores SIGPIPE so that
/// a write to a closed socket fails with EPIPE; the server and sandbox processes keep that.
#[cfg(unix)]
#[allow(unsafe_code)]
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: called first in `main`, before any other thread runs; it restores the default
    // action of one signal and touches no memory.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn end_quietly_on_a_closed_pipe() {}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // A command's report is its output; the server's log lines would only bury it.
    let default_level = match cli.command {
        Some(
            Command::Plugin(_)
            | Command::Job(_)
            | Command::Data(_)
            | Command::Mcp { .. }
            | Command::Ready { .. },
        ) => "warn",
        _ => "info",
    };
    let otlp = match &cli.command {
        None => cli.serve.otlp_endpoint.as_ref(),
        Some(Command::Serve(args)) => args.otlp_endpoint.as_ref(),
        Some(_) => None,
    };
    // Kept to the end of main: dropping it flushes the last traces.
    let _telemetry = caseload::telemetry::init(default_level, cli.log_format, otlp)?;
    match &cli.command {
        None => caseload::serve(&cli.storage, &cli.serve).await,
        Some(Command::Serve(args)) => caseload::serve(&cli.storage, args).await,
        Some(Command::User(command)) => user_command::change_user(&cli.storage, command).await,
        Some(Command::Key(command)) => key_command::manage_keys(&cli.storage, command).await,
        Some(Command::Sandbox(_)) => unreachable!("served before the async runtime starts"),
        Some(Command::Migrate) => caseload::migrate(&cli.storage).await,
        Some(Command::Ready { url, listen }) => match caseload::readiness::probe(
            &url.clone()
                .unwrap_or_else(|| caseload::readiness::url_of(*listen)),
        )
        .await
        {
            Ok(()) => Ok(()),
            Err(why) => {
                eprintln!("not ready: {why:#}");
                std::process::exit(1);
            }
        },
        Some(Command::Job(command)) => exit_with(job_command::run(command).await),
        Some(Command::Data(command)) => exit_with(data_command::run(command).await),
        Some(Command::Mcp { target }) => exit_with(mcp_command::run(target).await),
        Some(Command::Plugin(command)) => {
            let data_dir = cli.storage.data_dir.clone();
            let command = command.clone();
            let outcome =
                tokio::task::spawn_blocking(move || plugin_command(command, &data_dir)).await?;
            match outcome {
                Ok(true) => Ok(()),
                // The command's report already says what failed.
                Ok(false) => std::process::exit(1),
                // A one-line message, without the backtrace `RUST_BACKTRACE` would add.
                Err(error) => {
                    eprintln!("error: {error:#}");
                    std::process::exit(1);
                }
            }
        }
    }
}

/// Ends a command that calls a server: its failures (a refusal, a job that did not
/// complete) exit 1, saying why.
fn exit_with(outcome: anyhow::Result<bool>) -> anyhow::Result<()> {
    match outcome {
        Ok(true) => Ok(()),
        Ok(false) => std::process::exit(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::exit(1);
        }
    }
}

/// Runs a `caseload plugin` command; false if it failed in a way its output explains.
/// `data_dir` is the server's, where its plugins directory and compile cache are by default.
fn plugin_command(command: PluginCommand, data_dir: &Path) -> anyhow::Result<bool> {
    match command {
        PluginCommand::New { name, lang, dir } => {
            let dir = new_project(&name, lang, dir.as_deref())?;
            println!("{}", next_steps(&dir, lang));
            Ok(true)
        }
        PluginCommand::Build { dir, build } => {
            let component = build_project(&dir, build_options(&build))?;
            println!("{}", component.display());
            Ok(true)
        }
        PluginCommand::Check { files, run } => check_plugins(&files, check_options(run, data_dir)),
        PluginCommand::Publish {
            file,
            target,
            no_current,
            gate,
        } => {
            let gate = match gate {
                Some(path) => Some(std::fs::read_to_string(&path).map_err(|error| {
                    anyhow::anyhow!("cannot read the gate {}: {error}", path.display())
                })?),
                None => None,
            };
            let options = PublishOptions {
                target,
                current: !no_current,
                gate,
            };
            tokio::runtime::Handle::current().block_on(publish(&file, &options))
        }
        PluginCommand::Versions {
            problem,
            output,
            target,
        } => registry(registry_command::versions(&problem, output, &target)),
        PluginCommand::Promote {
            problem,
            version,
            target,
        } => registry(registry_command::promote(&problem, &version, &target)),
        PluginCommand::Retire {
            problem,
            version,
            target,
        } => registry(registry_command::retire(&problem, &version, &target)),
        PluginCommand::Download {
            problem,
            version,
            output,
            target,
        } => registry(registry_command::download(
            &problem,
            &version,
            output.as_deref(),
            &target,
        )),
        PluginCommand::Watch {
            dir,
            plugins_dir,
            build,
            run,
        } => {
            let options = WatchOptions {
                plugins_dir: plugins_dir.unwrap_or_else(|| data_dir.join("plugins")),
                build: build_options(&build),
                check: check_options(run, data_dir),
            };
            watch(&dir, &options)?;
            Ok(true)
        }
    }
}

/// Runs a registry command on the async runtime (a plugin command runs on a blocking
/// thread); true once it succeeded.
fn registry(command: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<bool> {
    tokio::runtime::Handle::current()
        .block_on(command)
        .map(|()| true)
}

fn build_options(args: &BuildArgs) -> BuildOptions {
    BuildOptions {
        offline: args.offline,
    }
}

/// The server's compile cache is the check's: given, or the server's default if its data
/// directory exists (a check elsewhere leaves no `./data` behind).
fn check_options(args: CheckArgs, data_dir: &Path) -> CheckOptions {
    let compile_cache_dir = args
        .compile_cache_dir
        .or_else(|| data_dir.is_dir().then(|| data_dir.join("compile-cache")));
    CheckOptions {
        input: args.input,
        time_limit: args.time_limit,
        compile_cache_dir,
    }
}
