//! The accept loop both listeners share: each TCP connection (with TLS when configured) is
//! served by hyper-util's connection builder in its own task, so the server can act on one
//! connection at a time. A stop closes the listener and shuts every connection down
//! gracefully; for the gRPC port, every swap of the served version does the same to the
//! connections open at that moment (HTTP/2 GOAWAY: calls and streams in flight finish on the
//! version they started with, and clients reconnect and re-list, as OLM expects when a catalog
//! changes). Slow and idle clients are bounded ([`Limits`]): a connection that sends no
//! request in time is closed, and the number of open connections is capped.

use super::coalesce::coalesce;
use super::sendfile::{SendfileIo, Sink};
use anyhow::Result;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long a client may take over its TLS handshake before the connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a slow or idle client may hold. The defaults are sized from measurement: a connection
/// that sent half a request header, or only the HTTP/2 preface, holds about 22 KB of the
/// server's memory (800 of them added 17.6 MB and 18.3 MB), so 1,000 connections per port
/// stay near 22 MB.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// A connection that has not sent a whole request this long after it opened is closed
    /// (any protocol: half a request header, an HTTP/2 or gRPC connection that never opens a
    /// stream, a client that sends nothing). On HTTP/1.1 it is also the header read timeout
    /// of every later request, which starts when the previous response ends, so it is the
    /// keep-alive idle timeout too.
    pub request_timeout: Duration,
    /// At most this many connections are open at once; more wait in the kernel's accept
    /// queue until one closes.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_timeout: Duration::from_secs(10),
            max_connections: 1000,
        }
    }
}

/// What one listener serves and how.
pub struct Listen {
    /// HTTP/2 only (gRPC), or HTTP/1.1 and HTTP/2 (the HTTP port).
    pub http2_only: bool,
    /// TLS on every connection.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Connections open when this changes get a graceful shutdown (GOAWAY).
    pub goaway: Option<watch::Receiver<u64>>,
    /// Timeouts and the connection bound.
    pub limits: Limits,
}

