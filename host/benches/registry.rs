//! What the plugin registry costs, against the release `caseload` binary. The component is
//! the test guest `versioned` in its `bench-version` build, which declares `9.0.0-r00`; the
//! bench rewrites that marker in the bytes (`r00` to `r01`, ...) to make as many distinct
//! versions as it needs, each a component no replica has seen.
//!
//! 1. **Publish to served elsewhere** (PostgreSQL, two replicas A and B on one database): per
//!    publish on A, from A's `201` to B serving the new version to unpinned launches
//!    (`GET /problem/versioned` on B shows it, polled every 2 ms: what the store's
//!    notification brings), and, in as many publishes again, from A's `201` to B accepting a
//!    job pinned to it (`POST /problem/versioned@<version>` on B, polled every 2 ms).
//! 2. **Start with published versions** (SQLite): start to `listening on` of a server whose
//!    store lists `--versions` published versions, with the compile cache the first start
//!    wrote; beside it, the same start with none published.
//! 3. **Pinned launches**: tiny jobs of `versioned` launched unpinned and pinned
//!    (`versioned@9.0.0-r00`, the same component), in alternating rounds on one server;
//!    jobs per second from the first launch to the last job's end, the median of five rounds
//!    each.
//!
//! ```text
//! cargo bench -p caseload-host --bench registry -- --postgres postgres://postgres:caseload@127.0.0.1:5432/postgres
//! cargo bench -p caseload-host --bench registry -- --publishes 20 --versions 20 --restarts 5 --jobs 2000
//! ```
//! Without `--postgres` (or `CASELOAD_TEST_DATABASE_URL`), part 1 is skipped.

mod server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use caseload::store::scratch::ScratchDatabase;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use server::Server;

const MARKER: &[u8] = b"9.0.0-r00";
const POLL: Duration = Duration::from_millis(2);
const GIVE_UP: Duration = Duration::from_secs(30);

struct Args {
    postgres: Option<String>,
    publishes: usize,
    versions: usize,
    restarts: usize,
    jobs: usize,
}

impl Args {
    fn parse() -> anyhow::Result<Args> {
        let mut args = Args {
            postgres: std::env::var(caseload::store::scratch::ADMIN_URL_VARIABLE).ok(),
            publishes: 20,
            versions: 20,
            restarts: 5,
            jobs: 2000,
        };
        let mut arguments = std::env::args().skip(1);
        while let Some(argument) = arguments.next() {
            if argument == "--bench" {
                continue;
            }
            let mut value = || {
                arguments
                    .next()
                    .with_context(|| format!("{argument} needs a value"))
            };
            match argument.as_str() {
                "--postgres" => args.postgres = Some(value()?),
                "--publishes" => args.publishes = value()?.parse()?,
                "--versions" => args.versions = value()?.parse()?,
                "--restarts" => args.restarts = value()?.parse()?,
                "--jobs" => args.jobs = value()?.parse()?,
                other => bail!(
                    "unknown argument {other:?}; options: --postgres URL --publishes N \
                     --versions N --restarts N --jobs N"
                ),
            }
        }
        ensure!(
            args.publishes > 0 && args.versions > 0 && args.restarts > 0 && args.jobs > 0,
            "counts must be at least 1"
        );
        Ok(args)
    }
}

/// The bench component declaring `9.0.0-r<number>`.
fn version_bytes(number: usize) -> anyhow::Result<(String, Vec<u8>)> {
    let path =
        std::path::Path::new(caseload::TEST_GUESTS_DIR).join("caseload_guest_versioned_bench.wasm");
    let mut bytes = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
    let version = format!("9.0.0-r{number:02}");
    ensure!(version.len() == MARKER.len(), "at most 100 versions");
    let mut found = 0;
    let mut at = 0;
    while let Some(offset) = bytes[at..]
        .windows(MARKER.len())
        .position(|window| window == MARKER)
    {
        let start = at + offset;
        bytes[start..start + MARKER.len()].copy_from_slice(version.as_bytes());
        found += 1;
        at = start + MARKER.len();
    }
    ensure!(found > 0, "the bench component holds no {MARKER:?}");
    Ok((version, bytes))
}

struct Api {
    client: Client,
    token: String,
}

impl Api {
    async fn publish(&self, server: &Server, wasm: Vec<u8>) -> anyhow::Result<()> {
        let response = self
            .client
            .post(server.url("/plugins"))
            .bearer_auth(&self.token)
            .header("content-type", "application/wasm")
            .body(wasm)
            .send()
            .await?;
        let status = response.status();
        ensure!(
            status == StatusCode::CREATED,
            "publish: {status} {}",
            response.text().await.unwrap_or_default()
        );
        Ok(())
    }

    async fn current_version(&self, server: &Server) -> anyhow::Result<String> {
        let response = self
            .client
            .get(server.url("/problem/versioned"))
            .bearer_auth(&self.token)
            .send()
            .await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(String::new());
        }
        let body: Value = response.error_for_status()?.json().await?;
        Ok(body["version"].as_str().unwrap_or_default().to_owned())
    }

    /// Launches a tiny job; whether it was accepted.
    async fn launch(&self, server: &Server, problem_id: &str) -> anyhow::Result<bool> {
        let response = self
            .client
            .post(server.url(&format!("/problem/{problem_id}")))
            .bearer_auth(&self.token)
            .json(&json!({}))
            .send()
            .await?;
        match response.status() {
            StatusCode::ACCEPTED => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            status => bail!(
                "launch: {status} {}",
                response.text().await.unwrap_or_default()
            ),
        }
    }

    async fn ended_jobs(&self, server: &Server) -> anyhow::Result<u64> {
        let counts: Value = self
            .client
            .get(server.url("/jobs/counts"))
            .bearer_auth(&self.token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(["COMPLETED", "FAILED", "CANCELLED"]
            .iter()
            .map(|status| counts[status].as_u64().unwrap_or(0))
            .sum())
    }
}

