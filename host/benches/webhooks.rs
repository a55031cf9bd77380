//! Webhooks, in one of two scenarios.
//!
//! `kill` (the default): the release binary (`--webhook-allow 127.0.0.1`) runs `--jobs` tiny
//! max-cut jobs, each with a `callback_url` at a receiver in this process; when half the
//! callbacks have come, the server is killed (SIGKILL) and started again on the same data
//! directory. The bench waits until every job's callback came and checks each signature
//! against the owner's secret (Standard Webhooks), then prints how many came, how many twice,
//! and the time from each job's launch to its first callback.
//!
//! `silent-receiver`: another user's callbacks beside a backlog at a receiver that never
//! answers. A second user launches `--rounds` tiny jobs one after another, each with a
//! callback to a receiver that answers at once, and the bench times each launch → callback:
//! first with nothing else queued, then after the admin's `--stuck` jobs ended with callbacks
//! to a receiver that takes the connection and never answers.
//!
//! ```sh
//! cargo bench -p caseload-host --bench webhooks -- [--jobs 1000]
//! cargo bench -p caseload-host --bench webhooks -- --scenario silent-receiver [--stuck 96] [--rounds 10]
//! ```

mod server;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use clap::{Parser, ValueEnum};
use futures_util::StreamExt;
use hmac::{KeyInit, Mac};
use reqwest::Client;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use server::Server;

#[derive(Debug, Parser)]
#[command(about = "Delivers webhooks across a kill -9, or beside a receiver that never answers")]
struct Args {
    #[arg(long, value_enum, default_value_t = Scenario::Kill)]
    scenario: Scenario,
    /// `kill`: jobs launched, each with a callback.
    #[arg(long, default_value_t = 1000)]
    jobs: usize,
    /// `silent-receiver`: the admin's jobs with a callback to the receiver that never answers.
    #[arg(long, default_value_t = 96)]
    stuck: usize,
    /// `silent-receiver`: the other user's jobs timed, before the backlog and beside it.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    // `cargo bench` passes `--bench` to every bench target.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Scenario {
    /// Every callback delivered across a kill -9.
    Kill,
    /// Another user's callbacks beside a backlog at a receiver that never answers.
    SilentReceiver,
}

/// What the receiver heard: per job, when each callback came and whether it was well signed.
type Heard = Arc<Mutex<HashMap<String, Vec<(Instant, bool)>>>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.scenario {
        Scenario::Kill => across_a_kill(&args).await,
        Scenario::SilentReceiver => beside_a_silent_receiver(&args).await,
    }
}

