//! `caseload job submit | get | wait | output | cancel | list`: the job API from a shell or a
//! CI step, with an API key (or a token). What the server answers is printed as it is (JSON),
//! or as lines for a list; a refusal prints the server's problem (with each violation's
//! pointer and message) and exits 1, and so does a job that did not complete for `wait` and
//! `submit --wait`.

use std::io::Read;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hyper::Method;
use serde_json::Value;

use crate::api_client::ApiClient;
use crate::config::JobCommand;

/// The longest one held request waits (the server's own bound).
const HOLD: Duration = Duration::from_secs(60);

/// What the commands call themselves in the server's log.
const USER_AGENT: &str = concat!("caseload-job/", env!("CARGO_PKG_VERSION"));

/// Runs the command; whether it succeeded (a job that did not complete is not a success).
pub async fn run(command: &JobCommand) -> anyhow::Result<bool> {
    match command {
        JobCommand::Submit {
            problem,
            input,
            project,
            wait,
            target,
        } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let body = if input.as_os_str() == "-" {
                let mut body = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut body)
                    .context("cannot read the launch body from standard input")?;
                body
            } else {
                std::fs::read(input).with_context(|| format!("cannot read {}", input.display()))?
            };
            let mut path = format!("/problem/{}", segment(problem));
            if let Some(project) = project {
                path.push_str(&format!("?project={}", segment(project)));
            }
            let body = Some(("application/json", body.into()));
            let accepted = api.call(Method::POST, &path, body).await?.json();
            let job = job_of(&accepted)?;
            launched(&api, &job, *wait).await
        }
        JobCommand::Get { job, target } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let answer = api.json(Method::GET, &job_path(job, ""), None).await?;
            println!("{}", answer["job"][job.as_str()]);
            Ok(true)
        }
        JobCommand::Wait {
            job,
            timeout,
            target,
        } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let status = wait_for(&api, job, *timeout).await?;
            println!("{status}");
            Ok(status == "COMPLETED")
        }
        JobCommand::Output { job, target } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let output = api
                .json(Method::GET, &job_path(job, "/output"), None)
                .await?;
            println!("{output}");
            Ok(true)
        }
        JobCommand::Cancel { job, target } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let answer = api.json(Method::DELETE, &job_path(job, ""), None).await?;
            println!("{}", answer["status"].as_str().unwrap_or("?"));
            Ok(true)
        }
        JobCommand::List {
            status,
            project,
            limit,
            target,
        } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let mut query = form_urlencoded::Serializer::new(String::new());
            query.append_pair("limit", &limit.to_string());
            if let Some(status) = status {
                query.append_pair("status", status);
            }
            if let Some(project) = project {
                query.append_pair("project", project);
            }
            let path = format!("/jobs?{}", query.finish());
            let listed = api.json(Method::GET, &path, None).await?;
            for job in listed["jobs"].as_array().into_iter().flatten() {
                println!(
                    "{}\t{}\t{}\t{}",
                    job["id"].as_str().unwrap_or(""),
                    job["status"].as_str().unwrap_or(""),
                    job["problem"].as_str().unwrap_or(""),
                    job["created_at"].as_str().unwrap_or("")
                );
            }
            Ok(true)
        }
    }
}

/// After a launch: prints the job's id, or with `wait`, waits for its end and prints its
/// output (the id on standard error); false if it did not complete.
async fn launched(api: &ApiClient, job: &str, wait: bool) -> anyhow::Result<bool> {
    if !wait {
        println!("{job}");
        return Ok(true);
    }
    eprintln!("{job}");
    let status = wait_for(api, job, Duration::from_secs(24 * 3600)).await?;
    if status != "COMPLETED" {
        eprintln!("{job} ended {status}");
        return Ok(false);
    }
    let output = api
        .json(Method::GET, &job_path(job, "/output"), None)
        .await?;
    println!("{output}");
    Ok(true)
}

/// Waits for the job to end, a held request at a time; its status. The time left is kept to
/// the millisecond, so a timeout below a second is waited for, not rounded away.
async fn wait_for(api: &ApiClient, job: &str, timeout: Duration) -> anyhow::Result<String> {
    let started = Instant::now();
    loop {
        let left = timeout.saturating_sub(started.elapsed());
        let path = job_path(job, &format!("?wait={:.3}", left.min(HOLD).as_secs_f64()));
        let answer = api.json(Method::GET, &path, None).await?;
        let status = answer["job"][job]["status"]
            .as_str()
            .context("the server's answer has no status")?
            .to_owned();
        if !matches!(status.as_str(), "PENDING" | "RUNNING") {
            return Ok(status);
        }
        if started.elapsed() >= timeout {
            bail!("{job} did not end within {timeout:?}");
        }
    }
}

fn job_of(accepted: &Value) -> anyhow::Result<String> {
    Ok(accepted["job"]
        .as_str()
        .context("the server's answer names no job")?
        .to_owned())
}

/// `/job/<id>` and what follows it (`/output`, `?wait=...`).
fn job_path(job: &str, rest: &str) -> String {
    format!("/job/{}{rest}", segment(job))
}

/// A path segment, percent-encoded.
pub fn segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
