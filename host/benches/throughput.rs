//! End to end throughput and latency of the real `caseload` server over HTTP.
//!
//! The bench starts the `caseload` binary (one or two replicas) on fresh data directories,
//! logs in as `admin`, and then measures two things:
//!
//! 1. **Throughput.** It submits `--jobs` tiny max-cut jobs (the 5-cycle) with `--concurrency`
//!    requests in flight, round-robin over the replicas, and watches `GET /metrics` of every
//!    replica until the replicas together count as many COMPLETED executions as jobs were
//!    submitted: every 20 ms near the end, less often before it (each read of the metrics
//!    costs the server a query of its queue, which the bench should not add to what it
//!    measures). It reports the submit phase (duration, submits/s, submit latency),
//!    jobs/s end to end, from the first submit until the last job completed, and the claims
//!    the replicas' workers sent meanwhile (`caseload_claims_total`), and the CPU time the
//!    servers, the client and the rest of the machine (PostgreSQL, the kernel) used in that
//!    phase, with how busy the machine's cores were. Afterwards,
//!    untimed, it checks with `GET /job/<id>` that every job is COMPLETED.
//! 2. **Latency at a fixed rate.** For `--seconds` seconds it sends `POST /problem/maxcut`
//!    and `GET /job/<id>` (random jobs of phase 1), each at `--rate` requests per second, on a
//!    fixed schedule (open loop: a slow answer does not delay the next request). Latency is
//!    measured from each request's scheduled instant, so a stalled server is not hidden by
//!    the client waiting for it (no coordinated omission). It reports p50, p99 and max, and
//!    how many requests failed (a non-2xx answer or no answer).
//!
//! Run it in each configuration:
//!
//! ```text
//! # SQLite, one replica (the default)
//! cargo bench -p caseload-host --bench throughput
//! # PostgreSQL, one replica, then two replicas sharing the database and the signing key
//! cargo bench -p caseload-host --bench throughput -- --postgres postgres://postgres@127.0.0.1:5432/postgres
//! cargo bench -p caseload-host --bench throughput -- --postgres postgres://postgres@127.0.0.1:5432/postgres --replicas 2
//! ```
//!
//! Options: `--jobs N` (5000), `--concurrency C` (64), `--replicas 1|2` (1; 2 needs
//! `--postgres`), `--postgres ADMIN_URL` (SQLite without it), `--workers W` (the server's
//! default: one per CPU), `--rate R` (500 requests/s for each of POST and GET), `--seconds S`
//! (5), `--users U` (1: `admin` alone) and `--active A` (U). With `--postgres`, the bench
//! creates a database `caseload_test_<uuid>` through ADMIN_URL, points the servers at it,
//! and drops it at the end.
//!
//! With `--users U`, the bench makes U users and splits the jobs among them, each user's
//! share in one burst; at most A users send at once, with C requests in flight among them, and
//! the next user starts when one is done. One user is the worst case for anything kept per
//! user; many users, a few at a time, is the common one:
//!
//! ```text
//! cargo bench -p caseload-host --bench throughput -- --postgres URL --users 16 --active 4
//! ```
//!
//! The client, the server(s) and their workers share the machine's cores (and PostgreSQL
//! too, when it runs locally): the figures are those of the whole machine, not of a server
//! alone, and a second replica on the same machine adds no CPU.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use caseload::store::scratch::ScratchDatabase;
use futures_util::{StreamExt, TryStreamExt, stream};
use rand::Rng;
use reqwest::{Client, StatusCode};
use serde_json::Value;
use tempfile::TempDir;
use tokio::time::{Instant, MissedTickBehavior};

const ADMIN_PASSWORD: &str = "bench-password";

const FIVE_CYCLE: &str =
    r#"{"num_nodes":5,"adj_matrix":[[0,1,0,0,1],[1,0,1,0,0],[0,1,0,1,0],[0,0,1,0,1],[1,0,0,1,0]]}"#;

