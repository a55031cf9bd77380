//! The HTTP listener: the accept loop, and the limits every connection lives under.
//!
//! A connection must send a request's headers within `header_timeout` of being opened, or of
//! its previous response (an idle keep-alive connection gets the same time), and a body must
//! make progress (a frame at least every `body_timeout`), or the connection is closed; an
//! upload cut off so deletes what it wrote. At most `max_connections` are open at once: one
//! more closes the oldest idle one (no request in flight, no response still streaming), and
//! only if none is idle the oldest of all, gracefully (a request in flight finishes first;
//! event streams and long-polls, told by [`ConnectionClosing`], answer at once; anything
//! else still running after [`CLOSE_BACKSTOP`] is cut off). So a flood of silent connections
//! or of streams cannot keep a new client out, nor push the process past its file limit,
//! and silent connections, anyone's, go before another user's stream does.
//! Connections speak HTTP/1.1, which every client of the API does.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tower_http::timeout::TimeoutBody;
use tower_service::Service;

use crate::api::ConnectionClosing;

/// What a connection may do.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// The longest wait for a request's headers, from the connection's start or its previous
    /// response.
    pub header_timeout: Duration,
    /// The longest gap between two parts of a request's body.
    pub body_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

/// How long a connection closed to make room may take to finish its request in flight.
const CLOSE_BACKSTOP: Duration = Duration::from_secs(5);

/// Connections asked to close that may still hold their sockets, beyond `max_connections`.
const CLOSING_SLACK: usize = 64;

/// Connections the kernel queues before they are accepted. A burst of connections beyond it
/// has SYNs dropped, and a client retransmits only after a second; Linux caps it at
/// `net.core.somaxconn` (4,096 by default).
const LISTEN_BACKLOG: u32 = 4096;

/// A listening socket on `address` with a backlog of [`LISTEN_BACKLOG`].
pub fn bind(address: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// File descriptors kept for everything but connections (the database, plugin files, the
/// compile cache, the engine) and for connections still closing ([`CLOSING_SLACK`]).
const RESERVED_FILES: u64 = 256 + CLOSING_SLACK as u64;

/// Raises the soft limit on open files to the hard one, and returns how many connections fit
/// under it with [`RESERVED_FILES`] to spare (`None` if the limit cannot be read).
pub fn connections_the_file_limit_allows() -> Option<usize> {
    use rustix::process::{Resource, getrlimit, setrlimit};

    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if let Err(error) = setrlimit(Resource::Nofile, limit) {
            tracing::warn!(%error, "cannot raise the open-file limit to its hard limit");
            limit = getrlimit(Resource::Nofile);
        }
    }
    let files = limit.current?;
    Some(usize::try_from(files.saturating_sub(RESERVED_FILES).max(16)).unwrap_or(usize::MAX))
}

/// The open connections, oldest first, each with the signal that closes it.
#[derive(Default)]
struct Open {
    next_id: u64,
    /// Connections not yet asked to close.
    connections: BTreeMap<u64, Connection>,
    /// Connections whose socket is still open, those closing included.
    alive: usize,
}

/// An open connection: what closes it, and how many of its requests are in flight (until
/// their responses' bodies end).
struct Connection {
    close: Arc<Notify>,
    in_use: Arc<AtomicUsize>,
}

impl Open {
    /// Asks the oldest idle connection to close, else the oldest of all; false if none is
    /// open.
    fn make_room(&mut self) -> bool {
        let idle = self
            .connections
            .iter()
            .find(|(_, connection)| connection.in_use.load(Ordering::Acquire) == 0)
            .map(|(id, _)| *id);
        let chosen = idle.or_else(|| self.connections.keys().next().copied());
        match chosen.and_then(|id| self.connections.remove(&id)) {
            Some(connection) => {
                connection.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A response body that counts its request in flight until it ends (or is dropped): a
/// stream's connection is in use for as long as it streams.
struct Counted {
    body: Body,
    _in_use: InUse,
}

/// One request in flight on a connection.
struct InUse(Arc<AtomicUsize>);

impl InUse {
    fn new(count: &Arc<AtomicUsize>) -> InUse {
        count.fetch_add(1, Ordering::AcqRel);
        InUse(count.clone())
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl hyper::body::Body for Counted {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting, closes idle
/// connections, and returns once every request in flight has been answered.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let open = Arc::new(Mutex::new(Open::default()));
    let (stopping, stop) = watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // Signalled whenever a connection's socket is closed.
    let closed = Arc::new(Notify::new());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // Connections asked to close hold their sockets until their tasks run: wait for
        // them rather than accept past the file limit.
        while open.lock().unwrap_or_else(PoisonError::into_inner).alive
            >= limits.max_connections.max(1) + CLOSING_SLACK
        {
            let _ = tokio::time::timeout(Duration::from_millis(10), closed.notified()).await;
        }
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // the listener itself is fine.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let (id, close, in_use) = {
            let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
            while open.connections.len() >= limits.max_connections.max(1) && open.make_room() {}
            let id = open.next_id;
            open.next_id += 1;
            open.alive += 1;
            let close = Arc::new(Notify::new());
            let in_use = Arc::new(AtomicUsize::new(0));
            open.connections.insert(
                id,
                Connection {
                    close: close.clone(),
                    in_use: in_use.clone(),
                },
            );
            (id, close, in_use)
        };
        let router = app.clone();
        let (closing_sender, closing) = ConnectionClosing::new();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let request_in_use = InUse::new(&in_use);
            let mut request =
                request.map(|body| Body::new(TimeoutBody::new(limits.body_timeout, body)));
            request.extensions_mut().insert(ConnectInfo(remote));
            request.extensions_mut().insert(closing.clone());
            let mut router = router.clone();
            async move {
                let response = router.call(request).await?;
                Ok::<_, std::convert::Infallible>(response.map(|body| Counted {
                    body,
                    _in_use: request_in_use,
                }))
            }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let open = open.clone();
        let closed = closed.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            // In a box, so that it can be dropped (its socket closed) before it is counted out.
            let mut connection = Box::pin(connection);
            let mut closing = false;
            // Set when the connection is closed to make room: it may not linger.
            let mut cut_off_at = None;
            loop {
                let backstop = async {
                    match cut_off_at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(error) = result {
                            tracing::debug!(%error, "connection ended with an error");
                        }
                        break;
                    }
                    () = close.notified(), if !closing => {
                        closing = true;
                        cut_off_at = Some(tokio::time::Instant::now() + CLOSE_BACKSTOP);
                        closing_sender.send_replace(true);
                        connection.as_mut().graceful_shutdown();
                    }
                    _ = stop.wait_for(|stopping| *stopping), if !closing => {
                        closing = true;
                        closing_sender.send_replace(true);
                        connection.as_mut().graceful_shutdown();
                    }
                    () = backstop => {
                        tracing::debug!("a connection closed to make room was cut off");
                        break;
                    }
                }
            }
            drop(connection);
            {
                let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
                open.connections.remove(&id);
                open.alive -= 1;
            }
            closed.notify_waiters();
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    // Every connection task holds a receiver: when the last one ends, they are all done.
    drop(stop);
    stopping.closed().await;
    Ok(())
}
