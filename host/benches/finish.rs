//! Finish now, against the release binary: `--jobs` (20) max-cut jobs, one at a time, each
//! on a graph that keeps the search busy for its whole 60 s limit; 300 ms after it starts
//! running, `POST /job/<id>/finish`, timed from the request until `GET /job` shows the job
//! `COMPLETED` (the finish answers once it ended, so that is its own latency as well).
//!
//! ```text
//! cargo bench -p caseload-host --bench finish [-- --jobs 20]
//! ```

mod server;

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use server::Server;

fn busy_maxcut() -> Value {
    let n = 300;
    let edges: Vec<Value> = (0..n)
        .flat_map(|i| (1..8).map(move |k| (i, (i * 7 + k * 13) % n)))
        .filter(|(a, b)| a != b)
        .map(|(a, b)| json!([a, b, if (a + b) % 3 == 0 { -1.0 } else { 1.0 }]))
        .collect();
    json!({"num_nodes": n, "edges": edges, "options": {"time_limit_s": 60}})
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut jobs = 20usize;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--bench" => {}
            "--jobs" => jobs = arguments.next().context("--jobs needs a value")?.parse()?,
            other => bail!("unknown argument {other:?}; options: --jobs N"),
        }
    }
    let server = Server::start(&["--workers", "1"], None)?;
    let client = Client::new();
    let token = server.token(&client).await?;
    let status = |job: String| {
        let (client, url, token) = (
            client.clone(),
            server.url(&format!("/job/{job}")),
            token.clone(),
        );
        async move {
            let body: Value = client
                .get(url)
                .bearer_auth(token)
                .send()
                .await?
                .json()
                .await?;
            Ok::<_, anyhow::Error>(
                body["job"][&job]["status"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        }
    };
    let mut latencies = Vec::new();
    for _ in 0..jobs {
        let launched: Value = client
            .post(server.url("/problem/maxcut"))
            .bearer_auth(&token)
            .json(&busy_maxcut())
            .send()
            .await?
            .json()
            .await?;
        let job = launched["job"].as_str().context("no job id")?.to_owned();
        while status(job.clone()).await? != "RUNNING" {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let asked = Instant::now();
        let answer = client
            .post(server.url(&format!("/job/{job}/finish")))
            .bearer_auth(&token)
            .send()
            .await?;
        ensure!(
            answer.status() == StatusCode::OK,
            "finish: {}",
            answer.status()
        );
        while status(job.clone()).await? != "COMPLETED" {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        latencies.push(asked.elapsed());
    }
    latencies.sort();
    let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
    println!(
        "finish → COMPLETED, max-cut on 300 nodes (60 s limit), {} jobs: p50 {:.1} ms, max {:.1} ms",
        latencies.len(),
        ms(latencies[latencies.len() / 2]),
        ms(latencies[latencies.len() - 1])
    );
    Ok(())
}
