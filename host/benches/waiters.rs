//! What clients that wait cost the server, and how soon they hear. Against the release
//! binary:
//!
//! 1. **Holding.** A server that runs no job (`--workers 0`) holds `--waiters` pending jobs.
//!    The bench opens one long-poll (`GET /job/<id>?wait=60`) on each, then one event stream
//!    (`GET /job/<id>/events`) on each, and reads the server's resident memory before and
//!    after each set (`VmRSS`), once `/metrics` counts them all held.
//! 2. **Hearing.** It cancels the jobs one after another (at `--cancel-rate` per second) and
//!    times, for each, from the cancel request to its long-poll's answer and to its stream's
//!    `end` event: the end of a job, seen by its waiters.
//! 3. **Throughput while held.** A second server with its default workers runs `--jobs`
//!    tiny max-cut jobs (submitted 32 at a time, timed until `GET /jobs` lists none pending
//!    or running), undisturbed, then with `--waiters` long-polls and as many streams held on
//!    it (long-polls on completed jobs for a status they will not leave, streams of an idle
//!    user), then undisturbed again.
//!
//! ```sh
//! cargo bench -p caseload-host --bench waiters -- [--waiters 1000] [--jobs 4000]
//! ```

mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use futures_util::StreamExt;
use reqwest::Client;
use serde_json::Value;
use tokio::sync::Mutex;

use server::Server;

const TINY: &str =
    r#"{"num_nodes":5,"adj_matrix":[[0,1,0,0,1],[1,0,1,0,0],[0,1,0,1,0],[0,0,1,0,1],[1,0,0,1,0]]}"#;

#[derive(Debug, Parser)]
#[command(about = "Measures held long-polls and event streams")]
struct Args {
    /// Long-polls, and as many event streams, held at once.
    #[arg(long, default_value_t = 1000)]
    waiters: usize,
    /// Jobs cancelled per second while the waiters listen.
    #[arg(long, default_value_t = 200)]
    cancel_rate: u64,
    /// Tiny jobs per throughput run.
    #[arg(long, default_value_t = 4000)]
    jobs: usize,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    holding_and_hearing(&args).await?;
    throughput_while_held(&args).await?;
    Ok(())
}

/// A client for many connections at once: one per held request.
fn client() -> Client {
    Client::builder()
        .pool_max_idle_per_host(4096)
        .timeout(Duration::from_secs(120))
        .build()
        .expect("a client")
}

async fn launch(
    client: &Client,
    server: &Server,
    token: &str,
    body: &str,
) -> anyhow::Result<String> {
    let response = client
        .post(server.url("/problem/maxcut"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await?;
    if response.status() != reqwest::StatusCode::ACCEPTED {
        bail!("a launch answered {}", response.status());
    }
    let body: Value = response.json().await?;
    Ok(body["job"].as_str().context("no job id")?.to_owned())
}

/// The `caseload_waiters` gauges of `/metrics`: (on one job, on a user's jobs).
async fn waiters_held(client: &Client, server: &Server) -> anyhow::Result<(usize, usize)> {
    let text = client
        .get(server.url("/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let gauge = |kind: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("caseload_waiters{{kind=\"{kind}\"}} ")))
            .and_then(|value| value.parse().ok())
            .unwrap_or(0)
    };
    Ok((gauge("job"), gauge("user")))
}

/// Waits until `/metrics` counts `held` waiters (job, user), for at most 60 s.
async fn until_held(client: &Client, server: &Server, held: (usize, usize)) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = waiters_held(client, server).await?;
        if now.0 >= held.0 && now.1 >= held.1 {
            // A moment for the memory of the last ones to settle.
            tokio::time::sleep(Duration::from_millis(500)).await;
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {now:?} of {held:?} waiters held after 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn summary(mut latencies: Vec<Duration>) -> String {
    latencies.sort();
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {}",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default()),
        latencies.len()
    )
}

async fn holding_and_hearing(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(&["--workers", "0"], None)?;
    let client = client();
    let token = server.token(&client).await?;
    let mut jobs = Vec::with_capacity(args.waiters);
    for _ in 0..args.waiters {
        jobs.push(launch(&client, &server, &token, TINY).await?);
    }
    println!(
        "holding: {} pending jobs on a server that runs none (--workers 0)",
        args.waiters
    );
    let before = server.memory_mb("VmRSS");

    // When each job's waiters heard of its end.
    let heard_poll: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; jobs.len()]));
    let heard_stream: Arc<Mutex<Vec<Option<Instant>>>> =
        Arc::new(Mutex::new(vec![None; jobs.len()]));
    let mut tasks = Vec::new();
    for (index, job) in jobs.iter().enumerate() {
        let request = client
            .get(server.url(&format!("/job/{job}?wait=60")))
            .bearer_auth(&token);
        let heard = heard_poll.clone();
        tasks.push(tokio::spawn(async move {
            let answer: Value = request.send().await?.json().await?;
            heard.lock().await[index] = Some(Instant::now());
            anyhow::Ok(answer)
        }));
    }
    until_held(&client, &server, (jobs.len(), 0)).await?;
    let polls = server.memory_mb("VmRSS");
    for (index, job) in jobs.iter().enumerate() {
        let request = client
            .get(server.url(&format!("/job/{job}/events")))
            .bearer_auth(&token);
        let heard = heard_stream.clone();
        tasks.push(tokio::spawn(async move {
            let mut body = request.send().await?.bytes_stream();
            let mut text = String::new();
            while let Some(chunk) = body.next().await {
                text.push_str(&String::from_utf8_lossy(&chunk?));
                if text.contains("event: end") {
                    heard.lock().await[index] = Some(Instant::now());
                    break;
                }
            }
            anyhow::Ok(Value::Null)
        }));
    }
    until_held(&client, &server, (2 * jobs.len(), 0)).await?;
    let streams = server.memory_mb("VmRSS");
    let per = |mb: f64| mb * 1024.0 / jobs.len() as f64;
    println!(
        "  resident: {before:.1} MB before; {polls:.1} MB with {n} long-polls ({:.1} KiB each); \
         {streams:.1} MB with {n} event streams too ({:.1} KiB each)",
        per(polls - before),
        per(streams - polls),
        n = jobs.len()
    );

    let mut cancelled_at = Vec::with_capacity(jobs.len());
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / args.cancel_rate));
    for job in &jobs {
        tick.tick().await;
        let sent = Instant::now();
        let response = client
            .delete(server.url(&format!("/job/{job}")))
            .bearer_auth(&token)
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("a cancel answered {}", response.status());
        }
        cancelled_at.push(sent);
    }
    for task in tasks {
        task.await??;
    }
    let latencies = |heard: &[Option<Instant>]| -> anyhow::Result<Vec<Duration>> {
        heard
            .iter()
            .zip(&cancelled_at)
            .map(|(heard, sent)| {
                heard
                    .map(|heard| heard.saturating_duration_since(*sent))
                    .context("a waiter never heard")
            })
            .collect()
    };
    println!(
        "hearing: {} jobs cancelled at {}/s, timed from the cancel request",
        jobs.len(),
        args.cancel_rate
    );
    println!(
        "  long-poll answered: {}",
        summary(latencies(&heard_poll.lock().await)?)
    );
    println!(
        "  stream's end event: {}",
        summary(latencies(&heard_stream.lock().await)?)
    );
    Ok(())
}

