//! The four unary bundle RPCs (GetBundle, GetBundleForChannel, GetBundleThatReplaces,
//! GetDefaultBundleThatProvides) answered with the pieces of their [`EncodedBundle`], not
//! through tonic's encoder, which copies a whole answer into one buffer and holds it until the
//! client has read it. Here an answer is never in one piece: the pieces the store copied out of
//! its row (a synthesized CSV, usually sent twice, is held once) go to the connection as they
//! are. Which answer, or which error, is still decided by the [`Registry`] methods themselves.
//!
//! What goes on the wire is what tonic sends: `content-type: application/grpc`, one
//! uncompressed message, then the trailer `grpc-status: 0`; an error is tonic's own
//! (`Status::into_http`), and a request body that fails to arrive is answered as tonic answers
//! it (`Status::from_error`). A request this path does not take as it is (compressed, not
//! exactly one message, larger than [`MAX_REQUEST`], undecodable, or ending in trailers) goes to
//! tonic unchanged, so its answer, an error included, is tonic's.

use super::registry::RegistryService;
use crate::api;
use crate::served_api::registry_server::Registry;
use crate::wire::EncodedBundle;
use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame};
use prost::Message;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tonic::{Request, Status};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The largest request message taken here; tonic's `Registry` service is given the same limit
/// (`server::serve`), so larger ones get tonic's error.
pub const MAX_REQUEST: usize = 4 << 20;

/// Pieces smaller than this are sent together with their neighbours (copied into one chunk),
/// so an answer is a few DATA frames, not one per splice.
const SMALL_PIECE: usize = 4096;

#[derive(Clone, Copy)]
#[allow(clippy::enum_variant_names)] // the RPCs' own names
enum Rpc {
    GetBundle,
    GetBundleForChannel,
    GetBundleThatReplaces,
    GetDefaultBundleThatProvides,
}

impl Rpc {
    fn of(path: &str) -> Option<Rpc> {
        Some(match path.strip_prefix("/api.Registry/")? {
            "GetBundle" => Rpc::GetBundle,
            "GetBundleForChannel" => Rpc::GetBundleForChannel,
            "GetBundleThatReplaces" => Rpc::GetBundleThatReplaces,
            "GetDefaultBundleThatProvides" => Rpc::GetDefaultBundleThatProvides,
            _ => return None,
        })
    }

    /// Decodes the request and asks the registry; `None` when the message does not decode.
    async fn answer(
        self,
        reg: &RegistryService,
        msg: Bytes,
    ) -> Option<Result<EncodedBundle, Status>> {
        let res = match self {
            Rpc::GetBundle => {
                let r = api::GetBundleRequest::decode(msg).ok()?;
                reg.get_bundle(Request::new(r)).await
            }
            Rpc::GetBundleForChannel => {
                let r = api::GetBundleInChannelRequest::decode(msg).ok()?;
                reg.get_bundle_for_channel(Request::new(r)).await
            }
            Rpc::GetBundleThatReplaces => {
                let r = api::GetReplacementRequest::decode(msg).ok()?;
                reg.get_bundle_that_replaces(Request::new(r)).await
            }
            Rpc::GetDefaultBundleThatProvides => {
                let r = api::GetDefaultProviderRequest::decode(msg).ok()?;
                reg.get_default_bundle_that_provides(Request::new(r)).await
            }
        };
        Some(res.map(tonic::Response::into_inner))
    }
}

/// The service in front of tonic's routes that takes the four RPCs.
#[derive(Clone)]
pub struct Direct<S> {
    pub inner: S,
    pub registry: RegistryService,
}

