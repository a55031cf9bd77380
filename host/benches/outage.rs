//! A replica cut off from PostgreSQL: the release binary on a cluster of the bench's own,
//! launched on at `--rate` tiny max-cut jobs a second throughout. After 5 s the cluster
//! stops (fast: connections cut) for `--outage` seconds (30), then starts again; launches
//! go on 10 s more. Reported: jobs accepted (202) and how many of them did not complete
//! (lost: must be 0), launches refused meanwhile (503), the time from the database's return
//! to `/readyz` answering 200, and to the first job claimed (the first execution to begin
//! after the return).
//!
//! ```text
//! cargo bench -p caseload-host --bench outage [-- --outage 30 --rate 20]
//! ```

mod server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use caseload::store::cluster::OwnCluster;
use chrono::{DateTime, Utc};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use server::Server;

/// What the launcher saw.
#[derive(Debug, Default)]
struct Launches {
    accepted: Vec<String>,
    refused: usize,
    failed: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (mut outage_s, mut rate) = (30u64, 20u64);
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--bench" => {}
            "--outage" => outage_s = arguments.next().context("--outage N")?.parse()?,
            "--rate" => rate = arguments.next().context("--rate N")?.parse()?,
            other => bail!("unknown argument {other:?}; options: --outage S --rate N"),
        }
    }
    let cluster = OwnCluster::start().map_err(anyhow::Error::msg)?;
    let url = cluster.url();
    let server = Server::start(
        &["--database-url", &url, "--workers", "2", "--lease", "10s"],
        None,
    )?;
    let client = Client::builder().timeout(Duration::from_secs(15)).build()?;
    let token = server.token(&client).await?;

    let launches = Arc::new(Mutex::new(Launches::default()));
    let launching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let launcher = {
        let (client, url, token) = (client.clone(), server.url("/problem/maxcut"), token.clone());
        let (launches, launching) = (launches.clone(), launching.clone());
        tokio::spawn(async move {
            let body = json!({
                "num_nodes": 4,
                "adj_matrix": [[0, 1, 1, 0], [1, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 0]],
                "options": {"time_limit_s": 0.05},
            });
            let mut ticks = tokio::time::interval(Duration::from_millis(1000 / rate.max(1)));
            while launching.load(std::sync::atomic::Ordering::Relaxed) {
                ticks.tick().await;
                let answer = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await;
                let outcome = match answer {
                    Ok(answer) if answer.status() == StatusCode::ACCEPTED => {
                        let launched: Value = answer.json().await.unwrap_or_default();
                        launched["job"].as_str().map(str::to_owned).ok_or(false)
                    }
                    Ok(answer) if answer.status() == StatusCode::SERVICE_UNAVAILABLE => Err(true),
                    _ => Err(false),
                };
                let mut seen = launches.lock().unwrap_or_else(|error| error.into_inner());
                match outcome {
                    Ok(job) => seen.accepted.push(job),
                    Err(true) => seen.refused += 1,
                    Err(false) => seen.failed += 1,
                }
            }
        })
    };

    tokio::time::sleep(Duration::from_secs(5)).await;
    cluster.stop().map_err(anyhow::Error::msg)?;
    println!("database stopped for {outage_s} s");
    tokio::time::sleep(Duration::from_secs(outage_s)).await;
    cluster.resume().map_err(anyhow::Error::msg)?;
    let back = Instant::now();
    let back_at = Utc::now();
    let ready_after = loop {
        let ready = client.get(server.url("/readyz")).send().await;
        if ready.is_ok_and(|ready| ready.status() == StatusCode::OK) {
            break back.elapsed();
        }
        if back.elapsed() > Duration::from_secs(120) {
            bail!("not ready 120 s after the database came back");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_secs(10)).await;
    launching.store(false, std::sync::atomic::Ordering::Relaxed);
    launcher.await?;

    let seen = std::mem::take(&mut *launches.lock().unwrap_or_else(|error| error.into_inner()));
    let mut lost = 0usize;
    let mut first_claim: Option<DateTime<Utc>> = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    for job in &seen.accepted {
        let view = loop {
            let body: Value = client
                .get(server.url(&format!("/job/{job}")))
                .bearer_auth(&token)
                .send()
                .await?
                .json()
                .await?;
            let view = body["job"][job].clone();
            let status = view["status"].as_str().unwrap_or("");
            if !matches!(status, "PENDING" | "RUNNING") || Instant::now() > deadline {
                break view;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        if view["status"] != "COMPLETED" {
            lost += 1;
            println!("not completed: {job} {view}");
        }
        for execution in view["executions"]
            .as_object()
            .into_iter()
            .flat_map(|all| all.values())
        {
            let began = execution["began_at"]
                .as_str()
                .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
                .map(|at| at.with_timezone(&Utc));
            if let Some(began) = began.filter(|began| *began >= back_at) {
                first_claim = Some(first_claim.map_or(began, |first| first.min(began)));
            }
        }
    }
    let claim_after = first_claim.map(|first| (first - back_at).num_milliseconds());
    println!(
        "outage {outage_s} s at {rate} launches/s: accepted {}, lost {lost}, refused (503) {}, \
         other failures {}; ready {} ms after the database's return, first claim {} ms after",
        seen.accepted.len(),
        seen.refused,
        seen.failed,
        ready_after.as_millis(),
        claim_after.map_or_else(|| "-".to_owned(), |ms| ms.to_string()),
    );
    if lost > 0 {
        bail!("{lost} accepted jobs did not complete");
    }
    Ok(())
}
