//! How fast a plugin build reaches service, and what the compile cache saves on a restart,
//! against the real `caseload` binary.
//!
//! 1. **Rename to serving.** With the server running (default debounce), the bench writes a
//!    max-cut component under a hidden name in the plugins directory, renames it to
//!    `maxcut.wasm`, and polls `GET /problem/maxcut` (every millisecond) until it shows the
//!    new file's digest: that is when a new job gets the new build. Each round appends a
//!    custom section with the round's number to the component, so every round is a build the
//!    server has never seen and really compiles it, like a developer's fresh build. A second
//!    series swaps between two builds it has seen, whose code comes from the compile cache.
//! 2. **Restart.** Time from starting the process to its `listening on` line, with an empty
//!    compile cache (cold) and with the entries the previous start wrote (warm), alternately,
//!    on one data directory holding the built-in max-cut and a plugin file. The first start
//!    (database and admin user creation) is not counted.
//!
//! ```text
//! cargo bench -p caseload-host --bench reload
//! cargo bench -p caseload-host --bench reload -- --rounds 20 --restarts 5
//! ```

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use caseload::plugins::MAXCUT_WASM;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const ADMIN_PASSWORD: &str = "bench-password";
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
const RELOAD_TIMEOUT: Duration = Duration::from_secs(30);

struct Options {
    rounds: usize,
    restarts: usize,
}

impl Options {
    fn parse() -> anyhow::Result<Options> {
        let mut options = Options {
            rounds: 20,
            restarts: 5,
        };
        let mut arguments = std::env::args().skip(1);
        while let Some(argument) = arguments.next() {
            if argument == "--bench" {
                continue;
            }
            let mut value = || -> anyhow::Result<usize> {
                let text = arguments
                    .next()
                    .with_context(|| format!("{argument} needs a value"))?;
                text.parse()
                    .with_context(|| format!("{argument} wants a whole number, not {text:?}"))
            };
            match argument.as_str() {
                "--rounds" => options.rounds = value()?,
                "--restarts" => options.restarts = value()?,
                other => bail!("unknown argument {other:?}; options: --rounds N --restarts N"),
            }
        }
        ensure!(
            options.rounds > 0 && options.restarts > 0,
            "counts must be at least 1"
        );
        Ok(options)
    }
}

