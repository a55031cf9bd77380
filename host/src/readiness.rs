//! `caseload ready`: asks a server's `GET /readyz` and says whether it is ready. A
//! container built `FROM scratch` has no curl; its health check runs the binary itself.

use std::time::Duration;

use anyhow::{Context, bail};
use url::Url;

use crate::http_post::{Get, address_of, get};

/// How long the server may take to answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Ok if `<url>/readyz` answers 200; why not otherwise.
pub async fn probe(url: &str) -> anyhow::Result<()> {
    let base = Url::parse(url).with_context(|| format!("--url {url:?}"))?;
    let readyz = base.join("readyz").context("--url")?;
    let address = address_of(&readyz)
        .await
        .map_err(|error| anyhow::anyhow!("{readyz}: {error}"))?;
    let request = get(Get {
        url: &readyz,
        address,
        read_at_most: 64 * 1024,
        user_agent: "caseload-ready",
    });
    let answer = tokio::time::timeout(TIMEOUT, request)
        .await
        .with_context(|| format!("{readyz} did not answer within {TIMEOUT:?}"))?
        .map_err(|error| anyhow::anyhow!("{readyz}: {error}"))?;
    if answer.status == 200 {
        return Ok(());
    }
    let detail = serde_json::from_slice::<serde_json::Value>(&answer.body)
        .ok()
        .and_then(|problem| problem["detail"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&answer.body).into_owned());
    bail!("{readyz} answered {}: {detail}", answer.status)
}