const COMPLETED_METRIC: &str = "caseload_executions_ended_total";
/// The claims the workers sent, to show how many jobs a claim took.
const CLAIMS_METRIC: &str = "caseload_claims_total";
/// The watcher's polls: every 20 ms once the end is near, and at most every 200 ms before,
/// waiting half the time the jobs left would take at the rate seen so far.
const METRICS_POLL_NEAR: Duration = Duration::from_millis(20);
const METRICS_POLL_FAR: Duration = Duration::from_millis(200);
const COMPLETION_TIMEOUT: Duration = Duration::from_secs(600);
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How many failed jobs or requests the report lists before it only counts them.
const ERRORS_LISTED: usize = 10;

#[derive(Debug)]
struct Options {
    jobs: usize,
    concurrency: usize,
    replicas: usize,
    postgres_admin_url: Option<String>,
    workers: Option<usize>,
    rate: u32,
    seconds: u32,
    users: usize,
    active: Option<usize>,
}

impl Options {
    fn parse() -> anyhow::Result<Self> {
        let mut options = Self {
            jobs: 5000,
            concurrency: 64,
            replicas: 1,
            postgres_admin_url: None,
            workers: None,
            rate: 500,
            seconds: 5,
            users: 1,
            active: None,
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
                "--jobs" => options.jobs = parse_number(&argument, &value()?)?,
                "--concurrency" => options.concurrency = parse_number(&argument, &value()?)?,
                "--replicas" => options.replicas = parse_number(&argument, &value()?)?,
                "--postgres" => options.postgres_admin_url = Some(value()?),
                "--workers" => options.workers = Some(parse_number(&argument, &value()?)?),
                "--rate" => options.rate = parse_number(&argument, &value()?)?,
                "--seconds" => options.seconds = parse_number(&argument, &value()?)?,
                "--users" => options.users = parse_number(&argument, &value()?)?,
                "--active" => options.active = Some(parse_number(&argument, &value()?)?),
                other => bail!(
                    "unknown argument {other:?}; options: --jobs N --concurrency C \
                     --replicas 1|2 --postgres ADMIN_URL --workers W --rate R --seconds S \
                     --users U --active A"
                ),
            }
        }
        ensure!(options.jobs > 0, "--jobs must be at least 1");
        ensure!(options.concurrency > 0, "--concurrency must be at least 1");
        ensure!(
            options.replicas == 1 || options.replicas == 2,
            "--replicas must be 1 or 2"
        );
        ensure!(
            options.replicas == 1 || options.postgres_admin_url.is_some(),
            "--replicas 2 needs --postgres: replicas share a PostgreSQL database"
        );
        ensure!(options.workers != Some(0), "--workers must be at least 1");
        ensure!(options.rate > 0, "--rate must be at least 1");
        ensure!(options.seconds > 0, "--seconds must be at least 1");
        ensure!(options.users > 0, "--users must be at least 1");
        ensure!(
            options
                .active
                .is_none_or(|active| (1..=options.users).contains(&active)),
            "--active must be between 1 and --users"
        );
        Ok(options)
    }
}

