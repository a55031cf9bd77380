//! The release `caseload` binary as the end-to-end benches start it: on a fresh data
//! directory, on a port of its own, killed when dropped.

// Each bench uses the part it needs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::Client;
use serde_json::{Value, json};

pub const ADMIN_PASSWORD: &str = "bench-password";

pub struct Server {
    child: Child,
    base_url: String,
    data_dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The release binary with `args`, under `ulimit -n <open_files>` if given.
    pub fn start(args: &[&str], open_files: Option<u32>) -> anyhow::Result<Server> {
        let data_dir = tempfile::tempdir()?;
        let (child, base_url) = spawn(data_dir.path(), args, open_files)?;
        Ok(Server {
            child,
            base_url,
            data_dir,
        })
    }

    /// Kills the server (SIGKILL) and starts it again on the same data directory.
    pub fn kill_and_restart(&mut self, args: &[&str]) -> anyhow::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        let (child, base_url) = spawn(self.data_dir.path(), args, None)?;
        self.child = child;
        self.base_url = base_url;
        Ok(())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub fn address(&self) -> String {
        self.base_url.trim_start_matches("http://").to_owned()
    }

    /// Adds a user through `caseload user add`, as an operator would.
    pub fn add_user(&self, name: &str, password: &str) -> anyhow::Result<()> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_caseload"))
            .args(["user", "add", name, "--password-stdin", "--data-dir"])
            .arg(self.data_dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        writeln!(child.stdin.take().context("piped")?, "{password}")?;
        if !child.wait()?.success() {
            bail!("cannot add user {name}");
        }
        Ok(())
    }

    pub async fn token(&self, client: &Client) -> anyhow::Result<String> {
        self.token_of(client, "admin", ADMIN_PASSWORD).await
    }

    pub async fn token_of(
        &self,
        client: &Client,
        user: &str,
        password: &str,
    ) -> anyhow::Result<String> {
        let body: Value = client
            .post(self.url("/login"))
            .json(&json!({"username": user, "password": password}))
            .send()
            .await?
            .json()
            .await?;
        Ok(body["access_token"]
            .as_str()
            .context("no token")?
            .to_owned())
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A field of the server's `/proc/<pid>/status` in MB (`VmRSS`, `VmHWM`).
    pub fn memory_mb(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|line| line.starts_with(field))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    }
}

/// Starts the release binary on `data_dir`; the child and the URL it listens on.
fn spawn(
    data_dir: &std::path::Path,
    args: &[&str],
    open_files: Option<u32>,
) -> anyhow::Result<(Child, String)> {
    let limit = open_files.map_or(String::new(), |files| format!("ulimit -n {files} && "));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{limit}bin=\"$0\"; dir=\"$1\"; shift; \
             exec \"$bin\" --listen 127.0.0.1:0 --data-dir \"$dir\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_caseload"))
        .arg(data_dir)
        .args(args)
        .env("CASELOAD_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start the server")?;
    let stdout = child.stdout.take().context("piped")?;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = sender.send(url.to_owned());
            }
        }
    });
    let base_url = receiver
        .recv_timeout(Duration::from_secs(60))
        .context("the server did not start")?;
    Ok((child, base_url))
}
