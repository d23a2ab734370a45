//! One tower layer that measures every call, around the tonic server and around the HTTP
//! router: it wraps the response body, counts its bytes (and, for gRPC, its length-prefixed
//! messages), reads the gRPC status from the headers (trailers-only answers) or the
//! trailers, and records the call once, when the body ends or is dropped (a client that goes
//! away mid-stream is counted as `Canceled`). A stream is therefore logged at its end.

use super::{grpc_code_name, GrpcLabels, HttpLabels, Metrics};
use bytes::Buf;
use http_body::{Body, Frame};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

/// The target of the per-call log lines (this module's path, as tracing sets it): the CLI's
/// log sink batches these lines in a server.
pub const CALL_LOG_TARGET: &str = module_path!();

/// The protocol, with the function that turns a request path into its label: a served
/// method or route, else one shared value, never the raw path (the surfaces own their
/// methods and routes; this layer only measures).
#[derive(Clone, Copy, Debug)]
enum Kind {
    Grpc(fn(&str) -> &'static str),
    Http(fn(&str) -> &'static str),
}

#[derive(Clone)]
pub struct MetricsLayer {
    metrics: Arc<Metrics>,
    kind: Kind,
}

impl MetricsLayer {
    pub fn grpc(metrics: Arc<Metrics>, method_of: fn(&str) -> &'static str) -> Self {
        MetricsLayer {
            metrics,
            kind: Kind::Grpc(method_of),
        }
    }
    pub fn http(metrics: Arc<Metrics>, route_of: fn(&str) -> &'static str) -> Self {
        MetricsLayer {
            metrics,
            kind: Kind::Http(route_of),
        }
    }
}

impl<S> tower::Layer<S> for MetricsLayer {
    type Service = Metered<S>;
    fn layer(&self, inner: S) -> Metered<S> {
        Metered {
            inner,
            metrics: self.metrics.clone(),
            kind: self.kind,
        }
    }
}

#[derive(Clone)]
pub struct Metered<S> {
    inner: S,
    metrics: Arc<Metrics>,
    kind: Kind,
}

impl<S, ReqB, ResB> tower::Service<http::Request<ReqB>> for Metered<S>
where
    S: tower::Service<http::Request<ReqB>, Response = http::Response<ResB>>,
    S::Future: Send + 'static,
    ResB: Body,
{
    type Response = http::Response<MeteredBody<ResB>>;
    type Error = S::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqB>) -> Self::Future {
        let started = Instant::now();
        let in_flight = self.metrics.activity.busy();
        let label = match self.kind {
            Kind::Grpc(label_of) | Kind::Http(label_of) => label_of(req.uri().path()),
        };
        let method = req.method().to_string();
        let fut = self.inner.call(req);
        let (metrics, kind) = (self.metrics.clone(), self.kind);
        Box::pin(async move {
            let resp = fut.await?;
            let (parts, body) = resp.into_parts();
            let status = match kind {
                Kind::Grpc(_) => parts
                    .headers
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse().ok()),
                Kind::Http(_) => Some(i32::from(parts.status.as_u16())),
            };
            let rec = Record {
                metrics,
                kind,
                label,
                method,
                started,
                status,
                bytes: 0,
                messages: 0,
                frame_left: 0,
                header_left: 5,
                done: false,
                _in_flight: in_flight,
            };
            Ok(http::Response::from_parts(
                parts,
                MeteredBody { rec, inner: body },
            ))
        })
    }
}

/// What one call has done so far.
struct Record {
    metrics: Arc<Metrics>,
    kind: Kind,
    label: &'static str,
    method: String,
    started: Instant,
    status: Option<i32>,
    bytes: u64,
    messages: u64,
    /// gRPC framing: payload bytes left in the current message, header bytes left before it.
    frame_left: u64,
    header_left: u8,
    done: bool,
    /// The call is in flight until its answer is written or dropped.
    _in_flight: crate::memory::Busy,
}