fn parse_number<T: std::str::FromStr>(flag: &str, text: &str) -> anyhow::Result<T> {
    text.parse()
        .map_err(|_| anyhow::anyhow!("{flag} wants a whole number, not {text:?}"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse()?;
    let Some(admin_url) = options.postgres_admin_url.clone() else {
        return bench(&options, None).await;
    };
    // Dropped (with the database) after `bench` returned and stopped the servers.
    let database = ScratchDatabase::create_on(&admin_url).await;
    bench(&options, Some(&database.url)).await
}

/// The server processes and their directories; dropping it kills the processes first.
struct Servers {
    children: Vec<Child>,
    base_urls: Vec<String>,
    // Removed after the processes are killed: fields drop after `Drop::drop`.
    shared_dir: TempDir,
    data_dirs: Vec<TempDir>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.children {
            // Ignore errors: the process may have exited already.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Servers {
    async fn start(options: &Options, database_url: Option<&str>) -> anyhow::Result<Self> {
        let mut servers = Self {
            children: Vec::new(),
            base_urls: Vec::new(),
            shared_dir: tempfile::tempdir().context("cannot create a temporary directory")?,
            data_dirs: Vec::new(),
        };
        // Replicas share the token signing key, so that a token from one verifies on all.
        let jwt_key_file = servers.shared_dir.path().join("jwt-key");
        for _ in 0..options.replicas {
            let data_dir = tempfile::tempdir().context("cannot create a temporary directory")?;
            let mut command = Command::new(env!("CARGO_BIN_EXE_caseload"));
            command
                .arg("--listen")
                .arg("127.0.0.1:0")
                .arg("--data-dir")
                .arg(data_dir.path());
            if let Some(workers) = options.workers {
                command.arg("--workers").arg(workers.to_string());
            }
            if let Some(url) = database_url {
                command.arg("--database-url").arg(url);
            }
            if options.replicas > 1 {
                command.arg("--jwt-key-file").arg(&jwt_key_file);
            }
            let stderr_path = data_dir.path().join("server-stderr.log");
            let stderr = std::fs::File::create(&stderr_path)
                .with_context(|| format!("cannot create {}", stderr_path.display()))?;
            command
                .env("CASELOAD_ADMIN_PASSWORD", ADMIN_PASSWORD)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(stderr);
            let mut child = command
                .spawn()
                .context("cannot start the caseload server")?;
            let stdout = child
                .stdout
                .take()
                .context("the server's stdout is piped")?;
            servers.children.push(child);
            let listening = wait_until_listening(stdout).await;
            let base_url = listening.with_context(|| {
                format!(
                    "the server did not start; its stderr:\n{}",
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                )
            })?;
            servers.base_urls.push(base_url);
            servers.data_dirs.push(data_dir);
        }
        Ok(servers)
    }
}

/// Reads the server's stdout until `listening on http://...`, then keeps draining it in a
/// thread so that the server never blocks on a full pipe. Returns the base URL.
async fn wait_until_listening(stdout: std::process::ChildStdout) -> anyhow::Result<String> {
    const PREFIX: &str = "listening on ";
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut sender = Some(sender);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix(PREFIX)
                && let Some(sender) = sender.take()
            {
                // The receiver may have timed out and gone; nothing to do then.
                let _ = sender.send(url.trim().to_owned());
            }
        }
    });
    match tokio::time::timeout(STARTUP_TIMEOUT, receiver).await {
        Ok(Ok(url)) => Ok(url),
        Ok(Err(_)) => bail!("the server closed its stdout before listening"),
        Err(_) => bail!("the server did not listen within {STARTUP_TIMEOUT:?}"),
    }
}

/// An HTTP client holding the token and the replicas' addresses.
#[derive(Clone)]
struct Api {
    client: Client,
    base_urls: Vec<String>,
    authorization: String,
}

impl Api {
    async fn login(base_urls: Vec<String>, username: &str, password: &str) -> anyhow::Result<Self> {
        let client = Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .context("cannot build the HTTP client")?;
        let response = client
            .post(format!("{}/login", base_urls[0]))
            .json(&serde_json::json!({"username": username, "password": password}))
            .send()
            .await
            .context("POST /login failed")?;
        let status = response.status();
        let body = response.text().await.context("POST /login: no body")?;
        ensure!(
            status == StatusCode::OK,
            "POST /login answered {status}: {body}"
        );
        let body: Value = serde_json::from_str(&body).context("POST /login: not JSON")?;
        let token = body["access_token"]
            .as_str()
            .with_context(|| format!("POST /login: no access_token in {body}"))?;
        Ok(Self {
            client,
            base_urls,
            authorization: format!("Bearer {token}"),
        })
    }

    /// Makes the user `username` (as `admin`) and logs it in.
    async fn new_user(&self, username: &str) -> anyhow::Result<Api> {
        let response = self
            .client
            .post(format!("{}/admin/users", self.base_urls[0]))
            .header(reqwest::header::AUTHORIZATION, &self.authorization)
            .json(&serde_json::json!({"username": username, "password": ADMIN_PASSWORD}))
            .send()
            .await
            .context("POST /admin/users failed")?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        ensure!(
            status.is_success(),
            "POST /admin/users answered {status}: {body}"
        );
        Api::login(self.base_urls.clone(), username, ADMIN_PASSWORD).await
    }

    fn replica(&self, index: usize) -> &str {
        &self.base_urls[index % self.base_urls.len()]
    }

