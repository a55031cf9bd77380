//! `caseload job submit | get | wait | output | cancel | finish | rerun | logs | list`: the job
//! API from a shell or a CI step, with an API key. What the server answers is printed as it
//! is (JSON), or as lines for a list; a refusal prints the server's problem (with each
//! violation's pointer) and exits 1, and so does a job that did not complete for `wait`,
//! `submit --wait`, `rerun --wait` and `logs --follow`.

use std::io::Read;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use hyper::Method;
use serde_json::{Value, json};

use crate::api_client::{ApiClient, read_events};
use crate::cli::{JobCommand, Output};
use caseload::http_post::RequestBody;

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
        JobCommand::Finish { job, target } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let answer = api
                .json(Method::POST, &job_path(job, "/finish"), None)
                .await?;
            println!("{}", answer["status"].as_str().unwrap_or("?"));
            Ok(true)
        }
        JobCommand::Rerun {
            job,
            version,
            options,
            wait,
            target,
        } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let mut body = json!({});
            if let Some(version) = version {
                body["version"] = json!(version);
            }
            if let Some(options) = options {
                body["options"] = serde_json::from_str(options)
                    .with_context(|| format!("--options {options}: not JSON"))?;
            }
            let accepted = api
                .json(Method::POST, &job_path(job, "/rerun"), Some(body))
                .await?;
            let job = job_of(&accepted)?;
            launched(&api, &job, *wait).await
        }
        JobCommand::Logs {
            job,
            follow: false,
            target,
        } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let answer = api.json(Method::GET, &job_path(job, ""), None).await?;
            // Executions are keyed by time-ordered ids: the last is the latest attempt.
            let latest = answer["job"][job.as_str()]["executions"]
                .as_object()
                .and_then(|executions| executions.values().next_back());
            if let Some(tail) = latest.and_then(|execution| execution["logs"]["tail"].as_str()) {
                print!("{tail}");
            }
            Ok(true)
        }
        JobCommand::Logs {
            job,
            follow: true,
            target,
        } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            follow_log(&api, job).await
        }
        JobCommand::List {
            status,
            project,
            limit,
            output,
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
            match output {
                Output::Json => println!("{listed}"),
                Output::Text => {
                    for job in listed["jobs"].as_array().into_iter().flatten() {
                        println!(
                            "{}\t{}\t{}\t{}",
                            job["id"].as_str().unwrap_or(""),
                            job["status"].as_str().unwrap_or(""),
                            job["problem"].as_str().unwrap_or(""),
                            job["created_at"].as_str().unwrap_or("")
                        );
                    }
                }
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

/// Prints the job's log as its event stream brings it, until the job ends; whether it
/// completed. A stream the server closes (a `reconnect` event) is opened again from its last
/// event.
async fn follow_log(api: &ApiClient, job: &str) -> anyhow::Result<bool> {
    let mut last_event_id: Option<String> = None;
    loop {
        let headers: Vec<(&'static str, String)> = last_event_id
            .iter()
            .map(|id| ("last-event-id", id.clone()))
            .collect();
        let response = api
            .open(
                Method::GET,
                &job_path(job, "/events"),
                &headers,
                RequestBody::full(Bytes::new()),
            )
            .await?;
        let mut ended: Option<String> = None;
        let mut reconnect = false;
        read_events(response.into_body(), |name, data, id| {
            if let Some(id) = id {
                last_event_id = Some(id.to_owned());
            }
            let data: Value = serde_json::from_str(data).unwrap_or(Value::Null);
            match name {
                "log" => {
                    if data["gap"] == true {
                        eprintln!("[lines were dropped here]");
                    }
                    print!("{}", data["text"].as_str().unwrap_or(""));
                    // As it is written: a partial line too.
                    let _ = std::io::Write::flush(&mut std::io::stdout());
                }
                "end" => {
                    let status = data["job"][job]["status"].as_str().unwrap_or("?");
                    ended = Some(status.to_owned());
                    return false;
                }
                "reconnect" => {
                    reconnect = true;
                    return false;
                }
                _ => {}
            }
            true
        })
        .await?;
        match ended {
            Some(status) => {
                eprintln!("{job} ended {status}");
                return Ok(status == "COMPLETED");
            }
            None if reconnect => continue,
            None => bail!("the event stream of {job} ended before the job did"),
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
