//! Many clients at once, some hostile, against the release binary, each figure beside the
//! undisturbed one measured in the same run:
//!
//! 1. **Connection flood.** With the server started under `ulimit -n 1024`, 5,000 TCP
//!    connections are opened and held without sending a byte, while a probe opens a fresh
//!    connection for `GET /healthz` every 50 ms. It reports the probe's latency (p50, p99,
//!    max) and failures during the flood, and how long after the flood's last connection
//!    the server had closed every one of them.
//! 2. **Login flood.** 128 clients send wrong passwords as fast as they are answered, each
//!    from an address of its own in 127.1.0.0/16 (so each gets its 5 failures before the
//!    throttle holds it back), while a probe submits tiny max-cut jobs one after another. It
//!    reports the submissions' p50 and p99 before and during the flood, and the logins
//!    answered 401 and 429.
//!
//! 3. **Fair share.** User `admin` submits `--backlog` max-cut jobs of 3 s each on a
//!    300-node random graph (each runs its full time) to a server with 2 workers; then a
//!    second user submits the 5-cycle. It reports how long the second user's job took from
//!    submission to `COMPLETED`, against one job slot (3 s) and against its wait first in,
//!    first out (the backlog's length times 3 s over 2 workers).
//!
//! 4. **Large bodies.** 64 submissions of a 3.9 MB max-cut matrix, 32 at a time, while the
//!    `/healthz` probe runs. It reports the burst's duration, the probe's latency, and the
//!    server's peak and remaining resident memory (`VmHWM` and `VmRSS` of `/proc`).
//!
//! ```sh
//! cargo bench -p caseload-host --bench abuse -- [--seconds 10]
//! ```
//!
//! Traffic goes to 127.0.0.0/8 only; every loop is bounded by `--seconds`.

mod server;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use futures_util::StreamExt;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use server::Server;

const FIVE_CYCLE: &str =
    r#"{"num_nodes":5,"adj_matrix":[[0,1,0,0,1],[1,0,1,0,0],[0,1,0,1,0],[0,0,1,0,1],[1,0,0,1,0]]}"#;

#[derive(Debug, Parser)]
#[command(about = "Measures the server under connection and login floods")]
struct Args {
    /// How long each measured phase lasts.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Connections the flood opens.
    #[arg(long, default_value_t = 5000)]
    connections: usize,
    /// Clients sending wrong passwords.
    #[arg(long, default_value_t = 128)]
    login_clients: usize,
    /// Jobs of 3 s the first user queues before the second user's job.
    #[arg(long, default_value_t = 20)]
    backlog: usize,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = Server::start(&["--workers", "2"], Some(1024))?;
    connection_flood(&server, &args).await?;
    login_flood(&server, &args).await?;
    fair_share(&server, &args).await?;
    large_bodies(&server).await?;
    Ok(())
}

/// `GET /healthz` on a fresh connection every 50 ms for `seconds`: latencies and failures.
async fn probe_healthz(server: &Server, seconds: u64) -> (Vec<Duration>, usize) {
    let mut latencies = Vec::new();
    let mut failures = 0;
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    while Instant::now() < end {
        tick.tick().await;
        // A client of its own: a new connection each time, as a new user would open.
        let client = Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(5))
            .build()
            .expect("a client");
        let started = Instant::now();
        match client.get(server.url("/healthz")).send().await {
            Ok(response) if response.status() == StatusCode::OK => {
                latencies.push(started.elapsed())
            }
            _ => failures += 1,
        }
    }
    (latencies, failures)
}