impl<S, B> tower::Service<http::Request<B>> for Direct<S>
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let rpc = Rpc::of(req.uri().path()).filter(|_| uncompressed(req.headers()));
        // The clone takes the place of the service that was polled ready.
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        let Some(rpc) = rpc else {
            return Box::pin(inner.call(req.map(tonic::body::Body::new)));
        };
        let registry = self.registry.clone();
        Box::pin(async move {
            let (parts, mut body) = req.into_parts();
            let read = read_message(&mut body).await;
            let answer = match &read {
                Ok(Read::One(frame)) => rpc.answer(&registry, frame.slice(5..)).await,
                _ => None,
            };
            let (prefix, trailers) = match (answer, read) {
                (Some(Ok(b)), _) => return Ok(respond(b)),
                (Some(Err(status)), _) => return Ok(status.into_http()),
                (None, Err(e)) => return Ok(Status::from_error(e).into_http()),
                (None, Ok(Read::One(frame))) => (frame, None),
                (None, Ok(Read::Other(prefix, trailers))) => (prefix, trailers),
            };
            let body = Prefixed {
                prefix: Some(prefix).filter(|p| !p.is_empty()),
                trailers,
                rest: body,
            };
            inner
                .call(http::Request::from_parts(
                    parts,
                    tonic::body::Body::new(body),
                ))
                .await
        })
    }
}

/// No `grpc-encoding`, or `identity`.
fn uncompressed(h: &http::HeaderMap) -> bool {
    h.get("grpc-encoding")
        .is_none_or(|v| v.as_bytes() == b"identity")
}

enum Read {
    /// The body was exactly one uncompressed message: this one, with its 5-byte header.
    One(Bytes),
    /// Anything else: what was read of it (the rest, if any, is still in the body), and the
    /// request's trailers if they were read.
    Other(Bytes, Option<http::HeaderMap>),
}

/// Reads a request body that should hold one uncompressed gRPC message, stopping as soon as it
/// does not (a compressed flag, a message over [`MAX_REQUEST`], more after the message).
async fn read_message<B>(body: &mut B) -> Result<Read, BoxError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let mut buf = BytesMut::new();
    loop {
        if let Some(len) = declared_len(&buf) {
            if buf[0] != 0 || len > MAX_REQUEST || buf.len() > 5 + len {
                return Ok(Read::Other(buf.freeze(), None));
            }
        }
        let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
        match frame {
            Some(f) => match f.map_err(Into::into)?.into_data() {
                Ok(d) => buf.extend_from_slice(&d),
                // Request trailers: not taken here (tonic adds them to the metadata).
                Err(f) => return Ok(Read::Other(buf.freeze(), f.into_trailers().ok())),
            },
            None => {
                let whole = declared_len(&buf) == Some(buf.len().wrapping_sub(5));
                return Ok(match whole {
                    true => Read::One(buf.freeze()),
                    false => Read::Other(buf.freeze(), None),
                });
            }
        }
    }
}

/// The message length a gRPC frame's 5-byte header declares, once the header is in.
fn declared_len(buf: &[u8]) -> Option<usize> {
    (buf.len() >= 5).then(|| u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize)
}

/// The 5-byte header of an uncompressed gRPC frame holding `len` bytes.
fn frame_header(len: usize) -> [u8; 5] {
    let [a, b, c, d] = (len as u32).to_be_bytes();
    [0, a, b, c, d]
}

/// The success response: the answer's pieces as the body, then `grpc-status: 0`.
fn respond(b: EncodedBundle) -> http::Response<tonic::body::Body> {
    let mut header = BytesMut::with_capacity(SMALL_PIECE);
    header.extend_from_slice(&frame_header(b.encoded_len()));
    let mut chunks = Vec::new();
    for p in b.pieces() {
        if p.len() < SMALL_PIECE {
            header.extend_from_slice(p);
            continue;
        }
        if !header.is_empty() {
            chunks.push(header.split().freeze());
        }
        chunks.push(p.clone());
    }
    if !header.is_empty() {
        chunks.push(header.freeze());
    }
    let mut res = http::Response::new(tonic::body::Body::new(Pieces {
        chunks: chunks.into_iter(),
        done: false,
    }));
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    res
}

/// A one-message gRPC body sent chunk by chunk, then its trailers.
struct Pieces {
    chunks: std::vec::IntoIter<Bytes>,
    done: bool,
}

