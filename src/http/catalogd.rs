//! catalogd's catalog API, with catalogd's status codes and quirks:
//!
//! * `GET|HEAD /catalogs/NAME/api/v1/all`: the JSONL file, served as Go's `http.ServeContent`
//!   serves it (Last-Modified, If-Modified-Since → 304, If-Unmodified-Since → 412, Range);
//! * `GET|HEAD /catalogs/NAME/api/v1/metas?schema=&package=&name=`: exact-match filters, ANDed,
//!   in file order; any other parameter → 400; `package=X` does not match X's own `olm.package`
//!   (it has no `package` field); nothing matching → an empty 200;
//! * a NAME that is not a DNS-1123 subdomain → 400 with Kubernetes' messages; another catalog →
//!   404; another method → 405.

use super::content::{Content, Section};
use super::{plain, HttpState};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use std::sync::Arc;
use std::time::SystemTime;
use tower::ServiceExt;

/// The two endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    All,
    Metas,
}

pub use crate::names::dns1123_subdomain_errors;

pub async fn handle(
    state: Arc<HttpState>,
    endpoint: Endpoint,
    catalog: &str,
    method: &Method,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    }
    let errs = dns1123_subdomain_errors(catalog);
    if !errs.is_empty() {
        return plain(
            StatusCode::BAD_REQUEST,
            &format!("invalid catalog name: {}", errs.join("; ")),
        );
    }
    let mut filters = (String::new(), String::new(), String::new());
    if endpoint == Endpoint::Metas {
        // Go's URL.Query: pairs that do not decode are dropped; the first value wins.
        let (mut s, mut p, mut n) = (None, None, None);
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let slot = match k.as_ref() {
                "schema" => &mut s,
                "package" => &mut p,
                "name" => &mut n,
                _ => return status_text(StatusCode::BAD_REQUEST),
            };
            slot.get_or_insert(v.into_owned());
        }
        filters = (
            s.unwrap_or_default(),
            p.unwrap_or_default(),
            n.unwrap_or_default(),
        );
    }
    let content = match state.content() {
        Some(c) if catalog == state.name => c,
        _ => return status_text(StatusCode::NOT_FOUND),
    };
    match endpoint {
        Endpoint::All => serve_all(content, method, headers).await,
        Endpoint::Metas => serve_metas(content, method, headers, filters),
    }
}

/// `http.Error(w, "404 Not Found", 404)` and friends.
fn status_text(code: StatusCode) -> Response {
    plain(
        code,
        &format!(
            "{} {}",
            code.as_u16(),
            code.canonical_reason().unwrap_or("")
        ),
    )
}

async fn serve_all(content: Arc<Content>, method: &Method, headers: &HeaderMap) -> Response {
    let mut req = http::Request::builder().method(method.clone()).uri("/");
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let req = match req.body(Body::empty()) {
        Ok(r) => r,
        Err(_) => return status_text(StatusCode::BAD_REQUEST),
    };
    // The file stays open for the response even if a swap removes it meanwhile.
    let served = tower_http::services::ServeFile::new(&content.path)
        .oneshot(req)
        .await;
    match served {
        Ok(resp) => {
            let (mut parts, body) = resp.into_parts();
            if parts.status == StatusCode::NOT_FOUND {
                return status_text(StatusCode::NOT_FOUND);
            }
            if parts.status.is_success() {
                parts.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/jsonl"),
                );
            }
            Response::from_parts(parts, Body::new(body))
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot serve {}", content.path.display());
            status_text(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

fn serve_metas(
    content: Arc<Content>,
    method: &Method,
    headers: &HeaderMap,
    (schema, package, name): (String, String, String),
) -> Response {
    let last_modified = httpdate::fmt_http_date(content.modified);
    if let Some(early) = preconditions(headers, content.modified) {
        let mut r = if early == StatusCode::INTERNAL_SERVER_ERROR {
            status_text(early)
        } else {
            empty(early)
        };
        r.headers_mut().insert(
            header::LAST_MODIFIED,
            HeaderValue::from_str(&last_modified).expect("an HTTP date is a valid header"),
        );
        return r;
    }
    let sections = if schema.is_empty() && package.is_empty() && name.is_empty() {
        vec![Section {
            offset: 0,
            len: content.size,
        }]
    } else {
        content.index.get(&schema, &package, &name)
    };
    let total: u64 = sections.iter().map(|s| s.len).sum();
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from_stream(read_sections(content, sections))
    };
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::LAST_MODIFIED,
        HeaderValue::from_str(&last_modified).expect("an HTTP date is a valid header"),
    );
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/jsonl"),
    );
    // The exact length, so gzip applies above the threshold only (as gzhttp decides).
    if method != Method::HEAD {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(total));
    }
    r
}

