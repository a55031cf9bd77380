//! `caseload job submit | get | wait | output | cancel | list`: the job API from a shell or a
//! CI step, with an API key. What the server answers is printed as it is (JSON), or as lines
//! for a list; a refusal prints the server's problem (with each violation's pointer and
//! message) and exits 1, and so does a job that did not complete for `wait` and
//! `submit --wait`.

use std::io::Read;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use hyper::Method;
use serde_json::Value;
use url::Url;

use crate::config::{JobCommand, JobTarget};
use crate::http_post::{Post, address_of, exchange};

/// The longest one held request waits (the server's own bound).
const HOLD: Duration = Duration::from_secs(60);

/// The most of an answer read.
const MAX_ANSWER: usize = 256 << 20;

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
            let accepted = call(target, Method::POST, &path, Some(body)).await?;
            let job = accepted["job"]
                .as_str()
                .context("the server's answer names no job")?
                .to_owned();
            if !*wait {
                println!("{job}");
                return Ok(true);
            }
            eprintln!("{job}");
            let status = wait_for(target, &job, Duration::from_secs(24 * 3600)).await?;
            if status != "COMPLETED" {
                eprintln!("{job} ended {status}");
                return Ok(false);
            }
            let output = call(
                target,
                Method::GET,
                &format!("/job/{}/output", segment(&job)),
                None,
            )
            .await?;
            println!("{output}");
            Ok(true)
        }
        JobCommand::Get { job, target } => {
            let answer = call(target, Method::GET, &format!("/job/{}", segment(job)), None).await?;
            println!("{}", answer["job"][job.as_str()]);
            Ok(true)
        }
        JobCommand::Wait {
            job,
            timeout,
            target,
        } => {
            let status = wait_for(target, job, *timeout).await?;
            println!("{status}");
            Ok(status == "COMPLETED")
        }
        JobCommand::Output { job, target } => {
            let path = format!("/job/{}/output", segment(job));
            println!("{}", call(target, Method::GET, &path, None).await?);
            Ok(true)
        }
        JobCommand::Cancel { job, target } => {
            let answer = call(
                target,
                Method::DELETE,
                &format!("/job/{}", segment(job)),
                None,
            )
            .await?;
            println!("{}", answer["status"].as_str().unwrap_or("?"));
            Ok(true)
        }
        JobCommand::List {
            status,
            project,
            limit,
            target,
        } => {
            let mut query = form_urlencoded::Serializer::new(String::new());
            query.append_pair("limit", &limit.to_string());
            if let Some(status) = status {
                query.append_pair("status", status);
            }
            if let Some(project) = project {
                query.append_pair("project", project);
            }
            let path = format!("/jobs?{}", query.finish());
            let listed = call(target, Method::GET, &path, None).await?;
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

/// Waits for the job to end, a held request at a time; its status. The time left is kept to
/// the millisecond, so that a timeout below a second is waited for, not rounded away.
async fn wait_for(target: &JobTarget, job: &str, timeout: Duration) -> anyhow::Result<String> {
    let started = Instant::now();
    loop {
        let left = timeout.saturating_sub(started.elapsed()).min(HOLD);
        let path = format!("/job/{}?wait={:.3}", segment(job), left.as_secs_f64());
        let answer = call(target, Method::GET, &path, None).await?;
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

/// One call; the answer's JSON, or the server's problem as the error.
async fn call(
    target: &JobTarget,
    method: Method,
    path_and_query: &str,
    body: Option<Vec<u8>>,
) -> anyhow::Result<Value> {
    let base = Url::parse(&target.url).with_context(|| format!("--url {}", target.url))?;
    if !matches!(base.scheme(), "http" | "https") {
        bail!("--url {}: use an http:// or https:// address", target.url);
    }
    let url = base
        .join(path_and_query)
        .with_context(|| format!("{path_and_query} under {}", target.url))?;
    let address = address_of(&url)
        .await
        .map_err(|error| anyhow::anyhow!("--url {}: {error}", target.url))?;
    let mut headers = vec![
        ("authorization", format!("Bearer {}", target.key)),
        ("accept", "application/json".to_owned()),
    ];
    if body.is_some() {
        headers.push(("content-type", "application/json".to_owned()));
    }
    let answer = exchange(
        method,
        Post {
            url: &url,
            address,
            headers: &headers,
            body: Bytes::from(body.unwrap_or_default()),
            read_at_most: MAX_ANSWER,
            user_agent: "caseload-job",
        },
    )
    .await
    .map_err(anyhow::Error::msg)?;
    if !(200..300).contains(&answer.status) {
        bail!("{}", refusal(answer.status, &answer.body));
    }
    Ok(serde_json::from_slice(&answer.body).unwrap_or(Value::Null))
}

/// What a refusal says: its status and title, the detail, and each violation of an invalid
/// request on a line of its own (`  /pointer: message`).
fn refusal(status: u16, body: &[u8]) -> String {
    let problem: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let title = problem["title"].as_str().unwrap_or("");
    let detail = match problem["detail"].as_str() {
        Some(detail) => detail.to_owned(),
        None if problem.is_null() => String::from_utf8_lossy(body).trim().to_owned(),
        None => String::new(),
    };
    let mut text = format!("the server answered {status}");
    if !title.is_empty() {
        text.push(' ');
        text.push_str(title);
    }
    if !detail.is_empty() {
        text.push_str(": ");
        text.push_str(&detail);
    }
    for violation in problem["errors"].as_array().into_iter().flatten() {
        let pointer = match violation["pointer"].as_str() {
            Some("") | None => "/",
            Some(pointer) => pointer,
        };
        text.push_str(&format!(
            "\n  {pointer}: {}",
            violation["message"].as_str().unwrap_or("")
        ));
    }
    text
}

/// A path segment, percent-encoded.
fn segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_its_title_detail_and_every_violation() {
        let body = br#"{"type":"urn:caseload:problem:invalid-input","title":"Unprocessable Entity",
            "status":422,"detail":"the input is not valid for this use case",
            "errors":[{"pointer":"/num_nodes","message":"-1 is less than the minimum of 1"},
                      {"pointer":"","message":"edges is missing"}]}"#;
        assert_eq!(
            refusal(422, body),
            "the server answered 422 Unprocessable Entity: the input is not valid for this use \
             case\n  /num_nodes: -1 is less than the minimum of 1\n  /: edges is missing"
        );
        assert_eq!(
            refusal(502, b"bad gateway"),
            "the server answered 502: bad gateway"
        );
    }
}
