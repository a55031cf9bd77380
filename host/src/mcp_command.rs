//! `caseload mcp`: the MCP server (`caseload::mcp`) over standard input and output, for a
//! desktop assistant that starts it: one JSON-RPC message per line in, one answer per line
//! out. Each tool calls the server at `--url` with `--key` (an API key's scopes bound what
//! the assistant may do). Messages are answered concurrently (a `wait_for_job` does not hold
//! up a `get_job`), each answer written whole; logs go to standard error.

use std::sync::Arc;

use bytes::Bytes;
use hyper::Method;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::api_client::ApiClient;
use crate::cli::ServerTarget;
use caseload::http_post::{RequestBody, read_body};
use caseload::mcp::{self, Api, Body};

/// What the command calls itself in the server's log.
const USER_AGENT: &str = concat!("caseload-mcp/", env!("CARGO_PKG_VERSION"));

/// Serves until standard input ends.
pub async fn run(target: &ServerTarget) -> anyhow::Result<bool> {
    let api = Arc::new(Remote(ApiClient::new(target, USER_AGENT)?));
    let stdout = Arc::new(Mutex::new(tokio::io::stdout()));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut answering = tokio::task::JoinSet::new();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let (api, stdout) = (api.clone(), stdout.clone());
        answering.spawn(async move {
            let answer = match serde_json::from_str::<Value>(&line) {
                Ok(message) => mcp::answer_all(&message, api.as_ref()).await,
                Err(error) => Some(mcp::error(
                    Value::Null,
                    -32700,
                    &format!("not JSON: {error}"),
                )),
            };
            if let Some(answer) = answer {
                let mut text = answer.to_string();
                text.push('\n');
                let mut stdout = stdout.lock().await;
                // A closed stdout ends the session: the reader goes next.
                let _ = stdout.write_all(text.as_bytes()).await;
                let _ = stdout.flush().await;
            }
        });
        // Reap what has finished, so that a long session does not keep every task.
        while answering.try_join_next().is_some() {}
    }
    while answering.join_next().await.is_some() {}
    Ok(true)
}

/// The API of the server at `--url`.
struct Remote(ApiClient);

impl Api for Remote {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Body>,
    ) -> Result<(u16, Value), String> {
        let method = Method::from_bytes(method.as_bytes()).map_err(|error| error.to_string())?;
        let (headers, bytes) = match body {
            None => (Vec::new(), Bytes::new()),
            Some(Body::Json(value)) => (
                vec![("content-type", "application/json".to_owned())],
                Bytes::from(value.to_string()),
            ),
            Some(Body::Bytes { media_type, bytes }) => {
                (vec![("content-type", media_type)], Bytes::from(bytes))
            }
        };
        let response = self
            .0
            .request(method, &path, &headers, RequestBody::full(bytes), None)
            .await
            .map_err(|error| format!("{error:#}"))?;
        let status = response.status().as_u16();
        let bytes = read_body(response.into_body(), mcp::MAX_ANSWER).await?;
        Ok((status, mcp::answer_body(&bytes)))
    }
}
