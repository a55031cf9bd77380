//! `caseload plugin publish FILE --url URL`: posts a component to a server's `POST /plugins`,
//! which checks it as `caseload plugin check` does and stores it for every replica. Prints
//! what the server answered: the version published and the check's report, or why not.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use url::Url;

use crate::http_post::{Post, post};

/// How long the server may take: it compiles the component and runs its examples, and a
/// gate's experiment may take up to 600 s more.
const ANSWER_WITHIN: Duration = Duration::from_secs(960);

/// The most of the server's answer read.
const MAX_ANSWER: usize = 1 << 20;

/// What to publish where.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// The server's base URL (`http://host:8080`).
    pub url: String,
    /// A bearer token of an administrator.
    pub token: String,
    /// Whether the new version becomes current.
    pub current: bool,
    /// An experiment template (JSON) the new version must pass to become current.
    pub gate: Option<String>,
}

/// Publishes the component in `file`; true if the server stored it (or had it already).
pub async fn publish(file: &Path, options: &PublishOptions) -> anyhow::Result<bool> {
    let wasm = tokio::fs::read(file)
        .await
        .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", file.display()))?;
    let mut url = Url::parse(&options.url)
        .map_err(|error| anyhow::anyhow!("--url {}: {error}", options.url))?;
    if !matches!(url.scheme(), "http" | "https") {
        anyhow::bail!("--url {}: use an http:// or https:// address", options.url);
    }
    url.set_path(&format!("{}/plugins", url.path().trim_end_matches('/')));
    match &options.gate {
        Some(gate) => {
            // Compact, so that the query stays short; the server reads it as JSON.
            let gate: Value = serde_json::from_str(gate)
                .map_err(|error| anyhow::anyhow!("the gate is not JSON: {error}"))?;
            url.query_pairs_mut()
                .clear()
                .append_pair("gate", &gate.to_string());
        }
        None => url.set_query((!options.current).then_some("current=false")),
    }
    let host = url
        .host_str()
        .ok_or_else(|| anyhow::anyhow!("--url {} names no host", options.url))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let address = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|error| anyhow::anyhow!("cannot resolve {host}: {error}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{host} has no address"))?;
    let headers = [
        ("authorization", format!("Bearer {}", options.token)),
        ("content-type", "application/wasm".to_owned()),
        ("accept", "application/json".to_owned()),
    ];
    let sent = post(Post {
        url: &url,
        address,
        headers: &headers,
        body: Bytes::from(wasm),
        read_at_most: MAX_ANSWER,
        user_agent: concat!("caseload-plugin-publish/", env!("CARGO_PKG_VERSION")),
    });
    let answer = tokio::time::timeout(ANSWER_WITHIN, sent)
        .await
        .map_err(|_| anyhow::anyhow!("{url} did not answer within {} s", ANSWER_WITHIN.as_secs()))?
        .map_err(anyhow::Error::msg)?;
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let text = |key: &str| body[key].as_str().unwrap_or("").to_owned();
    let file = file.display();
    match answer.status {
        200 | 201 => {
            let shadow;
            let state = if body["current"] == true {
                "current"
            } else if let Some(file) = body["shadowed_by"].as_str() {
                shadow = format!(
                    "current in the registry, but this server serves its plugins directory's \
                     {file} instead (remove the file to serve this version)"
                );
                &shadow
            } else if body["registry_current"] == true {
                "current in the registry"
            } else {
                "not current"
            };
            let what = if answer.status == 201 {
                "published"
            } else {
                "already published with these bytes"
            };
            println!(
                "{file}: {what}: {} {} ({}), {state}",
                text("name"),
                text("version"),
                text("digest")
            );
            for line in body["report"].as_array().into_iter().flatten() {
                println!("{}", line.as_str().unwrap_or(""));
            }
            let gate = &body["gate"];
            if gate.is_object() {
                let verdict = if gate["passed"] == true {
                    "passed: promoted".to_owned()
                } else {
                    format!("refused: {}", gate["reason"].as_str().unwrap_or(""))
                };
                println!(
                    "gate against {}: {verdict} ({} wins, {} ties, {} losses, {} failures; \
                     experiment {})",
                    gate["against"].as_str().unwrap_or(""),
                    gate["wins"],
                    gate["ties"],
                    gate["losses"],
                    gate["failures"],
                    gate["experiment"].as_str().unwrap_or("")
                );
            }
            Ok(true)
        }
        status => {
            let detail = match text("detail") {
                detail if detail.is_empty() => String::from_utf8_lossy(&answer.body).into_owned(),
                detail => detail,
            };
            println!("{file}: not published ({status}): {detail}");
            Ok(false)
        }
    }
}