    fn submit_request(&self, replica: usize) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}/problem/maxcut", self.replica(replica)))
            .header(reqwest::header::AUTHORIZATION, &self.authorization)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(FIVE_CYCLE)
    }

    fn status_request(&self, replica: usize, job_id: &str) -> reqwest::RequestBuilder {
        self.client
            .get(format!("{}/job/{job_id}", self.replica(replica)))
            .header(reqwest::header::AUTHORIZATION, &self.authorization)
    }

    /// Submits one job and returns its id; anything but 202 is an error.
    async fn submit(&self, replica: usize) -> anyhow::Result<String> {
        let response = self
            .submit_request(replica)
            .send()
            .await
            .context("POST /problem/maxcut failed")?;
        let status = response.status();
        let body = response
            .text()
            .await
            .context("POST /problem/maxcut: no body")?;
        ensure!(
            status == StatusCode::ACCEPTED,
            "POST /problem/maxcut answered {status}: {body}"
        );
        let body: Value = serde_json::from_str(&body).context("POST /problem/maxcut: not JSON")?;
        let job_id = body["job"]
            .as_str()
            .with_context(|| format!("POST /problem/maxcut: no job id in {body}"))?;
        Ok(job_id.to_owned())
    }

    /// The job's status, or a description of what went wrong asking for it.
    async fn job_status(&self, replica: usize, job_id: &str) -> Result<String, String> {
        let response = self
            .status_request(replica, job_id)
            .send()
            .await
            .map_err(|error| format!("no answer: {error}"))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|error| format!("no body: {error}"))?;
        if status != StatusCode::OK {
            return Err(format!("answered {status}: {body}"));
        }
        let body: Value =
            serde_json::from_str(&body).map_err(|error| format!("not JSON ({error}): {body}"))?;
        body["job"][job_id]["status"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no status in {body}"))
    }

    /// COMPLETED executions counted by all the replicas together, and all ended executions.
    async fn executions_ended(&self) -> anyhow::Result<(u64, u64)> {
        let mut completed = 0;
        let mut ended = 0;
        for text in self.metrics().await? {
            for (labels, value) in samples(&text, COMPLETED_METRIC) {
                ended += value;
                if labels.contains(r#"status="COMPLETED""#) {
                    completed += value;
                }
            }
        }
        Ok((completed, ended))
    }

    /// The claims the replicas' workers sent, all together.
    async fn claims(&self) -> anyhow::Result<u64> {
        Ok(self
            .metrics()
            .await?
            .iter()
            .flat_map(|text| samples(text, CLAIMS_METRIC))
            .map(|(_, value)| value)
            .sum())
    }

    /// Every replica's `GET /metrics` text.
    async fn metrics(&self) -> anyhow::Result<Vec<String>> {
        let mut texts = Vec::with_capacity(self.base_urls.len());
        for base_url in &self.base_urls {
            let response = self
                .client
                .get(format!("{base_url}/metrics"))
                .send()
                .await
                .context("GET /metrics failed")?;
            let status = response.status();
            let text = response.text().await.context("GET /metrics: no body")?;
            ensure!(
                status == StatusCode::OK,
                "GET /metrics answered {status}: {text}"
            );
            texts.push(text);
        }
        Ok(texts)
    }
}

/// The samples of `metric` in Prometheus text: each one's label text (`{...}`, or empty)
/// and its value, rounded to a whole number.
fn samples<'text>(text: &'text str, metric: &str) -> Vec<(&'text str, u64)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line.strip_prefix(metric)?;
            let (labels, rest) = if rest.starts_with('{') {
                let end = label_text_end(rest)?;
                rest.split_at(end)
            } else if rest.starts_with(char::is_whitespace) {
                ("", rest)
            } else {
                // Another metric whose name starts with this one's, or a comment.
                return None;
            };
            let value: f64 = rest.split_whitespace().next()?.parse().ok()?;
            // Counters are whole numbers; the cast saturates on nonsense.
            Some((labels, value.round() as u64))
        })
        .collect()
}

/// The index just past the `}` closing the label text that `text` starts with, skipping
/// quoted label values (which may hold `}` or escaped quotes).
fn label_text_end(text: &str) -> Option<usize> {
    let mut in_quotes = false;
    let mut escaped = false;
    for (index, character) in text.char_indices() {
        match character {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' => in_quotes = !in_quotes,
            '}' if !in_quotes => return Some(index + 1),
            _ => {}
        }
    }
    None
}