/// Submits `count` tiny jobs, 32 at a time, and waits until none is pending or running:
/// jobs per second from the first submission.
async fn tiny_jobs(
    client: &Client,
    server: &Server,
    token: &str,
    count: usize,
) -> anyhow::Result<f64> {
    let started = Instant::now();
    let launched: Vec<anyhow::Result<String>> = futures_util::stream::iter(0..count)
        .map(|_| launch(client, server, token, TINY))
        .buffer_unordered(32)
        .collect()
        .await;
    for job in launched {
        job?;
    }
    loop {
        let listed: Value = client
            .get(server.url("/jobs?status=PENDING,RUNNING&limit=1"))
            .bearer_auth(token)
            .send()
            .await?
            .json()
            .await?;
        if listed["jobs"].as_array().is_some_and(Vec::is_empty) {
            return Ok(count as f64 / started.elapsed().as_secs_f64());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn throughput_while_held(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(&[], None)?;
    server.add_user("idle", "idle user's password")?;
    let client = client();
    let token = server.token(&client).await?;
    let idle = server
        .token_of(&client, "idle", "idle user's password")
        .await?;
    println!(
        "throughput: {} tiny jobs, submitted 32 at a time, default workers",
        args.jobs
    );
    let first = tiny_jobs(&client, &server, &token, args.jobs).await?;
    println!("  undisturbed: {first:.0} jobs/s");

    // Long-polls on completed jobs for a status they will not leave, and streams of a user
    // with no jobs: held for their whole time, woken by nothing.
    let done = launch(&client, &server, &token, TINY).await?;
    tiny_jobs(&client, &server, &token, 0).await?;
    let mut held = Vec::new();
    for _ in 0..args.waiters {
        let poll = client
            .get(server.url(&format!("/job/{done}?wait=60&status=COMPLETED")))
            .bearer_auth(&token)
            .send();
        let stream = client
            .get(server.url("/jobs/events"))
            .bearer_auth(&idle)
            .send();
        held.push(tokio::spawn(poll));
        // The stream's headers come at once: its response is kept open until aborted.
        held.push(tokio::spawn(async move {
            let response = stream.await;
            tokio::time::sleep(Duration::from_secs(300)).await;
            response
        }));
    }
    until_held(&client, &server, (args.waiters, args.waiters)).await?;
    let during = tiny_jobs(&client, &server, &token, args.jobs).await?;
    println!(
        "  with {n} long-polls and {n} event streams held: {during:.0} jobs/s",
        n = args.waiters
    );
    for task in held {
        task.abort();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let last = tiny_jobs(&client, &server, &token, args.jobs).await?;
    println!(
        "  undisturbed again: {last:.0} jobs/s; held over undisturbed: {:.2}",
        during / ((first + last) / 2.0)
    );
    Ok(())
}