impl Record {
    fn data(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        if !matches!(self.kind, Kind::Grpc(_)) {
            return;
        }
        let mut i = 0usize;
        while i < chunk.len() {
            if self.header_left > 0 {
                // Bytes 1..5 of the 5-byte prefix are the big-endian length.
                let pos = 5 - self.header_left;
                if pos >= 1 {
                    self.frame_left = (self.frame_left << 8) | u64::from(chunk[i]);
                }
                self.header_left -= 1;
                i += 1;
                if self.header_left == 0 {
                    self.messages += 1;
                    if self.frame_left == 0 {
                        self.header_left = 5;
                    }
                }
            } else {
                let take = (self.frame_left as usize).min(chunk.len() - i);
                i += take;
                self.frame_left -= take as u64;
                if self.frame_left == 0 {
                    self.header_left = 5;
                }
            }
        }
    }

    fn finish(&mut self, ended: bool) {
        if self.done {
            return;
        }
        self.done = true;
        let secs = self.started.elapsed().as_secs_f64();
        let m = &self.metrics;
        match self.kind {
            Kind::Grpc(_) => {
                // No status at all: the client went away (or the body ended without one).
                let code = grpc_code_name(self.status.unwrap_or(if ended { 2 } else { 1 }));
                let l = GrpcLabels {
                    method: self.label,
                    code,
                };
                m.grpc_requests.get_or_create(&l).inc();
                m.grpc_seconds.get_or_create(&l).observe(secs);
                m.grpc_bytes.get_or_create(&l).inc_by(self.bytes);
                if m.log_calls {
                    tracing::info!(
                        method = %self.label,
                        status = %code,
                        duration_ms = %format_args!("{:.3}", secs * 1000.0),
                        bytes = self.bytes,
                        messages = self.messages,
                        "grpc call"
                    );
                }
            }
            Kind::Http(_) => {
                let code = self.status.unwrap_or(0).to_string();
                let l = HttpLabels {
                    route: self.label.to_string(),
                    code: code.clone(),
                };
                m.http_requests.get_or_create(&l).inc();
                m.http_seconds.get_or_create(&l).observe(secs);
                m.http_bytes.get_or_create(&l).inc_by(self.bytes);
                // catalogd's histogram covers its catalog handler, not the probes or /metrics.
                if !matches!(self.label, "/metrics" | "/healthz" | "/readyz") {
                    m.catalogd_http_seconds
                        .get_or_create(&super::CodeLabels { code: code.clone() })
                        .observe(secs);
                }
                if m.log_calls {
                    tracing::info!(
                        method = %self.method,
                        route = %self.label,
                        status = %code,
                        duration_ms = %format_args!("{:.3}", secs * 1000.0),
                        bytes = self.bytes,
                        "http request"
                    );
                }
            }
        }
    }
}

/// A call not recorded when its body ends is recorded when the body is dropped.
impl Drop for Record {
    fn drop(&mut self) {
        self.finish(false);
    }
}

pin_project_lite::pin_project! {
    /// A response body that records its call when it ends or is dropped. `rec` is declared
    /// first, so it is dropped (and the call recorded) before the inner body.
    pub struct MeteredBody<B> {
        rec: Record,
        #[pin]
        inner: B,
    }
}

impl<B: Body> Body for MeteredBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    let chunk = d.chunk();
                    // Data in several chunks (never from tonic or axum): bytes still count.
                    this.rec.data(chunk);
                    this.rec.bytes += (d.remaining() - chunk.len()) as u64;
                }
                if let Some(t) = frame.trailers_ref() {
                    if let Some(s) = t
                        .get("grpc-status")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse().ok())
                    {
                        this.rec.status = Some(s);
                    }
                }
            }
            Poll::Ready(None) => this.rec.finish(true),
            Poll::Ready(Some(Err(_))) => {}
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