async fn bench(options: &Options, database_url: Option<&str>) -> anyhow::Result<()> {
    let servers = Servers::start(options, database_url).await?;
    let admin = Api::login(servers.base_urls.clone(), "admin", ADMIN_PASSWORD).await?;
    let users = if options.users == 1 {
        vec![admin]
    } else {
        let mut users = Vec::with_capacity(options.users);
        for user in 0..options.users {
            users.push(admin.new_user(&format!("bench-user-{user}")).await?);
        }
        users
    };

    println!(
        "backend {}, replicas {}, workers {}, jobs {}, concurrency {}, users {} ({} at a time)",
        if database_url.is_some() {
            "postgres"
        } else {
            "sqlite"
        },
        options.replicas,
        options
            .workers
            .map_or_else(|| "default".to_owned(), |workers| workers.to_string()),
        options.jobs,
        options.concurrency,
        options.users,
        options.active.unwrap_or(options.users),
    );

    let pids: Vec<u32> = servers.children.iter().map(Child::id).collect();
    let cpu_before = cpu_seconds(&pids);
    let wall = Instant::now();
    let job_ids = throughput(&users, options).await?;
    report_cpu(&pids, cpu_before, wall.elapsed());
    verify_completed(&users, &job_ids, options.concurrency).await?;
    fixed_rate(&users, &job_ids, options).await?;
    drop(servers);
    Ok(())
}

/// CPU seconds (user + system) used so far by the servers, by this client and by the whole
/// machine, from `/proc/<pid>/stat` and `/proc/stat` (Linux; zero elsewhere).
fn cpu_seconds(server_pids: &[u32]) -> CpuSeconds {
    let of = |pid: &str| -> f64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return 0.0;
        };
        // The fields after the command name, which is in parentheses and may hold spaces.
        let Some((_, fields)) = stat.rsplit_once(')') else {
            return 0.0;
        };
        let fields: Vec<&str> = fields.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 Hz).
        let ticks = |index: usize| {
            fields
                .get(index)
                .and_then(|field| field.parse::<f64>().ok())
        };
        ticks(11).unwrap_or(0.0) / 100.0 + ticks(12).unwrap_or(0.0) / 100.0
    };
    // The first line of /proc/stat: every core's ticks of user, nice, system, idle, iowait,
    // irq, softirq and steal time; busy is all but idle and iowait.
    let machine = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|stat| {
            let line = stat.lines().next()?.strip_prefix("cpu ")?.to_owned();
            let ticks: Vec<f64> = line
                .split_whitespace()
                .take(8)
                .filter_map(|field| field.parse().ok())
                .collect();
            (ticks.len() == 8).then(|| (ticks.iter().sum::<f64>() - ticks[3] - ticks[4]) / 100.0)
        })
        .unwrap_or(0.0);
    CpuSeconds {
        servers: server_pids.iter().map(|pid| of(&pid.to_string())).sum(),
        client: of("self"),
        machine,
    }
}

/// What [`cpu_seconds`] read.
#[derive(Clone, Copy)]
struct CpuSeconds {
    servers: f64,
    client: f64,
    machine: f64,
}

/// Where the throughput phase's CPU went: servers, this client, and the rest of the machine
/// (PostgreSQL, the kernel's own work), and how busy the machine was.
fn report_cpu(server_pids: &[u32], before: CpuSeconds, wall: Duration) {
    let after = cpu_seconds(server_pids);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let available = wall.as_secs_f64() * cores as f64;
    let servers = after.servers - before.servers;
    let client = after.client - before.client;
    let machine = after.machine - before.machine;
    println!(
        "cpu in that phase: servers {servers:.2} s, client {client:.2} s, the rest {:.2} s, of \
         {available:.2} s on {cores} cores ({:.0} % busy with the two, {:.0} % in all)",
        (machine - servers - client).max(0.0),
        100.0 * (servers + client) / available,
        100.0 * machine / available
    );
}

/// A submitted job: the index of the user that owns it, and its id.
type JobId = (usize, String);

