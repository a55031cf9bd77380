//! `caseload plugin publish FILE --url URL`: posts a component to a server's `POST /plugins`,
//! which checks it as `caseload plugin check` does and stores it for every replica. Prints
//! what the server answered: the version published and the check's report, or why not. A
//! gate that keeps the version from becoming current is a failure too (exit 1), so that a
//! CI step fails on it.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use hyper::Method;
use serde_json::Value;

use crate::api_client::ApiClient;
use crate::cli::ServerTarget;
use caseload::http_post::{RequestBody, read_body};

/// How long the server may take: it compiles the component and runs its examples, and a
/// gate's experiment may take up to 600 s more.
const ANSWER_WITHIN: Duration = Duration::from_secs(960);

/// The most of the server's answer read.
const MAX_ANSWER: usize = 1 << 20;

/// What to publish where.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// The server and the credentials of an administrator (or a `publish` key).
    pub target: ServerTarget,
    /// Whether the new version becomes current.
    pub current: bool,
    /// An experiment template (JSON) the new version must pass to become current.
    pub gate: Option<String>,
}

/// Publishes the component in `file`; true if the server stored it (or had it already) and
/// its gate, if any, let it become current.
pub async fn publish(file: &Path, options: &PublishOptions) -> anyhow::Result<bool> {
    let wasm = tokio::fs::read(file)
        .await
        .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", file.display()))?;
    let api = ApiClient::new(
        &options.target,
        concat!("caseload-plugin-publish/", env!("CARGO_PKG_VERSION")),
    )?;
    let query = match &options.gate {
        Some(gate) => {
            // Compact, so that the query stays short; the server reads it as JSON.
            let gate: Value = serde_json::from_str(gate)
                .map_err(|error| anyhow::anyhow!("the gate is not JSON: {error}"))?;
            form_urlencoded::Serializer::new(String::new())
                .append_pair("gate", &gate.to_string())
                .finish()
        }
        None if !options.current => "current=false".to_owned(),
        None => String::new(),
    };
    let path = if query.is_empty() {
        "/plugins".to_owned()
    } else {
        format!("/plugins?{query}")
    };
    let headers = [("content-type", "application/wasm".to_owned())];
    let response = api
        .request(
            Method::POST,
            &path,
            &headers,
            RequestBody::full(Bytes::from(wasm)),
            Some(ANSWER_WITHIN),
        )
        .await?;
    let status = response.status().as_u16();
    let bytes = tokio::time::timeout(ANSWER_WITHIN, read_body(response.into_body(), MAX_ANSWER))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "the server did not answer within {} s",
                ANSWER_WITHIN.as_secs()
            )
        })?
        .map_err(anyhow::Error::msg)?;
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let text = |key: &str| body[key].as_str().unwrap_or("").to_owned();
    let file = file.display();
    match status {
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
            let what = if status == 201 {
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
                // Stored, not current: the version did not pass what it was to pass.
                return Ok(gate["passed"] == true);
            }
            Ok(true)
        }
        status => {
            let detail = match text("detail") {
                detail if detail.is_empty() => String::from_utf8_lossy(&bytes).into_owned(),
                detail => detail,
            };
            println!("{file}: not published ({status}): {detail}");
            for violation in body["errors"].as_array().into_iter().flatten() {
                println!(
                    "  {}: {}",
                    violation["pointer"].as_str().unwrap_or("/"),
                    violation["message"].as_str().unwrap_or("")
                );
            }
            Ok(false)
        }
    }
}
