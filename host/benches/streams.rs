//! Event streams against the release binary: what many of them cost, and whether they can
//! keep anyone else out. Each figure beside the undisturbed one, measured in the same run.
//!
//! 1. **Stream flood.** The server under `ulimit -n 1024`. One user opens `--flood` (800)
//!    `GET /jobs/events` streams at once, each on its own connection; then `--flood` users'
//!    worth of places are taken by eight users opening `--flood / 8` each (more streams than
//!    the connection cap allows). Throughout, a probe opens a fresh connection every 50 ms for
//!    `GET /healthz` and another for `POST /login`. It reports the streams answered 200, 429,
//!    and ended with a `reconnect` event, and the probes' latencies and failures.
//! 2. **Fan-out.** A server that lets one user hold `--fan-out` (2,000) streams. That user
//!    launches tiny jobs at `--rate` (100) per second, so that every change wakes every
//!    stream, while another user launches one job every 50 ms and times each `POST`. First
//!    without streams, then with them. It reports the other user's p50 and p99, their ratio,
//!    and the server's CPU seconds in each phase.
//!
//! ```sh
//! cargo bench -p caseload-host --bench streams -- [--seconds 10] [--flood 800] [--fan-out 2000]
//! ```
//!
//! Traffic goes to 127.0.0.1 only; every loop is bounded by `--seconds`.

mod server;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Parser;
use futures_util::StreamExt;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use server::{ADMIN_PASSWORD, Server};

const FIVE_CYCLE: &str =
    r#"{"num_nodes":5,"adj_matrix":[[0,1,0,0,1],[1,0,1,0,0],[0,1,0,1,0],[0,0,1,0,1],[1,0,0,1,0]]}"#;

#[derive(Debug, Parser)]
#[command(about = "Measures what event streams cost and whether they keep others out")]
struct Args {
    /// Seconds each measured phase lasts.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Streams opened in the flood.
    #[arg(long, default_value_t = 800)]
    flood: usize,
    /// Streams one user holds during the fan-out.
    #[arg(long, default_value_t = 2000)]
    fan_out: usize,
    /// Jobs per second the streams' user launches during the fan-out.
    #[arg(long, default_value_t = 100)]
    rate: u64,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    raise_open_file_limit();
    stream_flood(&args).await?;
    fan_out(&args).await?;
    Ok(())
}

/// This process opens thousands of connections: its soft limit goes up to the hard one.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};

    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
}

/// What happened to the streams opened.
#[derive(Debug, Default)]
struct StreamCounts {
    opened: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
    reconnected: AtomicU64,
    events: AtomicU64,
}