fn empty(code: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = code;
    r
}

/// RFC 7232 section 6, as Go's `net/http` evaluates it for a resource with a modification
/// time and no ETag. `None` means: serve the body.
fn preconditions(h: &HeaderMap, modified: SystemTime) -> Option<StatusCode> {
    let get = |n: header::HeaderName| h.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    let date = |s: &str| httpdate::parse_http_date(s).ok();
    // If-Match with anything but "*" cannot match a resource without an ETag.
    let if_match = get(header::IF_MATCH).filter(|s| !s.is_empty());
    let failed = match if_match {
        Some(v) => !v.split(',').any(|t| t.trim() == "*"),
        None => match get(header::IF_UNMODIFIED_SINCE).and_then(date) {
            Some(t) => modified > t,
            None => false,
        },
    };
    if failed {
        return Some(StatusCode::PRECONDITION_FAILED);
    }
    match get(header::IF_NONE_MATCH).filter(|s| !s.is_empty()) {
        Some(v) if v.split(',').any(|t| t.trim() == "*") => Some(StatusCode::NOT_MODIFIED),
        Some(_) => None,
        None => match get(header::IF_MODIFIED_SINCE) {
            None | Some("") => None,
            // Go answers an unparseable If-Modified-Since with a 500.
            Some(v) => match date(v) {
                None => Some(StatusCode::INTERNAL_SERVER_ERROR),
                Some(t) if modified <= t => Some(StatusCode::NOT_MODIFIED),
                Some(_) => None,
            },
        },
    }
}

/// Streams the sections from the file in 64 KiB chunks (adjacent sections are read as one).
fn read_sections(
    content: Arc<Content>,
    sections: Vec<Section>,
) -> tokio_stream::wrappers::ReceiverStream<std::io::Result<Bytes>> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt;
        let file = match std::fs::File::open(&content.path) {
            Ok(f) => f,
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        // Merge adjacent sections into runs.
        let mut runs: Vec<Section> = Vec::new();
        for s in sections {
            match runs.last_mut() {
                Some(last) if last.offset + last.len == s.offset => last.len += s.len,
                _ => runs.push(s),
            }
        }
        const CHUNK: u64 = 64 * 1024;
        for run in runs {
            let mut at = run.offset;
            let end = run.offset + run.len;
            while at < end {
                let n = (end - at).min(CHUNK) as usize;
                let mut buf = vec![0u8; n];
                let r = file.read_exact_at(&mut buf, at).map(|_| Bytes::from(buf));
                let stop = r.is_err();
                if tx.blocking_send(r).is_err() || stop {
                    return;
                }
                at += n as u64;
            }
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn subdomain_rules() {
        assert!(dns1123_subdomain_errors("catalog").is_empty());
        assert!(dns1123_subdomain_errors("my.catalog-1").is_empty());
        assert_eq!(dns1123_subdomain_errors("Bad").len(), 1);
        assert_eq!(dns1123_subdomain_errors("a..b").len(), 1);
        assert_eq!(dns1123_subdomain_errors(&"a".repeat(254)).len(), 1);
        assert_eq!(dns1123_subdomain_errors(&"-".repeat(254)).len(), 2);
    }

    #[test]
    fn preconditions_follow_go() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let d = |t: SystemTime| HeaderValue::from_str(&httpdate::fmt_http_date(t)).unwrap();
        let with = |k: header::HeaderName, v: HeaderValue| {
            let mut h = HeaderMap::new();
            h.insert(k, v);
            h
        };
        assert_eq!(preconditions(&HeaderMap::new(), t), None);
        assert_eq!(
            preconditions(&with(header::IF_MODIFIED_SINCE, d(t)), t),
            Some(StatusCode::NOT_MODIFIED)
        );
        let earlier = t - Duration::from_secs(1);
        assert_eq!(
            preconditions(&with(header::IF_MODIFIED_SINCE, d(earlier)), t),
            None
        );
        assert_eq!(
            preconditions(&with(header::IF_UNMODIFIED_SINCE, d(earlier)), t),
            Some(StatusCode::PRECONDITION_FAILED)
        );
        assert_eq!(
            preconditions(
                &with(header::IF_MATCH, HeaderValue::from_static("\"x\"")),
                t
            ),
            Some(StatusCode::PRECONDITION_FAILED)
        );
        assert_eq!(
            preconditions(
                &with(header::IF_NONE_MATCH, HeaderValue::from_static("*")),
                t
            ),
            Some(StatusCode::NOT_MODIFIED)
        );
        assert_eq!(
            preconditions(
                &with(
                    header::IF_MODIFIED_SINCE,
                    HeaderValue::from_static("yesterday")
                ),
                t
            ),
            Some(StatusCode::INTERNAL_SERVER_ERROR)
        );
    }
}