async fn across_a_kill(args: &Args) -> anyhow::Result<()> {
    let server_args = ["--webhook-allow", "127.0.0.1"];
    let mut server = Server::start(&server_args, None)?;
    let client = Client::new();
    let token = server.token(&client).await?;
    let secret: Value = client
        .get(server.url("/webhook_secret"))
        .bearer_auth(&token)
        .send()
        .await?
        .json()
        .await?;
    let secret = secret["secret"].as_str().context("no secret")?.to_owned();

    let heard: Heard = Arc::default();
    let url = receive(secret, heard.clone()).await?;
    let body = json!({
        "num_nodes": 5,
        "edges": [[0, 1, 1], [1, 2, 1], [2, 3, 1], [3, 4, 1], [4, 0, 1]],
        "options": {"callback_url": url},
    })
    .to_string();
    println!(
        "webhooks: {} tiny jobs with a callback; the server killed (-9) when half have come",
        args.jobs
    );
    let mut launched = HashMap::new();
    let launches: Vec<anyhow::Result<(String, Instant)>> = futures_util::stream::iter(0..args.jobs)
        .map(|_| {
            let request = client
                .post(server.url("/problem/maxcut"))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(body.clone());
            async move {
                let at = Instant::now();
                let answer: Value = request.send().await?.json().await?;
                Ok((answer["job"].as_str().context("no job")?.to_owned(), at))
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    for launch in launches {
        let (job, at) = launch?;
        launched.insert(job, at);
    }
    while heard.lock().expect("unpoisoned").len() < args.jobs / 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let at_kill = heard.lock().expect("unpoisoned").len();
    server.kill_and_restart(&server_args)?;
    println!(
        "  killed with {at_kill} of {} callbacks come; restarted",
        args.jobs
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while heard.lock().expect("unpoisoned").len() < args.jobs {
        if Instant::now() > deadline {
            bail!(
                "only {} of {} callbacks came in 2 minutes",
                heard.lock().expect("unpoisoned").len(),
                args.jobs
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let heard = heard.lock().expect("unpoisoned");
    let badly_signed = heard
        .values()
        .flatten()
        .filter(|(_, signed)| !signed)
        .count();
    let twice = heard.values().filter(|times| times.len() > 1).count();
    let mut delays: Vec<Duration> = launched
        .iter()
        .filter_map(|(job, at)| Some(heard.get(job)?.first()?.0.saturating_duration_since(*at)))
        .collect();
    delays.sort();
    let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
    println!(
        "  every job's callback came: {} of {}; badly signed: {badly_signed}; came more than once: {twice}",
        delays.len(),
        args.jobs
    );
    println!(
        "  launch → first callback: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (the kill and restart included)",
        ms(delays[delays.len() / 2]),
        ms(delays[delays.len() * 99 / 100]),
        ms(*delays.last().unwrap_or(&Duration::ZERO))
    );
    if delays.len() != args.jobs || badly_signed > 0 {
        bail!("a callback was lost or badly signed");
    }
    Ok(())
}

async fn beside_a_silent_receiver(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(&["--webhook-allow", "127.0.0.1"], None)?;
    let client = Client::new();
    let admin = server.token(&client).await?;
    server.add_user("other", "the other user's password")?;
    let other = server
        .token_of(&client, "other", "the other user's password")
        .await?;
    let secret: Value = client
        .get(server.url("/webhook_secret"))
        .bearer_auth(&other)
        .send()
        .await?
        .json()
        .await?;
    let secret = secret["secret"].as_str().context("no secret")?.to_owned();
    let heard: Heard = Arc::default();
    let url = receive(secret, heard.clone()).await?;
    let (silent_url, accepted) = receive_silently().await?;
    let launch = |token: &str, callback_url: &str| {
        let request = client
            .post(server.url("/problem/maxcut"))
            .bearer_auth(token)
            .json(&json!({
                "num_nodes": 3,
                "edges": [[0, 1, 1], [1, 2, 1]],
                "options": {"callback_url": callback_url},
            }));
        async move {
            let answer: Value = request.send().await?.json().await?;
            anyhow::Ok(answer["job"].as_str().context("no job")?.to_owned())
        }
    };
    // The other user's jobs one after another: launch → its callback, each.
    let time_rounds = || async {
        let mut delays = Vec::with_capacity(args.rounds);
        for _ in 0..args.rounds {
            let at = Instant::now();
            let job = launch(&other, &url).await?;
            let deadline = at + Duration::from_secs(120);
            loop {
                let came = heard
                    .lock()
                    .expect("unpoisoned")
                    .get(&job)
                    .and_then(|times| times.first().map(|(came, _)| *came));
                if let Some(came) = came {
                    delays.push(came.saturating_duration_since(at));
                    break;
                }
                if Instant::now() > deadline {
                    bail!("the other user's callback did not come in 2 minutes");
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        delays.sort();
        anyhow::Ok(delays)
    };
    let summary = |delays: &[Duration]| {
        format!(
            "median {:.0} ms, max {:.0} ms",
            delays[delays.len() / 2].as_secs_f64() * 1000.0,
            delays.last().unwrap_or(&Duration::ZERO).as_secs_f64() * 1000.0
        )
    };
    println!(
        "webhooks: another user's callbacks ({} tiny jobs, one after another) beside {} callbacks to a receiver that never answers",
        args.rounds, args.stuck
    );
    let idle = time_rounds().await?;
    println!(
        "  nothing else queued: launch → callback {}",
        summary(&idle)
    );

    let stuck: Vec<String> = futures_util::stream::iter(0..args.stuck)
        .map(|_| launch(&admin, &silent_url))
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<_>>()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let counts: Value = client
            .get(server.url("/jobs/counts"))
            .bearer_auth(&admin)
            .send()
            .await?
            .json()
            .await?;
        let ended = ["COMPLETED", "FAILED", "CANCELLED"]
            .iter()
            .map(|status| counts[status].as_u64().unwrap_or(0))
            .sum::<u64>();
        if ended as usize >= stuck.len() {
            break;
        }
        if Instant::now() > deadline {
            bail!("the admin's jobs did not end in 2 minutes");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let beside = time_rounds().await?;
    let taken = accepted.load(Ordering::SeqCst);
    println!(
        "  beside {} ended jobs whose callbacks wait on the silent receiver: launch → callback {}",
        stuck.len(),
        summary(&beside)
    );
    println!(
        "  meanwhile the silent receiver took {taken} connections (one per attempt) and answered none"
    );
    Ok(())
}

/// Starts a receiver on 127.0.0.1 that takes every connection, reads what comes and never
/// answers; its URL, and how many connections it took.
async fn receive_silently() -> anyhow::Result<(String, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut sink = [0; 4096];
                while matches!(stream.read(&mut sink).await, Ok(read) if read > 0) {}
            });
        }
    });
    Ok((url, accepted))
}

/// Starts the receiver on 127.0.0.1; its URL.
async fn receive(secret: String, heard: Heard) -> anyhow::Result<String> {
    let key =
        base64::engine::general_purpose::STANDARD.decode(secret.trim_start_matches("whsec_"))?;
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let heard = heard.clone();
            let key = key.clone();
            async move {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or_default()
                        .to_owned()
                };
                let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("a key");
                mac.update(
                    format!(
                        "{}.{}.{body}",
                        header("webhook-id"),
                        header("webhook-timestamp")
                    )
                    .as_bytes(),
                );
                let expected = format!(
                    "v1,{}",
                    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
                );
                let signed = header("webhook-signature") == expected;
                let job = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|body| body["data"]["job"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                heard
                    .lock()
                    .expect("unpoisoned")
                    .entry(job)
                    .or_default()
                    .push((Instant::now(), signed));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}