/// Opens `count` streams of `token` at once, each on its own connection, and reads each
/// until it ends or `stop` is set.
async fn open_streams(
    server: &Server,
    token: &str,
    count: usize,
    counts: Arc<StreamCounts>,
    stop: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::with_capacity(count);
    for _ in 0..count {
        let url = server.url("/jobs/events");
        let token = token.to_owned();
        let (counts, stop) = (counts.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let client = Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("a client");
            let response = match client.get(url).bearer_auth(token).send().await {
                Ok(response) => response,
                Err(_) => {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            match response.status() {
                StatusCode::OK => counts.opened.fetch_add(1, Ordering::Relaxed),
                StatusCode::TOO_MANY_REQUESTS => {
                    counts.refused.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                _ => {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            let mut body = response.bytes_stream();
            while !stop.load(Ordering::Relaxed) {
                let next = tokio::time::timeout(Duration::from_millis(500), body.next()).await;
                match next {
                    Ok(Some(Ok(chunk))) => {
                        let text = String::from_utf8_lossy(&chunk);
                        let events = text.matches("event: ").count() as u64;
                        counts.events.fetch_add(events, Ordering::Relaxed);
                        if text.contains("event: reconnect") {
                            counts.reconnected.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    }
                    Ok(_) => return,
                    Err(_) => {}
                }
            }
        }));
    }
    tasks
}

async fn stream_flood(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(&["--workers", "2"], Some(1024))?;
    server.add_user("prober", "prober's password")?;
    let client = Client::new();
    let users = 8;
    let mut tokens = Vec::new();
    for index in 0..users {
        let name = format!("flooder{index}");
        server.add_user(&name, ADMIN_PASSWORD)?;
        tokens.push(server.token_of(&client, &name, ADMIN_PASSWORD).await?);
    }
    println!(
        "stream flood: the server under ulimit -n 1024, probes on fresh connections every 50 ms"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let prober = tokio::spawn(ServerRef(server.url("")).probe(stop.clone()));
    tokio::time::sleep(Duration::from_secs(args.seconds.min(3))).await;
    stop.store(true, Ordering::Relaxed);
    let (health, login, failures) = prober.await?;
    println!(
        "  undisturbed: /healthz {}; /login {}; failures {failures}",
        summary(health),
        summary(login)
    );

    for (label, per_user, user_count) in [
        ("one user", args.flood, 1),
        ("eight users", args.flood / users, users),
    ] {
        let counts = Arc::new(StreamCounts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let prober = tokio::spawn(ServerRef(server.url("")).probe(stop.clone()));
        let mut streams = Vec::new();
        for token in tokens.iter().take(user_count) {
            streams
                .extend(open_streams(&server, token, per_user, counts.clone(), stop.clone()).await);
        }
        tokio::time::sleep(Duration::from_secs(args.seconds)).await;
        stop.store(true, Ordering::Relaxed);
        let (health, login, failures) = prober.await?;
        for stream in streams {
            stream.abort();
        }
        println!(
            "  {} streams by {label}: 200 {}, 429 {}, failed {}, ended by reconnect {}",
            per_user * user_count,
            counts.opened.load(Ordering::Relaxed),
            counts.refused.load(Ordering::Relaxed),
            counts.failed.load(Ordering::Relaxed),
            counts.reconnected.load(Ordering::Relaxed),
        );
        println!(
            "    /healthz {}; /login {}; probe failures {failures}",
            summary(health),
            summary(login)
        );
        // Let the server see the aborted streams' connections close.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    Ok(())
}

/// A server's base URL, for probes in tasks of their own.
struct ServerRef(String);

impl ServerRef {
    /// `GET /healthz` and `POST /login` on fresh connections every 50 ms until `stop`.
    async fn probe(self, stop: Arc<AtomicBool>) -> (Vec<Duration>, Vec<Duration>, usize) {
        let (mut health, mut login, mut failures) = (Vec::new(), Vec::new(), 0);
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            let client = Client::builder()
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(5))
                .build()
                .expect("a client");
            let started = Instant::now();
            match client.get(format!("{}/healthz", self.0)).send().await {
                Ok(response) if response.status() == StatusCode::OK => {
                    health.push(started.elapsed())
                }
                _ => failures += 1,
            }
            let started = Instant::now();
            let answer = client
                .post(format!("{}/login", self.0))
                .json(&json!({"username": "prober", "password": "prober's password"}))
                .send()
                .await;
            match answer {
                Ok(response) if response.status() == StatusCode::OK => {
                    login.push(started.elapsed())
                }
                _ => failures += 1,
            }
        }
        (health, login, failures)
    }
}

/// The server's user and system CPU seconds so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

async fn fan_out(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(
        &["--max-held-requests-per-user", &args.fan_out.to_string()],
        None,
    )?;
    server.add_user("other", "other's password")?;
    let client = Client::new();
    let token = server.token(&client).await?;
    let other = server
        .token_of(&client, "other", "other's password")
        .await?;
    println!(
        "fan-out: {} streams of one user, which launches {} tiny jobs/s; another user launches every 50 ms",
        args.fan_out, args.rate
    );
    let quiet = fan_out_phase(&server, &token, &other, args, 0).await?;
    let loaded = fan_out_phase(&server, &token, &other, args, args.fan_out).await?;
    let p99 = |latencies: &[Duration]| percentile(latencies, 0.99).as_secs_f64();
    println!(
        "  the other user's POST p99 with the streams / without: {:.2}×",
        p99(&loaded) / p99(&quiet)
    );
    Ok(())
}

/// One phase: `streams` streams held while the load runs; the other user's latencies.
async fn fan_out_phase(
    server: &Server,
    token: &str,
    other: &str,
    args: &Args,
    streams: usize,
) -> anyhow::Result<Vec<Duration>> {
    let counts = Arc::new(StreamCounts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let held = open_streams(server, token, streams, counts.clone(), stop.clone()).await;
    // Wait until they are all open.
    let deadline = Instant::now() + Duration::from_secs(60);
    while (counts.opened.load(Ordering::Relaxed) as usize) < streams {
        if Instant::now() > deadline {
            bail!(
                "only {} streams opened",
                counts.opened.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let body: Value = serde_json::from_str(FIVE_CYCLE)?;
    let load = tokio::spawn({
        let (url, token, body, stop, rate) = (
            server.url("/problem/maxcut"),
            token.to_owned(),
            body.clone(),
            stop.clone(),
            args.rate,
        );
        async move {
            let client = Client::new();
            let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                let request = client.post(&url).bearer_auth(&token).json(&body).send();
                tokio::spawn(request);
            }
        }
    });
    let cpu_before = cpu_seconds(server.pid());
    let own_cpu_before = cpu_seconds(std::process::id());
    let started = Instant::now();
    // The other user on a thread and runtime of its own: the streams' readers keep this
    // process's main runtime busy, and their delays must not count as the server's.
    let (url, other, seconds) = (
        server.url("/problem/maxcut"),
        other.to_owned(),
        args.seconds,
    );
    let latencies = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let mut latencies = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            let client = Client::new();
            while started.elapsed() < Duration::from_secs(seconds) {
                tick.tick().await;
                let sent = Instant::now();
                let response = client
                    .post(&url)
                    .bearer_auth(&other)
                    .json(&body)
                    .send()
                    .await?;
                if response.status() != StatusCode::ACCEPTED {
                    bail!("a launch answered {}", response.status());
                }
                latencies.push(sent.elapsed());
            }
            Ok::<_, anyhow::Error>(latencies)
        })
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the other user's thread panicked"))??;
    let cpu = cpu_seconds(server.pid()) - cpu_before;
    let own_cpu = cpu_seconds(std::process::id()) - own_cpu_before;
    stop.store(true, Ordering::Relaxed);
    load.await?;
    for stream in held {
        stream.abort();
    }
    let mut latencies = latencies;
    latencies.sort();
    println!(
        "  {streams} streams: the other user's POST {}; server CPU {cpu:.1} s (this bench's {own_cpu:.1} s) over {:.1} s; {} events read",
        summary(latencies.clone()),
        started.elapsed().as_secs_f64(),
        counts.events.load(Ordering::Relaxed)
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(latencies)
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn summary(mut latencies: Vec<Duration>) -> String {
    latencies.sort();
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {}",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default()),
        latencies.len()
    )
}