/// A server process, killed when dropped.
struct Server {
    child: Child,
    base_url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts the server on `data_dir` and returns it with the time until it listened.
    fn start(data_dir: &Path) -> anyhow::Result<(Server, Duration)> {
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_caseload"))
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("CASELOAD_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(data_dir.join("server.log"))?)
            .spawn()
            .context("cannot start the caseload binary")?;
        let stdout = child.stdout.take().context("piped stdout")?;
        let (sender, receiver) = std::sync::mpsc::channel();
        // Drains stdout for the server's whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = sender.send(url.trim().to_owned());
                }
            }
        });
        let base_url = receiver.recv_timeout(STARTUP_TIMEOUT).with_context(|| {
            format!(
                "the server did not listen; its log:\n{}",
                std::fs::read_to_string(data_dir.join("server.log")).unwrap_or_default()
            )
        })?;
        let listening = started.elapsed();
        Ok((Server { child, base_url }, listening))
    }
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The component with a custom section appended (section id 0, then its size, its name and
/// its payload): the same plugin, another file, another digest.
fn with_custom_section(component: &[u8], payload: &str) -> Vec<u8> {
    fn leb128(mut value: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    const NAME: &str = "caseload-bench";
    let mut content = Vec::new();
    leb128(NAME.len(), &mut content);
    content.extend_from_slice(NAME.as_bytes());
    content.extend_from_slice(payload.as_bytes());
    let mut bytes = component.to_vec();
    bytes.push(0);
    leb128(content.len(), &mut bytes);
    bytes.extend_from_slice(&content);
    bytes
}

struct Api {
    client: Client,
    base_url: String,
    token: String,
}

impl Api {
    async fn login(base_url: &str) -> anyhow::Result<Api> {
        let client = Client::new();
        let response = client
            .post(format!("{base_url}/login"))
            .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
            .send()
            .await?;
        ensure!(
            response.status() == StatusCode::OK,
            "login: {}",
            response.status()
        );
        let body: Value = response.json().await?;
        let token = body["access_token"]
            .as_str()
            .context("no access_token")?
            .to_owned();
        Ok(Api {
            client,
            base_url: base_url.to_owned(),
            token,
        })
    }

    async fn maxcut_digest(&self) -> anyhow::Result<String> {
        let body: Value = self
            .client
            .get(format!("{}/problem/maxcut", self.base_url))
            .bearer_auth(&self.token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(body["digest"].as_str().unwrap_or_default().to_owned())
    }
}

/// Renames `bytes` into place as `maxcut.wasm` and returns how long until it served.
async fn rename_to_serving(
    api: &Api,
    plugins_dir: &Path,
    bytes: &[u8],
) -> anyhow::Result<Duration> {
    let staging = plugins_dir.join(".maxcut.wasm.tmp");
    std::fs::write(&staging, bytes)?;
    let wanted = digest(bytes);
    let renamed = Instant::now();
    std::fs::rename(&staging, plugins_dir.join("maxcut.wasm"))?;
    loop {
        if api.maxcut_digest().await? == wanted {
            return Ok(renamed.elapsed());
        }
        ensure!(
            renamed.elapsed() < RELOAD_TIMEOUT,
            "the new build did not serve within {RELOAD_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn summary(samples: &mut [Duration]) -> String {
    samples.sort();
    let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
    format!(
        "median {:.0} ms (min {:.0} ms, max {:.0} ms, n = {})",
        millis(samples[samples.len() / 2]),
        millis(samples[0]),
        millis(samples[samples.len() - 1]),
        samples.len()
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse()?;

    // 1. Rename to serving.
    let data_dir = tempfile::tempdir()?;
    let plugins_dir = data_dir.path().join("plugins");
    std::fs::create_dir_all(&plugins_dir)?;
    let (server, _) = Server::start(data_dir.path())?;
    let api = Api::login(&server.base_url).await?;
    println!(
        "max-cut component: {} bytes; server with the default --plugins-debounce (250ms)",
        MAXCUT_WASM.as_slice().len()
    );
    let mut fresh = Vec::new();
    for round in 0..options.rounds {
        let bytes = with_custom_section(MAXCUT_WASM.as_slice(), &format!("round {round}"));
        fresh.push(rename_to_serving(&api, &plugins_dir, &bytes).await?);
    }
    println!(
        "rename -> serving, a build never seen (compiled):     {}",
        summary(&mut fresh)
    );
    let seen = [
        with_custom_section(MAXCUT_WASM.as_slice(), "round 0"),
        with_custom_section(MAXCUT_WASM.as_slice(), "round 1"),
    ];
    let mut cached = Vec::new();
    for round in 0..options.rounds {
        cached.push(rename_to_serving(&api, &plugins_dir, &seen[round % 2]).await?);
    }
    println!(
        "rename -> serving, a build seen before (compile cache): {}",
        summary(&mut cached)
    );
    drop(server);

    // 2. Restarts, cold and warm. The plugin file stays; only the cache is emptied.
    let cache_dir = data_dir.path().join("compile-cache");
    let (first, _) = Server::start(data_dir.path())?;
    drop(first);
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..options.restarts {
        std::fs::remove_dir_all(&cache_dir)?;
        let (server, listening) = Server::start(data_dir.path())?;
        cold.push(listening);
        drop(server);
        let (server, listening) = Server::start(data_dir.path())?;
        warm.push(listening);
        drop(server);
    }
    println!(
        "start -> listening, cold compile cache: {}",
        summary(&mut cold)
    );
    println!(
        "start -> listening, warm compile cache: {}",
        summary(&mut warm)
    );
    Ok(())
}
