//! Experiments against batches, on the release binary: the test guest `versioned` (1.0.0 and
//! 2.0.0, tiny jobs) on `--inputs` (20) inputs with `--seeds` (3) seeds, as one experiment
//! (`POST /experiments`, until `GET /experiments/<id>` says done) and as the same jobs in
//! batches (`POST /problem/versioned@<version>/batch`, 100 bodies at most each, until
//! `GET /jobs/counts` shows them all completed), in `--rounds` (5) alternating rounds on one
//! server. Prints each round's times and the median ratio; the goal is at most 1.5.
//!
//! ```text
//! cargo bench -p caseload-host --bench experiments [-- --inputs 20 --seeds 3 --rounds 5]
//! ```

mod server;

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use server::Server;

const VERSIONS: [&str; 2] = ["1.0.0", "2.0.0"];

/// How often the end is looked for.
const POLL: Duration = Duration::from_millis(5);

struct Args {
    inputs: usize,
    seeds: usize,
    rounds: usize,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        inputs: 20,
        seeds: 3,
        rounds: 5,
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        let mut value = || -> anyhow::Result<usize> {
            Ok(arguments
                .next()
                .with_context(|| format!("{argument} needs a value"))?
                .parse()?)
        };
        match argument.as_str() {
            "--bench" => {}
            "--inputs" => args.inputs = value()?,
            "--seeds" => args.seeds = value()?,
            "--rounds" => args.rounds = value()?,
            other => bail!("unknown argument {other:?}; options: --inputs N --seeds N --rounds N"),
        }
    }
    ensure!(
        args.inputs > 0 && args.seeds > 0 && args.rounds > 0,
        "counts must be at least 1"
    );
    Ok(args)
}

fn guest(variant: &str) -> anyhow::Result<Vec<u8>> {
    let path = std::path::Path::new(caseload::TEST_GUESTS_DIR)
        .join(format!("caseload_guest_versioned_{variant}.wasm"));
    std::fs::read(&path).with_context(|| format!("{}", path.display()))
}

struct Api<'a> {
    server: &'a Server,
    client: Client,
    token: String,
}

impl Api<'_> {
    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self
            .client
            .post(self.server.url(path))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await?;
        ensure!(status.is_success(), "POST {path}: {status} {body}");
        Ok(body)
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        Ok(self
            .client
            .get(self.server.url(path))
            .bearer_auth(&self.token)
            .send()
            .await?
            .json()
            .await?)
    }

    async fn publish(&self, wasm: Vec<u8>, query: &str) -> anyhow::Result<()> {
        let response = self
            .client
            .post(self.server.url(&format!("/plugins{query}")))
            .bearer_auth(&self.token)
            .header("content-type", "application/wasm")
            .body(wasm)
            .send()
            .await?;
        ensure!(
            response.status() == StatusCode::CREATED,
            "publish: {}",
            response.status()
        );
        Ok(())
    }

    async fn completed(&self) -> anyhow::Result<u64> {
        let counts = self.get("/jobs/counts").await?;
        counts["COMPLETED"].as_u64().context("no COMPLETED count")
    }

    /// The experiment, launched and waited for.
    async fn experiment(&self, args: &Args) -> anyhow::Result<Duration> {
        let inputs: Vec<Value> = (0..args.inputs).map(|i| json!({"value": i})).collect();
        let seeds: Vec<usize> = (1..=args.seeds).collect();
        let started = Instant::now();
        let created = self
            .post(
                "/experiments",
                &json!({"problem": "versioned", "versions": VERSIONS, "inputs": inputs, "seeds": seeds}),
            )
            .await?;
        let id = created["experiment"].as_str().context("no experiment id")?;
        loop {
            let view = self.get(&format!("/experiments/{id}")).await?;
            if view["progress"]["done"] == true {
                ensure!(
                    view["progress"]["completed"] == json!(args.inputs * args.seeds * 2),
                    "not all completed: {}",
                    view["progress"]
                );
                return Ok(started.elapsed());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The same jobs in batches, launched and waited for.
    async fn batches(&self, args: &Args) -> anyhow::Result<Duration> {
        let before = self.completed().await?;
        let total = (args.inputs * args.seeds * VERSIONS.len()) as u64;
        let started = Instant::now();
        for version in VERSIONS {
            let bodies: Vec<Value> = (0..args.inputs)
                .flat_map(|i| {
                    (1..=args.seeds).map(move |seed| json!({"value": i, "options": {"seed": seed}}))
                })
                .collect();
            for chunk in bodies.chunks(100) {
                self.post(
                    &format!("/problem/versioned@{version}/batch"),
                    &json!({"jobs": chunk}),
                )
                .await?;
            }
        }
        while self.completed().await? < before + total {
            tokio::time::sleep(POLL).await;
        }
        Ok(started.elapsed())
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let server = Server::start(&[], None)?;
    let client = Client::new();
    let token = server.token(&client).await?;
    let api = Api {
        server: &server,
        client,
        token,
    };
    api.publish(guest("v1")?, "").await?;
    api.publish(guest("v2")?, "?current=false").await?;
    // A first round of each, not counted: the components' first instances.
    api.experiment(&args).await?;
    api.batches(&args).await?;

    let jobs = args.inputs * args.seeds * VERSIONS.len();
    println!(
        "{} versions × {} inputs × {} seeds = {jobs} tiny jobs",
        VERSIONS.len(),
        args.inputs,
        args.seeds
    );
    let mut ratios = Vec::new();
    for round in 1..=args.rounds {
        // Alternate which goes first, so that neither always meets a warmer server.
        let (experiment, batches) = if round % 2 == 1 {
            let experiment = api.experiment(&args).await?;
            (experiment, api.batches(&args).await?)
        } else {
            let batches = api.batches(&args).await?;
            (api.experiment(&args).await?, batches)
        };
        let ratio = experiment.as_secs_f64() / batches.as_secs_f64();
        println!(
            "  round {round}: experiment {:.1} ms, batches {:.1} ms, ratio {ratio:.2}",
            experiment.as_secs_f64() * 1e3,
            batches.as_secs_f64() * 1e3
        );
        ratios.push(ratio);
    }
    println!(
        "experiment / batches, median over {} rounds: {:.2} (goal ≤ 1.5)",
        args.rounds,
        median(ratios)
    );
    Ok(())
}
