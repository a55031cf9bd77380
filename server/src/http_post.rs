//! One HTTP/1.1 request (a POST, a GET, or another method) to a given address: plain for `http`, TLS (rustls on ring,
//! Mozilla's roots) for `https`, the URL's host as the TLS name and `Host`. No redirect is
//! followed. Webhooks post their callbacks with it (the answer is its status); `caseload
//! plugin publish` posts a component and reads the server's answer; single sign-on gets the
//! issuer's discovery document and keys; `caseload job`, `data` and `plugin publish` call the
//! API, `data upload` sending a file as it reads it.

use std::net::SocketAddr;
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response};
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

/// What a post is: the address it goes to, its headers (a `content-type` among them), its
/// body, and how much of the answer's body to read.
pub struct Post<'a> {
    pub url: &'a Url,
    pub address: SocketAddr,
    pub headers: &'a [(&'a str, String)],
    pub body: Bytes,
    /// The answer's body is read up to this many bytes (0: not read).
    pub read_at_most: usize,
    pub user_agent: &'static str,
}

/// An answer: its status, and as much of its body as was asked for.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// What a GET is: the address it goes to, and how much of the answer's body to read.
pub struct Get<'a> {
    pub url: &'a Url,
    pub address: SocketAddr,
    pub read_at_most: usize,
    pub user_agent: &'static str,
}

/// The first address the URL's host resolves to, at its port (or its scheme's).
pub async fn address_of(url: &Url) -> Result<SocketAddr, String> {
    let host = url
        .host_str()
        .ok_or("the URL names no host")?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = url.port_or_known_default().ok_or("the URL names no port")?;
    tokio::net::lookup_host((host, port))
        .await
        .map_err(|error| format!("cannot resolve {host}: {error}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))
}

/// Sends the GET; the answer.
pub async fn get(get: Get<'_>) -> Result<Answer, String> {
    let request = Post {
        url: get.url,
        address: get.address,
        headers: &[],
        body: Bytes::new(),
        read_at_most: get.read_at_most,
        user_agent: get.user_agent,
    };
    exchange(Method::GET, request).await
}

/// Sends the post; the answer.
pub async fn post(post: Post<'_>) -> Result<Answer, String> {
    exchange(Method::POST, post).await
}

/// Sends a request of any method, with the post's headers and body; the answer.
pub async fn exchange(method: Method, post: Post<'_>) -> Result<Answer, String> {
    let host = post.url.host_str().unwrap_or_default().to_owned();
    let response = open(method, &post, RequestBody::full(post.body.clone())).await?;
    let status = response.status().as_u16();
    let body = read_body(response.into_body(), post.read_at_most)
        .await
        .map_err(|error| format!("reading {host}'s answer failed: {error}"))?;
    Ok(Answer { status, body })
}

/// A request's body: bytes at hand, or a stream of them (a file read as it is sent).
pub struct RequestBody(UnsyncBoxBody<Bytes, std::io::Error>);

impl RequestBody {
    pub fn full(bytes: Bytes) -> RequestBody {
        RequestBody(
            Full::new(bytes)
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
    }

    pub fn stream(
        chunks: impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> RequestBody {
        use futures_util::TryStreamExt;
        RequestBody(StreamBody::new(chunks.map_ok(Frame::data)).boxed_unsync())
    }
}

/// Sends a request of any method with the post's headers (its `body` unused: `body` is
/// sent); the answer, whose body the caller reads as it comes.
pub async fn open(
    method: Method,
    post: &Post<'_>,
    body: RequestBody,
) -> Result<Response<Incoming>, String> {
    let url = post.url;
    let address = post.address;
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
        send(stream, &host, method, post, body).await
    } else {
        send(stream, &host, method, post, body).await
    }
}

/// Reads a body, up to `at_most` bytes (0: none of it).
pub async fn read_body(mut incoming: Incoming, at_most: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    if at_most == 0 {
        return Ok(body);
    }
    while let Some(frame) = incoming.frame().await {
        let frame = frame.map_err(|error| error.to_string())?;
        if let Some(data) = frame.data_ref() {
            let room = at_most.saturating_sub(body.len());
            body.extend_from_slice(&data[..data.len().min(room)]);
            if body.len() >= at_most {
                break;
            }
        }
    }
    Ok(body)
}

async fn send<S>(
    stream: S,
    host: &str,
    method: Method,
    post: &Post<'_>,
    body: RequestBody,
) -> Result<Response<Incoming>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| format!("HTTP with {host} failed: {error}"))?;
    tokio::spawn(connection);
    let url = post.url;
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let mut request = Request::builder()
        .method(method)
        .uri(target)
        .header("host", authority)
        .header("user-agent", post.user_agent);
    for (name, value) in post.headers {
        request = request.header(*name, value);
    }
    let request = request.body(body.0).map_err(|error| error.to_string())?;
    sender
        .send_request(request)
        .await
        .map_err(|error| format!("the request to {host} failed: {error}"))
}