/// Accepts connections until `stop` resolves, then stops accepting (the listener is closed at
/// once), shuts every open connection down gracefully and returns when the last one closes.
/// The caller bounds that wait with its grace period.
pub async fn serve<S, B>(
    listener: TcpListener,
    svc: S,
    listen: Listen,
    stop: impl Future<Output = ()>,
) -> Result<()>
where
    S: tower::Service<http::Request<Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let mut builder = Builder::new(TokioExecutor::new());
    // hyper enforces its HTTP/1 header read timeout only when a timer is set.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(listen.limits.request_timeout)
        // Body chunks are queued and written as they are, never copied into hyper's buffer: a
        // sendfile body's chunks are placeholders ([`super::sendfile`]).
        .writev(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(10_000)
        // What a stream may queue for the socket before its body waits (hyper's default is
        // 400 KB): a bundle answer is 57 KB on average, and with 128 streams each holding
        // 400 KB of a large answer the server's memory was the clients' reading speed.
        .max_send_buf_size(64 * 1024);
    if listen.http2_only {
        builder = builder.http2_only();
    }
    let builder = Arc::new(builder);
    let tls = listen.tls.map(tokio_rustls::TlsAcceptor::from);
    // Every connection holds a receiver: `closed()` resolves when the last one is gone.
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut stop = std::pin::pin!(stop);
    let open = Arc::new(tokio::sync::Semaphore::new(listen.limits.max_connections));
    let request_timeout = listen.limits.request_timeout;
    let http2_only = listen.http2_only;
    loop {
        // A permit per open connection: at the bound, the next one waits to be accepted.
        let permit = tokio::select! {
            _ = &mut stop => break,
            p = open.clone().acquire_owned() => p.expect("the semaphore is never closed"),
        };
        let (tcp, _) = tokio::select! {
            _ = &mut stop => break,
            conn = listener.accept() => match conn {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors and the like: wait a little rather than spin.
                    tracing::debug!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Without TCP_NODELAY a response larger than one segment waits for the client's
        // delayed ACK (Nagle), about 40 ms per call.
        let _ = tcp.set_nodelay(true);
        let svc = TowerToHyperService::new(svc.clone());
        let builder = builder.clone();
        let tls = tls.clone();
        let stop_rx = stop_rx.clone();
        let goaway = listen.goaway.clone().map(|mut g| {
            g.mark_unchanged();
            g
        });
        // The HTTP port's plain connections may send files with sendfile; not the gRPC port
        // (HTTP/2 only) and not through TLS.
        let sink = (tls.is_none() && !http2_only).then(Sink::default);
        tokio::spawn(async move {
            let _permit = permit;
            let io = SendfileIo::new(tcp, sink.clone().unwrap_or_default());
            let first = FirstRequest::new(svc, request_timeout, sink);
            match tls {
                None => one(&builder, io, first, stop_rx, goaway).await,
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(io)).await {
                        Ok(Ok(io)) => one(&builder, io, first, stop_rx, goaway).await,
                        Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!("TLS handshake timed out"),
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(stop_rx);
    stop_tx.closed().await;
    Ok(())
}

/// Serves one connection to its end; a stop, or a change of `goaway`, shuts it down
/// gracefully (once). What one poll of the connection writes goes out together when the poll
/// ends ([`coalesce`]).
async fn one<I, S, B>(
    builder: &Builder<TokioExecutor>,
    io: I,
    svc: FirstRequest<S>,
    mut stop: watch::Receiver<bool>,
    mut goaway: Option<watch::Receiver<u64>>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<http::Request<Incoming>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let (io, drain) = coalesce(io);
    let seen = svc.seen.clone();
    let deadline = tokio::time::sleep(svc.timeout);
    let mut deadline = std::pin::pin!(deadline);
    let mut conn = std::pin::pin!(builder.serve_connection(TokioIo::new(io), svc));
    let mut shutting_down = false;
    loop {
        let stopped = async {
            if shutting_down || stop.wait_for(|s| *s).await.is_err() {
                std::future::pending::<()>().await
            }
        };
        // The timeout applies until the first request: a select's condition is read once,
        // when it starts, so the request seen since is checked here, after the timer.
        let idle = async {
            (&mut deadline).await;
            if seen.load(Ordering::Relaxed) {
                std::future::pending::<()>().await
            }
        };
        let swapped = async {
            match goaway.as_mut() {
                Some(g) if !shutting_down => {
                    if g.changed().await.is_err() {
                        std::future::pending::<()>().await
                    }
                }
                _ => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            res = std::future::poll_fn(|cx| {
                let res = conn.as_mut().poll(cx);
                drain.poll_drain(cx);
                res
            }) => {
                if let Err(e) = res {
                    tracing::debug!("connection ended: {e}");
                }
                return;
            }
            _ = stopped => {}
            _ = swapped => {}
            _ = idle => {
                tracing::debug!("connection closed: no request within the timeout");
                return;
            }
        }
        // A stop or a swap: GOAWAY (HTTP/2) or close after the current response (HTTP/1).
        conn.as_mut().graceful_shutdown();
        shutting_down = true;
        goaway = None;
    }
}

/// A connection's service that notes its first request, so that a connection which never
/// sends one can be closed ([`Limits::request_timeout`]), and hands every request the
/// connection's [`Sink`] when it has one.
struct FirstRequest<S> {
    inner: S,
    seen: Arc<AtomicBool>,
    timeout: Duration,
    sink: Option<Sink>,
}

impl<S> FirstRequest<S> {
    fn new(inner: S, timeout: Duration, sink: Option<Sink>) -> Self {
        FirstRequest {
            inner,
            seen: Arc::new(AtomicBool::new(false)),
            timeout,
            sink,
        }
    }
}

impl<S, B> hyper::service::Service<http::Request<B>> for FirstRequest<S>
where
    S: hyper::service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;
    fn call(&self, mut req: http::Request<B>) -> Self::Future {
        self.seen.store(true, Ordering::Relaxed);
        if let Some(sink) = &self.sink {
            req.extensions_mut().insert(sink.clone());
        }
        self.inner.call(req)
    }
}
