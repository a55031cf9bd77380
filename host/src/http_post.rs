//! One HTTP/1.1 POST of a JSON body to a given address: plain for `http`, TLS (rustls on ring,
//! Mozilla's roots) for `https`, the URL's host as the TLS name and `Host`. No redirect is
//! followed: a callback's answer is its status.

use std::net::SocketAddr;
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use url::Url;

/// The TLS settings every callback uses.
static TLS: LazyLock<Result<Arc<ClientConfig>, String>> = LazyLock::new(|| {
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|builder| Arc::new(builder.with_root_certificates(roots).with_no_client_auth()))
        .map_err(|error| error.to_string())
});

/// Posts `body` to `url` at `address` with `headers`; the answer's status.
pub async fn post(
    url: &Url,
    address: SocketAddr,
    headers: &[(&str, String)],
    body: String,
) -> Result<u16, String> {
    let host = url.host_str().ok_or("the URL names no host")?.to_owned();
    let stream = TcpStream::connect(address)
        .await
        .map_err(|error| format!("cannot connect to {address}: {error}"))?;
    if url.scheme() == "https" {
        let config = TLS.as_ref().map_err(Clone::clone)?.clone();
        let name = ServerName::try_from(host.clone())
            .map_err(|error| format!("{host} is not a TLS name: {error}"))?;
        let stream = TlsConnector::from(config)
            .connect(name, stream)
            .await
            .map_err(|error| format!("TLS with {host} failed: {error}"))?;
        send(stream, url, &host, headers, body).await
    } else {
        send(stream, url, &host, headers, body).await
    }
}

async fn send<S>(
    stream: S,
    url: &Url,
    host: &str,
    headers: &[(&str, String)],
    body: String,
) -> Result<u16, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| format!("HTTP with {host} failed: {error}"))?;
    tokio::spawn(connection);
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let mut request = Request::post(target)
        .header("host", authority)
        .header("content-type", "application/json")
        .header(
            "user-agent",
            concat!("caseload-webhooks/", env!("CARGO_PKG_VERSION")),
        );
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|error| error.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| format!("the post to {host} failed: {error}"))?;
    Ok(response.status().as_u16())
}