/// Phase 1: submits every job, each user's share in one burst with at most `--active` users
/// sending at once, waits for the metrics to count them all COMPLETED, and returns the job ids.
async fn throughput(users: &[Api], options: &Options) -> anyhow::Result<Vec<JobId>> {
    let claims_before = users[0].claims().await?;
    let started = Instant::now();
    let expected = options.jobs as u64;
    let watcher = {
        let api = users[0].clone();
        tokio::spawn(async move { wait_for_completions(&api, expected).await })
    };

    let active = options.active.unwrap_or(users.len());
    let per_user = options.concurrency.div_ceil(active);
    let bursts = stream::iter(users.iter().enumerate())
        .map(|(user, api)| {
            let share = (user..options.jobs).step_by(users.len());
            stream::iter(share)
                .map(move |index| async move {
                    let sent = Instant::now();
                    let job_id = api.submit(index).await?;
                    anyhow::Ok(((user, job_id), sent.elapsed()))
                })
                .buffer_unordered(per_user)
                .try_collect::<Vec<_>>()
        })
        .buffer_unordered(active)
        .try_collect::<Vec<_>>()
        .await
        .inspect_err(|_| watcher.abort())?;
    let submit_phase = started.elapsed();
    let (job_ids, mut submit_latencies): (Vec<JobId>, Vec<Duration>) =
        bursts.into_iter().flatten().unzip();

    let (completed, ended, finished) = watcher.await.context("the metrics watcher panicked")??;
    let end_to_end = finished - started;
    println!(
        "throughput: {} jobs submitted in {:.2} s ({:.0}/s); {}",
        options.jobs,
        submit_phase.as_secs_f64(),
        options.jobs as f64 / submit_phase.as_secs_f64(),
        if completed >= expected {
            format!(
                "all COMPLETED after {:.2} s: {:.0} jobs/s end to end",
                end_to_end.as_secs_f64(),
                options.jobs as f64 / end_to_end.as_secs_f64()
            )
        } else {
            format!(
                "only {completed} of {ended} ended executions COMPLETED after {:.2} s",
                end_to_end.as_secs_f64()
            )
        }
    );
    let claims = users[0].claims().await?.saturating_sub(claims_before);
    println!(
        "claims: {claims} ({:.1} jobs each)",
        options.jobs as f64 / claims.max(1) as f64
    );
    submit_latencies.sort_unstable();
    println!(
        "submit latency under load: p50 {}, p99 {}",
        milliseconds(percentile(&submit_latencies, 0.50)),
        milliseconds(percentile(&submit_latencies, 0.99)),
    );
    Ok(job_ids)
}

/// Polls the replicas' metrics until they count `expected` COMPLETED executions, or as many
/// ended executions of any status. Returns both counts and when that was seen.
async fn wait_for_completions(api: &Api, expected: u64) -> anyhow::Result<(u64, u64, Instant)> {
    let started = Instant::now();
    let deadline = started + COMPLETION_TIMEOUT;
    loop {
        let (completed, ended) = api.executions_ended().await?;
        if completed >= expected || ended >= expected {
            return Ok((completed, ended, Instant::now()));
        }
        ensure!(
            Instant::now() < deadline,
            "only {completed} of {expected} jobs COMPLETED after {COMPLETION_TIMEOUT:?}"
        );
        tokio::time::sleep(next_poll(started.elapsed(), ended, expected)).await;
    }
}

/// How long to wait before the next poll: half the time the jobs left would take at the
/// rate `ended` of `expected` in `elapsed` shows, between the near and far intervals.
fn next_poll(elapsed: Duration, ended: u64, expected: u64) -> Duration {
    if ended == 0 {
        return METRICS_POLL_NEAR;
    }
    let left = expected.saturating_sub(ended) as f64 / ended as f64;
    elapsed
        .mul_f64(left / 2.0)
        .clamp(METRICS_POLL_NEAR, METRICS_POLL_FAR)
}

/// Asks every job's status (untimed); fails unless all are COMPLETED.
async fn verify_completed(
    users: &[Api],
    job_ids: &[JobId],
    concurrency: usize,
) -> anyhow::Result<()> {
    let failures: Vec<(&String, String)> = stream::iter(job_ids.iter().enumerate())
        .map(|(index, (user, job_id))| async move {
            match users[*user].job_status(index, job_id).await {
                Ok(status) if status == "COMPLETED" => None,
                Ok(status) => Some((job_id, format!("status {status}"))),
                Err(problem) => Some((job_id, problem)),
            }
        })
        .buffer_unordered(concurrency)
        .filter_map(std::future::ready)
        .collect()
        .await;
    if failures.is_empty() {
        return Ok(());
    }
    for (job_id, problem) in failures.iter().take(ERRORS_LISTED) {
        eprintln!("job {job_id}: {problem}");
    }
    bail!(
        "{} of {} jobs are not COMPLETED",
        failures.len(),
        job_ids.len()
    )
}

