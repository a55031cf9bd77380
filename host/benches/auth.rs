//! What an API key costs against a token, measured in one run against the release binary so
//! that the machine's noise falls on both alike:
//!
//! 1. **Authentication per request.** `--rounds` (10) rounds, each `--requests` (2,000)
//!    `GET /jobs?limit=1` with a token, then as many with a key (cached verification), 32 in
//!    flight; requests per second for each, and their ratio.
//! 2. **Tiny-job throughput.** Rounds of `--jobs` (1,000) launches of the 5-cycle with each,
//!    64 in flight, timed until every job of the round completed; jobs per second for each.
//!
//! ```text
//! cargo bench -p caseload-host --bench auth [-- --rounds 10 --requests 2000 --jobs 1000]
//! ```

mod server;

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use futures_util::{StreamExt, stream};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use server::Server;

const FIVE_CYCLE: &str =
    r#"{"num_nodes":5,"adj_matrix":[[0,1,0,0,1],[1,0,1,0,0],[0,1,0,1,0],[0,0,1,0,1],[1,0,0,1,0]]}"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (mut rounds, mut requests, mut jobs) = (10usize, 2000usize, 1000usize);
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        let mut value =
            || -> anyhow::Result<usize> { Ok(arguments.next().context("a value")?.parse()?) };
        match argument.as_str() {
            "--bench" => {}
            "--rounds" => rounds = value()?,
            "--requests" => requests = value()?,
            "--jobs" => jobs = value()?,
            other => bail!("unknown argument {other:?}; options: --rounds N --requests N --jobs N"),
        }
    }
    let server = Server::start(&[], None)?;
    let client = Client::new();
    let token = server.token(&client).await?;
    let made: Value = client
        .post(server.url("/api_keys"))
        .bearer_auth(&token)
        .json(&json!({"name": "bench", "scopes": ["launch"]}))
        .send()
        .await?
        .json()
        .await?;
    let key = made["key"].as_str().context("a key")?.to_owned();

    let mut token_rates = Vec::new();
    let mut key_rates = Vec::new();
    for _ in 0..rounds {
        token_rates.push(reads(&client, &server, &token, requests).await?);
        key_rates.push(reads(&client, &server, &key, requests).await?);
    }
    let (token_rate, key_rate) = (median(&mut token_rates), median(&mut key_rates));
    println!(
        "GET /jobs?limit=1, {rounds} rounds of {requests}: token {token_rate:.0}/s, key {key_rate:.0}/s, \
         key/token {:.3}",
        key_rate / token_rate
    );

    let mut token_jobs = Vec::new();
    let mut key_jobs = Vec::new();
    for _ in 0..rounds.min(5) {
        token_jobs.push(launches(&client, &server, &token, jobs).await?);
        key_jobs.push(launches(&client, &server, &key, jobs).await?);
    }
    let (token_rate, key_rate) = (median(&mut token_jobs), median(&mut key_jobs));
    println!(
        "tiny jobs end to end, {} rounds of {jobs}: token {token_rate:.0}/s, key {key_rate:.0}/s, \
         key/token {:.3}",
        rounds.min(5),
        key_rate / token_rate
    );
    Ok(())
}

/// `count` reads with `credential`, 32 in flight; requests per second.
async fn reads(
    client: &Client,
    server: &Server,
    credential: &str,
    count: usize,
) -> anyhow::Result<f64> {
    let url = server.url("/jobs?limit=1");
    let started = Instant::now();
    let answers: Vec<anyhow::Result<()>> = stream::iter(0..count)
        .map(|_| async {
            let response = client.get(&url).bearer_auth(credential).send().await?;
            ensure!(
                response.status() == StatusCode::OK,
                "GET /jobs answered {}",
                response.status()
            );
            Ok(())
        })
        .buffer_unordered(32)
        .collect()
        .await;
    answers.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

/// `count` launches with `credential`, 64 in flight, until all completed; jobs per second.
async fn launches(
    client: &Client,
    server: &Server,
    credential: &str,
    count: usize,
) -> anyhow::Result<f64> {
    let url = server.url("/problem/maxcut");
    let started = Instant::now();
    let ids: Vec<anyhow::Result<String>> = stream::iter(0..count)
        .map(|_| async {
            let response = client
                .post(&url)
                .bearer_auth(credential)
                .header("content-type", "application/json")
                .body(FIVE_CYCLE)
                .send()
                .await?;
            ensure!(
                response.status() == StatusCode::ACCEPTED,
                "launch answered {}",
                response.status()
            );
            let body: Value = response.json().await?;
            Ok(body["job"].as_str().context("a job id")?.to_owned())
        })
        .buffer_unordered(64)
        .collect()
        .await;
    let ids = ids.into_iter().collect::<anyhow::Result<Vec<String>>>()?;
    // Done once the newest of them ended: jobs run in the order they came.
    for id in ids.iter().rev() {
        loop {
            let view: Value = client
                .get(server.url(&format!("/job/{id}?wait=30")))
                .bearer_auth(credential)
                .send()
                .await?
                .json()
                .await?;
            let status = view["job"][id.as_str()]["status"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if status == "COMPLETED" {
                break;
            }
            ensure!(
                matches!(status.as_str(), "PENDING" | "RUNNING"),
                "{id} ended {status}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