async fn until(mut done: impl AsyncFnMut() -> anyhow::Result<bool>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        if done().await? {
            return Ok(started.elapsed());
        }
        ensure!(started.elapsed() < GIVE_UP, "not within {GIVE_UP:?}");
        tokio::time::sleep(POLL).await;
    }
}

fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
    format!(
        "p50 {:.1} ms, max {:.1} ms over {}",
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1]),
        samples.len()
    )
}

async fn publish_to_served(args: &Args, url: &str) -> anyhow::Result<()> {
    let database = ScratchDatabase::create_on(url).await;
    let key_dir = tempfile::tempdir()?;
    let key_file = key_dir.path().join("jwt.pem");
    let key_file = key_file.to_str().context("a UTF-8 path")?;
    let replica_args = [
        "--database-url",
        database.url.as_str(),
        "--jwt-key-file",
        key_file,
    ];
    let a = Server::start(&replica_args, None)?;
    let b = Server::start(&replica_args, None)?;
    let client = Client::new();
    let api = Api {
        token: a.token(&client).await?,
        client,
    };
    let (mut current, mut pinned) = (Vec::new(), Vec::new());
    for round in 0..2 * args.publishes {
        let (version, wasm) = version_bytes(round)?;
        api.publish(&a, wasm).await?;
        if round % 2 == 0 {
            current.push(until(async || Ok(api.current_version(&b).await? == version)).await?);
        } else {
            let pin = format!("versioned@{version}");
            pinned.push(until(async || api.launch(&b, &pin).await).await?);
        }
    }
    println!("publish on A to served on B (PostgreSQL, two replicas):");
    println!("  unpinned launches on B get it: {}", summary(current));
    println!("  a launch pinned to it accepted on B: {}", summary(pinned));
    Ok(())
}

async fn start_with_versions(args: &Args) -> anyhow::Result<()> {
    let client = Client::new();
    let mut timings = Vec::new();
    for published in [0, args.versions] {
        let mut server = Server::start(&[], None)?;
        let api = Api {
            token: server.token(&client).await?,
            client: client.clone(),
        };
        for number in 0..published {
            api.publish(&server, version_bytes(number)?.1).await?;
        }
        // The first restart writes nothing new to the compile cache: every version was
        // compiled by its publish.
        let mut starts = Vec::new();
        for _ in 0..args.restarts {
            let started = Instant::now();
            server.kill_and_restart(&[])?;
            starts.push(started.elapsed());
        }
        let api = Api {
            token: server.token(&client).await?,
            client: client.clone(),
        };
        if published > 0 {
            ensure!(
                api.current_version(&server).await? == format!("9.0.0-r{:02}", published - 1),
                "the restarted server does not serve the last version published"
            );
        }
        timings.push((published, summary(starts)));
    }
    println!("start to listening (SQLite, warm compile cache):");
    for (published, timing) in timings {
        println!("  {published:>3} versions published: {timing}");
    }
    Ok(())
}

async fn pinned_throughput(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(&[], None)?;
    let client = Client::new();
    let api = Arc::new(Api {
        token: server.token(&client).await?,
        client,
    });
    let server = Arc::new(server);
    api.publish(&server, version_bytes(0)?.1).await?;
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut ended = api.ended_jobs(&server).await?;
    // One round of each to warm up, then `ROUNDS` of each, alternating.
    const ROUNDS: usize = 5;
    for round in 0..2 * (ROUNDS + 1) {
        let pinned = round % 2 == 1;
        let problem_id = if pinned {
            "versioned@9.0.0-r00"
        } else {
            "versioned"
        };
        let started = Instant::now();
        let next = Arc::new(AtomicUsize::new(0));
        let mut launchers = tokio::task::JoinSet::new();
        for _ in 0..32 {
            let (api, server, next) = (api.clone(), server.clone(), next.clone());
            let jobs = args.jobs;
            launchers.spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < jobs {
                    ensure!(api.launch(&server, problem_id).await?, "not accepted");
                }
                Ok::<_, anyhow::Error>(())
            });
        }
        while let Some(launched) = launchers.join_next().await {
            launched??;
        }
        let target = ended + args.jobs as u64;
        until(async || Ok(api.ended_jobs(&server).await? >= target)).await?;
        ended = target;
        // The first round of each warms up.
        if round >= 2 {
            rates[usize::from(pinned)].push(args.jobs as f64 / started.elapsed().as_secs_f64());
        }
    }
    let median = |rates: &mut Vec<f64>| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    let [unpinned, pinned] = &mut rates;
    let (unpinned, pinned) = (median(unpinned), median(pinned));
    println!(
        "tiny jobs end to end (SQLite), {} per round, median of {ROUNDS} rounds each (alternating, after one each to warm up):",
        args.jobs
    );
    println!(
        "  unpinned {unpinned:.0} jobs/s, pinned {pinned:.0} jobs/s: pinned/unpinned {:.3}",
        pinned / unpinned
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse()?;
    match &args.postgres {
        Some(url) => publish_to_served(&args, url).await?,
        None => println!("publish to served: skipped (no --postgres URL)"),
    }
    start_with_versions(&args).await?;
    pinned_throughput(&args).await?;
    Ok(())
}