#[derive(Clone, Copy)]
enum Probe {
    Submit,
    Status,
}

/// One request of the fixed-rate phase: its latency from its scheduled start, or an error.
struct Sample {
    probe: Probe,
    latency: Duration,
    error: Option<String>,
}

/// Phase 2: POST and GET, each at `--rate` per second, interleaved on one fixed schedule.
/// The users take turns at sending.
async fn fixed_rate(users: &[Api], job_ids: &[JobId], options: &Options) -> anyhow::Result<()> {
    let requests = 2 * options.rate as usize * options.seconds as usize;
    let mut schedule =
        tokio::time::interval(Duration::from_secs_f64(0.5 / f64::from(options.rate)));
    schedule.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let mut random = rand::thread_rng();
    let mut tasks = Vec::with_capacity(requests);
    for index in 0..requests {
        let scheduled = schedule.tick().await;
        let (api, probe, job_id) = if index % 2 == 0 {
            (
                users[(index / 2) % users.len()].clone(),
                Probe::Submit,
                None,
            )
        } else {
            let (user, job_id) = job_ids[random.gen_range(0..job_ids.len())].clone();
            (users[user].clone(), Probe::Status, Some(job_id))
        };
        let replica = index / 2;
        tasks.push(tokio::spawn(async move {
            let request = match &job_id {
                None => api.submit_request(replica),
                Some(job_id) => api.status_request(replica, job_id),
            };
            let error = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let body = response.bytes().await;
                    match body {
                        Ok(_) if status.is_success() => None,
                        Ok(body) => Some(format!(
                            "answered {status}: {}",
                            String::from_utf8_lossy(&body)
                        )),
                        Err(error) => Some(format!("answered {status}, no body: {error}")),
                    }
                }
                Err(error) => Some(format!("no answer: {error}")),
            };
            Sample {
                probe,
                latency: scheduled.elapsed(),
                error,
            }
        }));
    }
    let mut submit_latencies = Vec::new();
    let mut status_latencies = Vec::new();
    let mut submit_errors = 0;
    let mut status_errors = 0;
    let mut errors_listed = 0;
    for task in tasks {
        let sample = task.await.context("a request task panicked")?;
        let (latencies, errors) = match sample.probe {
            Probe::Submit => (&mut submit_latencies, &mut submit_errors),
            Probe::Status => (&mut status_latencies, &mut status_errors),
        };
        match sample.error {
            None => latencies.push(sample.latency),
            Some(error) => {
                *errors += 1;
                if errors_listed < ERRORS_LISTED {
                    errors_listed += 1;
                    let name = match sample.probe {
                        Probe::Submit => "POST /problem/maxcut",
                        Probe::Status => "GET /job",
                    };
                    eprintln!("{name}: {error}");
                }
            }
        }
    }
    println!(
        "fixed rate {}/s for {} s: POST /problem {} ({submit_errors} errors); GET /job {} ({status_errors} errors)",
        options.rate,
        options.seconds,
        summary(&mut submit_latencies),
        summary(&mut status_latencies),
    );
    Ok(())
}

/// `p50 1.2 ms p99 3.4 ms max 9.0 ms`, or `no answers`.
fn summary(latencies: &mut [Duration]) -> String {
    latencies.sort_unstable();
    let Some(max) = latencies.last() else {
        return "no answers".to_owned();
    };
    let mut text = String::new();
    let _ = write!(
        text,
        "p50 {} p99 {} max {}",
        milliseconds(percentile(latencies, 0.50)),
        milliseconds(percentile(latencies, 0.99)),
        milliseconds(*max),
    );
    text
}

/// The nearest-rank percentile of sorted `latencies` (zero when there are none).
fn percentile(latencies: &[Duration], fraction: f64) -> Duration {
    if latencies.is_empty() {
        return Duration::ZERO;
    }
    let rank = (fraction * latencies.len() as f64).ceil() as usize;
    latencies[rank.clamp(1, latencies.len()) - 1]
}

fn milliseconds(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}