async fn connection_flood(server: &Server, args: &Args) -> anyhow::Result<()> {
    println!(
        "connection flood: {} silent connections, the server under ulimit -n 1024",
        args.connections
    );
    let (idle, idle_failures) = probe_healthz(server, args.seconds.min(5)).await;
    println!(
        "  /healthz undisturbed: {}, {idle_failures} failed",
        summary(idle)
    );

    let address = server.address();
    let opened = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let flood = {
        let (opened, refused) = (opened.clone(), refused.clone());
        let connections = args.connections;
        tokio::spawn(async move {
            let mut held = Vec::new();
            for _ in 0..connections {
                match tokio::net::TcpStream::connect(&address).await {
                    Ok(stream) => {
                        opened.fetch_add(1, Ordering::Relaxed);
                        held.push(stream);
                    }
                    Err(_) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            held
        })
    };
    let (during, failures) = probe_healthz(server, args.seconds).await;
    let held = flood.await?;
    let flood_ended = Instant::now();
    println!(
        "  /healthz during the flood: {}, {failures} failed ({} connections opened, {} refused)",
        summary(during),
        opened.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed)
    );
    // How long until the server has closed them all.
    let mut closing = Vec::new();
    for mut stream in held {
        closing.push(tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buffer = [0u8; 64];
            let _ = tokio::time::timeout(Duration::from_secs(120), stream.read(&mut buffer)).await;
        }));
    }
    for task in closing {
        task.await?;
    }
    println!(
        "  every flood connection closed by the server {:.1} s after the flood ended",
        flood_ended.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Tiny max-cut jobs submitted one after another for `seconds`: the submissions' latencies.
async fn probe_submissions(
    server: &Server,
    client: &Client,
    token: &str,
    seconds: u64,
) -> anyhow::Result<Vec<Duration>> {
    let body: Value = serde_json::from_str(FIVE_CYCLE)?;
    let mut latencies = Vec::new();
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        let started = Instant::now();
        let response = client
            .post(server.url("/problem/maxcut"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await?;
        if response.status() != StatusCode::ACCEPTED {
            bail!("a submission answered {}", response.status());
        }
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}

async fn login_flood(server: &Server, args: &Args) -> anyhow::Result<()> {
    println!(
        "login flood: {} clients sending wrong passwords, each from its own address",
        args.login_clients
    );
    let client = Client::new();
    let token = server.token(&client).await?;
    let idle = probe_submissions(server, &client, &token, args.seconds).await?;
    println!("  POST /problem undisturbed: {}", summary(idle.clone()));

    let stop = Arc::new(AtomicBool::new(false));
    let unauthorized = Arc::new(AtomicU64::new(0));
    let throttled = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for index in 0..args.login_clients {
        let address = IpAddr::V4(Ipv4Addr::new(
            127,
            1,
            (index / 250) as u8,
            (index % 250 + 1) as u8,
        ));
        let client = Client::builder().local_address(address).build()?;
        let url = server.url("/login");
        let (stop, unauthorized, throttled) =
            (stop.clone(), unauthorized.clone(), throttled.clone());
        clients.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let answer = client
                    .post(&url)
                    .json(&json!({"username": "admin", "password": "a wrong guess"}))
                    .send()
                    .await;
                match answer.map(|response| response.status()) {
                    Ok(StatusCode::UNAUTHORIZED) => unauthorized.fetch_add(1, Ordering::Relaxed),
                    Ok(StatusCode::TOO_MANY_REQUESTS) => throttled.fetch_add(1, Ordering::Relaxed),
                    _ => 0,
                };
            }
        }));
    }
    let during = probe_submissions(server, &client, &token, args.seconds).await?;
    stop.store(true, Ordering::Relaxed);
    for task in clients {
        task.await?;
    }
    let ratio = percentile(&sorted(during.clone()), 0.5).as_secs_f64()
        / percentile(&sorted(idle), 0.5).as_secs_f64();
    println!(
        "  POST /problem during the flood: {} (p50 {ratio:.2}× undisturbed); logins answered 401: {}, 429: {}",
        summary(during),
        unauthorized.load(Ordering::Relaxed),
        throttled.load(Ordering::Relaxed)
    );
    Ok(())
}

fn sorted(mut latencies: Vec<Duration>) -> Vec<Duration> {
    latencies.sort();
    latencies
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn summary(latencies: Vec<Duration>) -> String {
    let latencies = sorted(latencies);
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {} requests",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default()),
        latencies.len()
    )
}