impl Body for Pieces {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(c) = self.chunks.next() {
            return Poll::Ready(Some(Ok(Frame::data(c))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        self.done = true;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// A request body whose first bytes (and maybe its trailers) were already read.
struct Prefixed<B> {
    prefix: Option<Bytes>,
    /// Read after `prefix`: the body had ended.
    trailers: Option<http::HeaderMap>,
    rest: B,
}

impl<B> Body for Prefixed<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(p) = self.prefix.take() {
            return Poll::Ready(Some(Ok(Frame::data(p))));
        }
        if let Some(t) = self.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(t))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_none() && self.trailers.is_none() && self.rest.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Sends `body` (and `trailers`) to `path` through [`Direct`] in front of a stand-in for
    /// tonic that only counts what reaches it. The registry has no catalog yet, so a request
    /// the direct path takes is answered UNAVAILABLE (14) by the registry itself. Returns the
    /// requests the stand-in saw and the answer's grpc-status header.
    async fn route(
        path: &str,
        body: Bytes,
        trailers: Option<http::HeaderMap>,
    ) -> (usize, Option<String>) {
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let inner = tower::service_fn(move |_: http::Request<tonic::body::Body>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                Ok::<_, std::convert::Infallible>(http::Response::new(tonic::body::Body::empty()))
            }
        });
        let svc = Direct {
            inner,
            registry: RegistryService {
                state: Default::default(),
            },
        };
        let body = Prefixed {
            prefix: Some(body),
            trailers,
            rest: tonic::body::Body::empty(),
        };
        let req = http::Request::post(path).body(body).unwrap();
        let res = tower::ServiceExt::oneshot(svc, req).await.unwrap();
        let status = res
            .headers()
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().to_string());
        (seen.load(Ordering::SeqCst), status)
    }

    fn framed(msg: &[u8], declared: usize) -> Bytes {
        [&frame_header(declared)[..], msg].concat().into()
    }

    #[tokio::test]
    async fn takes_the_four_rpcs_and_leaves_everything_else_to_tonic() {
        let get = api::GetBundleRequest {
            pkg_name: "p".into(),
            channel_name: "c".into(),
            csv_name: "b".into(),
        }
        .encode_to_vec();
        let one = framed(&get, get.len());
        for rpc in [
            "GetBundle",
            "GetBundleForChannel",
            "GetBundleThatReplaces",
            "GetDefaultBundleThatProvides",
        ] {
            let msg = match rpc {
                "GetDefaultBundleThatProvides" => api::GetDefaultProviderRequest {
                    group: "g".into(),
                    version: "v1".into(),
                    kind: "K".into(),
                    plural: String::new(),
                }
                .encode_to_vec(),
                _ => get.clone(),
            };
            let path = format!("/api.Registry/{rpc}");
            let got = route(&path, framed(&msg, msg.len()), None).await;
            assert_eq!(got, (0, Some("14".into())), "{rpc}");
        }
        let path = "/api.Registry/GetBundle";
        // Left to tonic: another RPC, a compressed message, two messages, trailers, a
        // message over the limit (whole), a message cut short, no message.
        let mut two = BytesMut::from(&one[..]);
        two.extend_from_slice(&framed(b"", 0));
        let mut compressed = BytesMut::from(&one[..]);
        compressed[0] = 1;
        // A valid request, only too large.
        let big = api::GetBundleRequest {
            pkg_name: "p".repeat(MAX_REQUEST),
            channel_name: "c".into(),
            csv_name: "b".into(),
        }
        .encode_to_vec();
        let mut t = http::HeaderMap::new();
        t.insert("x-note", http::HeaderValue::from_static("1"));
        let cases: Vec<(&str, Bytes, Option<http::HeaderMap>)> = vec![
            ("/api.Registry/GetPackage", one.clone(), None),
            ("/api.Registry/ListBundles", framed(b"", 0), None),
            (path, compressed.freeze(), None),
            (path, two.freeze(), None),
            (path, one.clone(), Some(t)),
            (path, framed(&big, big.len()), None),
            (path, one.slice(..one.len() - 1), None),
            (path, Bytes::new(), None),
        ];
        for (i, (path, body, trailers)) in cases.into_iter().enumerate() {
            assert_eq!(route(path, body, trailers).await, (1, None), "case {i}");
        }
    }
}
