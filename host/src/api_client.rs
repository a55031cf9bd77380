//! A caseload server's API as the commands that call it see it (`caseload job`, `caseload
//! data`, `caseload plugin publish | versions | promote | retire | download`): where the
//! server is (`--url`, a bare `host:port` taken as `http://`), the bearer it is called with
//! (`--key`, else `CASELOAD_API_KEY`, else `CASELOAD_TOKEN`), and a refusal told as the
//! server's problem document says it: status, title, detail, and each violation's pointer
//! and message.

use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Method;
use hyper::body::Incoming;
use serde_json::Value;
use url::Url;

use crate::cli::ServerTarget;
use caseload::http_post::{Post, RequestBody, address_of, open, read_body};

/// The most of an answer read (a job's output may be large).
const MAX_ANSWER: usize = 256 << 20;

/// The environment variable read for a bearer when neither `--key` nor `CASELOAD_API_KEY`
/// gives one: an administrator's token from `POST /login`, say.
pub const TOKEN_VARIABLE: &str = "CASELOAD_TOKEN";

/// A server and the bearer a command calls it with.
#[derive(Debug, Clone)]
pub struct ApiClient {
    base: Url,
    bearer: String,
    user_agent: &'static str,
}

/// An answer the server gave with a 2xx status.
#[derive(Debug)]
pub struct Answer {
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON (`null` for none).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

impl ApiClient {
    /// The server `target` names, with its credentials; an error that says what is missing.
    pub fn new(target: &ServerTarget, user_agent: &'static str) -> anyhow::Result<ApiClient> {
        let base = server_url(&target.url)?;
        let bearer = match &target.key {
            Some(key) if !key.is_empty() => key.clone(),
            _ => match std::env::var(TOKEN_VARIABLE) {
                Ok(token) if !token.is_empty() => token,
                _ => bail!(
                    "no credentials: pass --key, or set CASELOAD_API_KEY (an API key, cl_...) \
                     or {TOKEN_VARIABLE} (a token from POST /login)"
                ),
            },
        };
        Ok(ApiClient {
            base,
            bearer,
            user_agent,
        })
    }

    /// The URL of a path (and query) on the server, under the base URL's own path (a
    /// server behind a prefix).
    pub fn url(&self, path_and_query: &str) -> Url {
        let mut url = self.base.clone();
        let (path, query) = match path_and_query.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path_and_query, None),
        };
        url.set_path(&format!("{}{path}", self.base.path().trim_end_matches('/')));
        url.set_query(query);
        url
    }

    /// Sends a request; its answer if its status is 2xx, else the server's refusal as the
    /// error. `body` is its content type and bytes.
    pub async fn call(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<(&str, Bytes)>,
    ) -> anyhow::Result<Answer> {
        let (headers, bytes) = match body {
            Some((content_type, bytes)) => (vec![("content-type", content_type.to_owned())], bytes),
            None => (Vec::new(), Bytes::new()),
        };
        let response = self
            .open(method, path_and_query, &headers, RequestBody::full(bytes))
            .await?;
        let body = read_body(response.into_body(), MAX_ANSWER)
            .await
            .map_err(anyhow::Error::msg)?;
        Ok(Answer { body })
    }

    /// [`ApiClient::call`] for a JSON answer.
    pub async fn json(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let body = body.map(|body| ("application/json", Bytes::from(body.to_string())));
        Ok(self.call(method, path_and_query, body).await?.json())
    }

    /// Sends a request and gives its answer as it comes (an event stream, a large body), if
    /// its status is 2xx; else the server's refusal is the error.
    pub async fn open(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(&'static str, String)],
        body: RequestBody,
    ) -> anyhow::Result<hyper::Response<Incoming>> {
        let response = self
            .request(method, path_and_query, headers, body, None)
            .await?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let body = read_body(response.into_body(), 1 << 20)
                .await
                .unwrap_or_default();
            bail!("{}", refusal(status, &body));
        }
        Ok(response)
    }

    /// Sends a request with these headers beside the bearer; the answer, whatever its
    /// status, as it comes. One not begun within `within` (if given) is an error.
    pub async fn request(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(&'static str, String)],
        body: RequestBody,
        within: Option<Duration>,
    ) -> anyhow::Result<hyper::Response<Incoming>> {
        let url = self.url(path_and_query);
        let address = address_of(&url)
            .await
            .map_err(|error| anyhow::anyhow!("{}: {error}", self.base))?;
        let mut all_headers = vec![
            ("authorization", format!("Bearer {}", self.bearer)),
            ("accept", "application/json, text/event-stream".to_owned()),
        ];
        all_headers.extend(headers.iter().cloned());
        let post = Post {
            url: &url,
            address,
            headers: &all_headers,
            body: Bytes::new(),
            read_at_most: 0,
            user_agent: self.user_agent,
        };
        let sent = open(method, &post, body);
        match within {
            Some(within) => tokio::time::timeout(within, sent).await.map_err(|_| {
                anyhow::anyhow!("{url} did not answer within {} s", within.as_secs())
            })?,
            None => sent.await,
        }
        .map_err(anyhow::Error::msg)
    }
}

/// The server's base URL: `http://host:port`, `https://...`, or a bare `host:port` (or
/// `host`), taken as `http://`.
pub fn server_url(text: &str) -> anyhow::Result<Url> {
    let text = text.trim();
    let with_scheme = if text.contains("://") {
        text.to_owned()
    } else {
        format!("http://{text}")
    };
    let url = Url::parse(&with_scheme).with_context(|| format!("--url {text}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        bail!("--url {text}: use an http:// or https:// address, or host:port");
    }
    if url.host_str().is_none_or(str::is_empty) {
        bail!("--url {text} names no host");
    }
    Ok(url)
}

/// What a refusal says: its status and title, the detail, and each violation of an invalid
/// request on a line of its own (`  /pointer: message`).
pub fn refusal(status: u16, body: &[u8]) -> String {
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

/// Reads an event stream's body, handing each event (its name, data and id) to `each` until
/// it says stop or the stream ends.
pub async fn read_events(
    mut body: Incoming,
    mut each: impl FnMut(&str, &str, Option<&str>) -> bool,
) -> anyhow::Result<()> {
    let mut buffer = String::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.context("the event stream broke off")?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        buffer.push_str(&String::from_utf8_lossy(data));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let (mut name, mut text, mut id) = ("message".to_owned(), String::new(), None);
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => value.clone_into(&mut name),
                    "data" => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(value);
                    }
                    "id" => id = Some(value.to_owned()),
                    _ => {}
                }
            }
            if !text.is_empty() && !each(&name, &text, id.as_deref()) {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_named_with_or_without_its_scheme() {
        let cases = [
            ("http://127.0.0.1:8080", Ok("http://127.0.0.1:8080/")),
            ("127.0.0.1:18181", Ok("http://127.0.0.1:18181/")),
            ("localhost:8080", Ok("http://localhost:8080/")),
            ("caseload.example.com", Ok("http://caseload.example.com/")),
            (
                "https://caseload.example.com/api/",
                Ok("https://caseload.example.com/api/"),
            ),
            (
                "ftp://example.com",
                Err("use an http:// or https:// address"),
            ),
        ];
        for (text, expected) in cases {
            let parsed = server_url(text).map(|url| url.to_string());
            match expected {
                Ok(url) => assert_eq!(parsed.ok().as_deref(), Some(url), "{text}"),
                Err(why) => assert!(
                    parsed.is_err_and(|error| error.to_string().contains(why)),
                    "{text}"
                ),
            }
        }
    }

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