async fn fair_share(server: &Server, args: &Args) -> anyhow::Result<()> {
    println!(
        "fair share: {} jobs of 3 s by one user, then one tiny job by another, 2 workers",
        args.backlog
    );
    server.add_user("second", "second user's password")?;
    let client = Client::new();
    let first = server.token(&client).await?;
    let second = server
        .token_of(&client, "second", "second user's password")
        .await?;

    // A random graph on which max-cut runs its whole time limit.
    let mut state = 7u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let edges: Vec<Value> = (0..300u64)
        .flat_map(|i| (0..6).map(move |k| (i, k)))
        .map(|(i, _)| json!([i, next() % 300, (next() % 21) as i64 - 10]))
        .filter(|edge| edge[0] != edge[1])
        .collect();
    let slow = json!({"num_nodes": 300, "edges": edges, "options": {"time_limit_s": 3}});
    for _ in 0..args.backlog {
        let response = client
            .post(server.url("/problem/maxcut"))
            .bearer_auth(&first)
            .json(&slow)
            .send()
            .await?;
        if response.status() != StatusCode::ACCEPTED {
            bail!("a backlog job answered {}", response.status());
        }
    }
    let submitted = Instant::now();
    let body: Value = serde_json::from_str(FIVE_CYCLE)?;
    let answer: Value = client
        .post(server.url("/problem/maxcut"))
        .bearer_auth(&second)
        .json(&body)
        .send()
        .await?
        .json()
        .await?;
    let job = answer["job"].as_str().context("a job id")?.to_owned();
    loop {
        let view: Value = client
            .get(server.url(&format!("/job/{job}")))
            .bearer_auth(&second)
            .send()
            .await?
            .json()
            .await?;
        if view["job"][&job]["status"] == "COMPLETED" {
            break;
        }
        if submitted.elapsed() > Duration::from_secs(300) {
            bail!("the second user's job did not complete");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "  the second user's job: COMPLETED {:.2} s after it was submitted (one job slot: 3 s; \
         first in, first out it would wait about {} s)",
        submitted.elapsed().as_secs_f64(),
        args.backlog * 3 / 2
    );
    Ok(())
}

/// A line of the server's `/proc/<pid>/status`, such as `VmHWM`, in MB.
async fn large_bodies(server: &Server) -> anyhow::Result<()> {
    println!("large bodies: 64 submissions of a 3.9 MB matrix, 32 at a time");
    let client = Client::new();
    let token = server.token(&client).await?;
    let n = 1390;
    let mut state = 11u64;
    let matrix: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    0
                })
                .collect()
        })
        .collect();
    let body = serde_json::to_vec(
        &json!({"num_nodes": n, "adj_matrix": matrix, "options": {"time_limit_s": 1}}),
    )?;
    println!(
        "  body: {:.1} MB; server resident before: {:.0} MB (peak so far {:.0} MB)",
        body.len() as f64 / 1e6,
        server.memory_mb("VmRSS"),
        server.memory_mb("VmHWM")
    );
    let body = bytes::Bytes::from(body);
    let started = Instant::now();
    let burst = {
        let client = client.clone();
        let url = server.url("/problem/maxcut");
        tokio::spawn(async move {
            let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
            let mut answers = futures_util::stream::iter(0..64)
                .map(|_| {
                    client
                        .post(&url)
                        .bearer_auth(&token)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                })
                .buffer_unordered(32);
            while let Some(answer) = answers.next().await {
                let status = answer.map_or(0, |response| response.status().as_u16());
                *statuses.entry(status).or_default() += 1;
            }
            statuses
        })
    };
    let mut probes = Vec::new();
    let mut failures = 0;
    while !burst.is_finished() {
        let probe = Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(5))
            .build()?;
        let sent = Instant::now();
        match probe.get(server.url("/healthz")).send().await {
            Ok(response) if response.status() == StatusCode::OK => probes.push(sent.elapsed()),
            _ => failures += 1,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let statuses = burst.await?;
    println!(
        "  burst over in {:.1} s, answers by status {statuses:?}; /healthz meanwhile: {}, {failures} failed",
        started.elapsed().as_secs_f64(),
        summary(probes)
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "  server resident: peak {:.0} MB, 2 s after the burst {:.0} MB",
        server.memory_mb("VmHWM"),
        server.memory_mb("VmRSS")
    );
    Ok(())
}
