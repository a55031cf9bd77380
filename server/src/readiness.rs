//! `caseload ready`: asks a server's `GET /readyz` and says whether it is ready. A
//! container built `FROM scratch` has no curl; its health check runs the binary itself, which
//! finds the server where `serve` listens (`CASELOAD_LISTEN`) unless told a URL.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, bail};
use url::Url;

use crate::http_post::{Get, address_of, get};

/// How long the server may take to answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The URL a server listening on `listen` is reached at from its own host: an unspecified
/// address (`0.0.0.0`, `::`) is reached on the loopback.
pub fn url_of(listen: SocketAddr) -> String {
    let host = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(host, listen.port()))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_address_is_reached_on_its_host_or_the_loopback() {
        for (listen, url) in [
            ("0.0.0.0:9000", "http://127.0.0.1:9000"),
            ("[::]:9000", "http://[::1]:9000"),
            ("127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("10.0.0.7:81", "http://10.0.0.7:81"),
            ("[fd00::1]:81", "http://[fd00::1]:81"),
        ] {
            let listen: SocketAddr = listen.parse().expect("an address");
            assert_eq!(url_of(listen), url, "{listen}");
        }
    }
}
