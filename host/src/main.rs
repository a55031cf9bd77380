//! The `caseload` binary: parses the command line and boots; everything else is in the library.
//!
//! `cargo run --release` starts the server on 127.0.0.1:8080 with SQLite under `./data`;
//! `caseload --help` lists the options.

use std::path::PathBuf;

use clap::Parser;

use caseload::config::{BuildArgs, CheckArgs, Cli, Command, PluginCommand};
use caseload::kit::build::{BuildOptions, build_project};
use caseload::kit::check::{CheckOptions, check_plugins};
use caseload::kit::new::{new_project, next_steps};
use caseload::kit::watch::{WatchOptions, watch};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // A command's report is its output; the server's log lines would only bury it.
    let default_level = match cli.command {
        Some(Command::Plugin(_)) => "warn",
        _ => "info",
    };
    let otlp = match &cli.command {
        None => cli.serve.otlp_endpoint.as_ref(),
        Some(Command::Serve(args)) => args.otlp_endpoint.as_ref(),
        Some(_) => None,
    };
    // Kept to the end of main: dropping it flushes the last traces.
    let _telemetry = caseload::telemetry::init(default_level, otlp)?;
    match &cli.command {
        None => caseload::serve(&cli.storage, &cli.serve).await,
        Some(Command::Serve(args)) => caseload::serve(&cli.storage, args).await,
        Some(Command::User(command)) => caseload::change_user(&cli.storage, command).await,
        Some(Command::Plugin(command)) => {
            let plugins_dir = cli.storage.data_dir.join("plugins");
            let command = command.clone();
            let outcome =
                tokio::task::spawn_blocking(move || plugin_command(command, plugins_dir)).await?;
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

/// Runs a `caseload plugin` command; false if it failed in a way its output explains.
fn plugin_command(command: PluginCommand, default_plugins_dir: PathBuf) -> anyhow::Result<bool> {
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
        PluginCommand::Check { files, run } => check_plugins(&files, check_options(run)),
        PluginCommand::Watch {
            dir,
            plugins_dir,
            build,
            run,
        } => {
            let options = WatchOptions {
                plugins_dir: plugins_dir.unwrap_or(default_plugins_dir),
                build: build_options(&build),
                check: check_options(run),
            };
            watch(&dir, &options)?;
            Ok(true)
        }
    }
}

fn build_options(args: &BuildArgs) -> BuildOptions {
    BuildOptions {
        offline: args.offline,
    }
}

fn check_options(args: CheckArgs) -> CheckOptions {
    CheckOptions {
        input: args.input,
        time_limit: args.time_limit,
    }
}
