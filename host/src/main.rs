//! The `caseload` binary: parses the command line and boots; everything else is in the library.
//!
//! `cargo run --release` starts the server on 127.0.0.1:8080 with SQLite under `./data`;
//! `caseload --help` lists the options.

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use caseload::config::{Cli, Command, UserCommand};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
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
    }
}
