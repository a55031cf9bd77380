//! A race against separate runs, on the release binary with two workers: a G-set instance
//! uploaded once, then per try a race of 2 seeds (`options.race: {"seeds": 2}`) for
//! `--seconds` (10), and the same two seeds as two separate jobs run side by side. Prints
//! each try's cuts and, over `--tries` (3), the median of the race's cut against the median
//! of the better separate run; the goal is a race at least as good.
//!
//! ```sh
//! cargo bench -p caseload-host --bench race -- --seconds 10 --tries 3 ../shared/gset/G22.txt
//! ```

mod server;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use reqwest::Client;
use serde_json::{Value, json};

use server::Server;

struct Args {
    seconds: f64,
    tries: u64,
    instance: PathBuf,
}

fn args() -> anyhow::Result<Args> {
    let mut seconds = 10.0;
    let mut tries = 3;
    let mut instance = None;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--bench" => {}
            "--seconds" => seconds = arguments.next().context("--seconds N")?.parse()?,
            "--tries" => tries = arguments.next().context("--tries N")?.parse()?,
            other if other.starts_with("--") => {
                bail!("unknown option {other:?}; options: --seconds S --tries N FILE")
            }
            file => instance = Some(PathBuf::from(file)),
        }
    }
    let instance = instance.context("name a G-set file")?;
    // Typed at the repository's root; cargo runs benches from host/.
    let instance = if instance.is_relative() {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(instance)
    } else {
        instance
    };
    ensure!(tries > 0, "--tries must be at least 1");
    Ok(Args {
        seconds,
        tries,
        instance,
    })
}

struct Api {
    server: Server,
    client: Client,
    token: String,
}

impl Api {
    async fn launch(&self, body: &Value) -> anyhow::Result<String> {
        let answer: Value = self
            .client
            .post(self.server.url("/problem/maxcut"))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await?
            .json()
            .await?;
        Ok(answer["job"].as_str().context("no job id")?.to_owned())
    }

    /// The job's cut, once it completed.
    async fn cut(&self, job: &str) -> anyhow::Result<f64> {
        loop {
            let response = self
                .client
                .get(self.server.url(&format!("/job/{job}/output?wait=30")))
                .bearer_auth(&self.token)
                .send()
                .await?;
            if response.status().is_success() {
                let output: Value = response.json().await?;
                return output["cut_value"].as_f64().context("no cut_value");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let bytes = std::fs::read(&args.instance)
        .with_context(|| format!("cannot read {}", args.instance.display()))?;
    let server = Server::start(&["--workers", "2"], None)?;
    let client = Client::new();
    let token = server.token(&client).await?;
    let api = Api {
        server,
        client,
        token,
    };
    let uploaded: Value = api
        .client
        .post(api.server.url("/data_file"))
        .bearer_auth(&api.token)
        .header("content-type", "text/plain")
        .body(bytes)
        .send()
        .await?
        .json()
        .await?;
    let file = uploaded["data_file_identifier"]
        .as_str()
        .context("no data file id")?;
    let name = args
        .instance
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    println!(
        "{name}: a race of 2 seeds against the same seeds run apart, {} s each, 2 workers",
        args.seconds
    );
    let (mut races, mut separates) = (Vec::new(), Vec::new());
    for attempt in 1..=args.tries {
        let seed = attempt * 100;
        let options = |seed: u64, race: bool| {
            let mut options = json!({"time_limit_s": args.seconds, "seed": seed});
            if race {
                options["race"] = json!({"seeds": 2});
            }
            json!({"data_file_identifier": file, "options": options})
        };
        let race = api.launch(&options(seed, true)).await?;
        let race_cut = api.cut(&race).await?;
        let (a, b) = (
            api.launch(&options(seed, false)).await?,
            api.launch(&options(seed + 1, false)).await?,
        );
        let (a, b) = (api.cut(&a).await?, api.cut(&b).await?);
        let better = a.max(b);
        println!(
            "  try {attempt} (seeds {seed}, {}): race {race_cut}, apart {a} and {b}, better {better}",
            seed + 1
        );
        races.push(race_cut);
        separates.push(better);
    }
    let (race, apart) = (median(races), median(separates));
    println!(
        "median over {} tries: race {race}, better of the separate runs {apart} ({})",
        args.tries,
        if race >= apart {
            "the race is at least as good"
        } else {
            "the race is worse"
        }
    );
    Ok(())
}
