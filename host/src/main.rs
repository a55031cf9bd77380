//! The `caseload` binary: parses the command line and boots; everything else is in the library.
//!
//! `cargo run --release` starts the server on 127.0.0.1:8080 with SQLite under `./data`;
//! `caseload --help` lists the options.

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use caseload::config::{Cli, Command, PluginCommand, UserCommand};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // A command's report is its output; the server's log lines would only bury it.
    let default_level = match cli.command {
        Some(Command::Plugin(_)) => "warn",
        _ => "info",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match &cli.command {
        None => caseload::serve(&cli.storage, &cli.serve).await,
        Some(Command::Serve(args)) => caseload::serve(&cli.storage, args).await,
        Some(Command::User(UserCommand::Add { name, .. })) => {
            caseload::add_user(&cli.storage, name).await
        }
        Some(Command::Plugin(PluginCommand::Check { files })) => {
            let files = files.clone();
            let all_load =
                tokio::task::spawn_blocking(move || caseload::plugin_check::check_plugins(&files))
                    .await??;
            if !all_load {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}
