//! The HTTP port: catalogd's catalog API (OLM v1 clients), `/healthz`, `/readyz` and
//! `/metrics`, served from the same built version as the gRPC port.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | routing, the shared [`HttpState`], `Vary`, serving with graceful shutdown |
//! | [`content`] | one version's JSONL file (each FBC meta as catalogd stores it) and its index |
//! | [`encoding`] | gzip and zstd as catalogd's gzhttp negotiates them |
//! | [`runs`] | a version's gzip and zstd copies, compressed run by run so that answers are cut from them |
//! | [`catalogd`] | the `/api/v1/all` and `/api/v1/metas` handlers with catalogd's semantics |
//! | [`graphql`] | `/api/v1/graphql`: catalogd's GraphQL query API over the served version |
//!
//! Connections are accepted and served by [`crate::conn`], as the gRPC port's are.
//!
//! Answers are streamed from the file on disk; a request keeps the version it started on even
//! when a reload swaps in a new one ([`HttpState::swap`]).

pub mod catalogd;
pub mod content;
pub mod encoding;
pub mod graphql;
pub mod runs;

use crate::conn;
use crate::metrics::Metrics;
use anyhow::{Context, Result};
use arc_swap::ArcSwapOption;
use axum::body::Body;
use axum::response::Response;
use content::Content;
use http::{header, HeaderValue, Request, StatusCode, Version};
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// catalogd's gzip threshold: it wraps its handler in klauspost's `gzhttp.GzipHandler` with
/// the defaults, whose `DefaultMinSize` is 1024 (not the 1400 of the older nytimes
/// gziphandler), and bodies of at least that many bytes are compressed. Tested at the boundary
/// in `tests/gzip_threshold.rs`.
pub const GZIP_MIN_SIZE: u16 = 1024;

/// What the HTTP handlers share.
pub struct HttpState {
    /// The catalog name in `/catalogs/NAME/...`.
    pub name: String,
    content: ArcSwapOption<Content>,
    pub metrics: Arc<Metrics>,
    /// The GraphQL endpoint (on unless turned off) and the served version's schema.
    pub graphql: graphql::Graphql,
}

impl HttpState {
    pub fn new(name: &str, metrics: Arc<Metrics>) -> HttpState {
        HttpState {
            name: name.to_string(),
            content: ArcSwapOption::empty(),
            metrics,
            graphql: Default::default(),
        }
    }
    /// The version new requests see.
    pub fn content(&self) -> Option<Arc<Content>> {
        self.content.load_full()
    }
    /// Makes `c` the version new requests see; requests in flight keep theirs.
    pub fn swap(&self, c: Content) {
        self.content.store(Some(Arc::new(c)));
    }
}

/// A `text/plain` answer as Go's `http.Error` writes it.
pub(crate) fn plain(code: StatusCode, msg: &str) -> Response {
    let mut r = Response::new(Body::from(format!("{msg}\n")));
    *r.status_mut() = code;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// The route label of a path (for metrics and logs): never the raw path, so a client cannot
/// make up label values.
pub fn route_of(path: &str) -> &'static str {
    if graphql::catalog_segment(path).is_some() {
        return graphql::ROUTE;
    }
    match split_catalog_path(path) {
        Some((_, catalogd::Endpoint::All)) => "/catalogs/{catalog}/api/v1/all",
        Some((_, catalogd::Endpoint::Metas)) => "/catalogs/{catalog}/api/v1/metas",
        None => match path {
            "/healthz" => "/healthz",
            "/readyz" => "/readyz",
            "/metrics" => "/metrics",
            _ => "other",
        },
    }
}

/// `/catalogs/{catalog}/api/v1/{all|metas}` → (raw catalog segment, endpoint).
fn split_catalog_path(path: &str) -> Option<(&str, catalogd::Endpoint)> {
    let rest = path.strip_prefix("/catalogs/")?;
    let (catalog, tail) = rest.split_once('/')?;
    if catalog.is_empty() {
        return None;
    }
    let ep = match tail {
        "api/v1/all" => catalogd::Endpoint::All,
        "api/v1/metas" => catalogd::Endpoint::Metas,
        _ => return None,
    };
    Some((catalog, ep))
}

/// Percent-decodes one path segment (bytes that do not decode are kept as they are).
fn decode_segment(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every answer varies with `Accept-Encoding`, as gzhttp marks them all.
async fn route(state: Arc<HttpState>, req: Request<Body>) -> Response {
    let mut r = answer(state, req).await;
    r.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    r
}

async fn answer(state: Arc<HttpState>, req: Request<Body>) -> Response {
    let path = req.uri().path().to_string();
    match path.as_str() {
        "/healthz" => return plain(StatusCode::OK, "ok"),
        "/readyz" => {
            return if state.content().is_some() {
                plain(StatusCode::OK, "ok")
            } else {
                plain(StatusCode::SERVICE_UNAVAILABLE, "catalog is still loading")
            }
        }
        "/metrics" => return state.metrics.render(),
        _ => {}
    }
    if let Some(raw) = graphql::catalog_segment(&path).filter(|_| state.graphql.enabled()) {
        let catalog = decode_segment(raw);
        return graphql::handler::handle(state.clone(), &catalog, req).await;
    }
    match split_catalog_path(&path) {
        Some((raw, ep)) => {
            let catalog = decode_segment(raw);
            // A plain-TCP connection's sink, for an HTTP/1 answer only (conn::sendfile).
            let sink = match req.version() {
                Version::HTTP_09 | Version::HTTP_10 | Version::HTTP_11 => {
                    req.extensions().get::<conn::Sink>().cloned()
                }
                _ => None,
            };
            let ask = catalogd::Ask {
                method: req.method(),
                query: req.uri().query(),
                headers: req.headers(),
                sink,
            };
            catalogd::handle(state.clone(), ep, &catalog, ask).await
        }
        None => plain(StatusCode::NOT_FOUND, "404 page not found"),
    }
}

/// The whole HTTP service: routes, metrics and per-request logs (the catalog answers choose
/// their coding themselves, [`encoding`]).
pub fn router(state: Arc<HttpState>) -> axum::Router {
    let metrics = state.metrics.clone();
    axum::Router::new()
        .fallback(move |req: Request<Body>| route(state.clone(), req))
        .layer(crate::metrics::layer::MetricsLayer::http(metrics, route_of))
}

/// Serves `router` on `listener` until `stop` resolves; requests in flight then finish.
pub async fn serve(
    listener: TcpListener,
    state: Arc<HttpState>,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: conn::Limits,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let local = listener.local_addr()?;
    tracing::info!(address = %local, catalog = %state.name, tls = tls.is_some(), "HTTP listening (catalogd API, /metrics)");
    let listen = conn::Listen {
        http2_only: false,
        tls,
        goaway: None,
        limits,
    };
    conn::serve(listener, router(state), listen, stop)
        .await
        .context("HTTP server failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_segments() {
        assert_eq!(
            split_catalog_path("/catalogs/x/api/v1/all").map(|(c, _)| c),
            Some("x")
        );
        assert!(split_catalog_path("/catalogs//api/v1/all").is_none());
        assert!(split_catalog_path("/catalogs/x/api/v1").is_none());
        assert!(split_catalog_path("/catalogs/x/api/v1/all/").is_none());
        assert_eq!(route_of("/nope"), "other");
        assert_eq!(decode_segment("a%2Eb"), "a.b");
        assert_eq!(decode_segment("a%zz%"), "a%zz%");
        assert_eq!(decode_segment("%ff"), "\u{fffd}");
    }
}
