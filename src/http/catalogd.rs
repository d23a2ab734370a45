//! catalogd's catalog API, with catalogd's status codes and quirks:
//!
//! * `GET|HEAD /catalogs/NAME/api/v1/all`: the JSONL file, served as Go's `http.ServeContent`
//!   serves it (Last-Modified, If-Modified-Since → 304, If-Unmodified-Since → 412, one Range),
//!   compressed as gzhttp compresses it ([`super::encoding`]);
//! * `GET|HEAD /catalogs/NAME/api/v1/metas?schema=&package=&name=`: exact-match filters, ANDed,
//!   in file order; any other parameter → 400; `package=X` does not match X's own `olm.package`
//!   (it has no `package` field); nothing matching → an empty 200;
//! * a NAME that is not a DNS-1123 subdomain → 400 with Kubernetes' messages; another catalog →
//!   404; another method → 405.

use super::content::Content;
use super::encoding::{self, Coding};
use super::runs::{Piece, Section};
use super::{plain, HttpState};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use std::sync::Arc;
use std::time::SystemTime;

/// The two endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    All,
    Metas,
}

pub use crate::names::dns1123_subdomain_errors;

/// A request to the catalog API, as the handlers need it.
pub struct Ask<'a> {
    pub method: &'a Method,
    pub query: Option<&'a str>,
    pub headers: &'a HeaderMap,
    /// The connection's sendfile sink: on plain TCP, over HTTP/1 ([`crate::conn::sendfile`]).
    pub sink: Option<crate::conn::Sink>,
}

pub async fn handle(
    state: Arc<HttpState>,
    endpoint: Endpoint,
    catalog: &str,
    ask: Ask<'_>,
) -> Response {
    let Ask {
        method,
        query,
        headers,
        sink,
    } = ask;
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
        Endpoint::All => serve_all(content, method, headers, sink).await,
        Endpoint::Metas => serve_metas(content, method, headers, filters, sink).await,
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

/// `/api/v1/all` as Go's `http.ServeContent` serves it behind gzhttp: preconditions (a 304
/// keeps `Last-Modified`), one byte range of the file as it is (a range is never compressed),
/// and otherwise the whole version in the negotiated coding, from its precompressed copy.
async fn serve_all(
    content: Arc<Content>,
    method: &Method,
    headers: &HeaderMap,
    sink: Option<crate::conn::Sink>,
) -> Response {
    if let Some(early) = early_answer(&content, headers) {
        return early;
    }
    let mut status = StatusCode::OK;
    let mut coding = Coding::Identity;
    let mut section = Section {
        offset: 0,
        len: content.size,
    };
    let mut content_range = None;
    match requested_range(headers, content.modified, content.size) {
        RangeAsk::Whole => coding = encoding::negotiate(headers, content.size),
        RangeAsk::One(s) => {
            status = StatusCode::PARTIAL_CONTENT;
            content_range = Some(format!(
                "bytes {}-{}/{}",
                s.offset,
                s.offset + s.len - 1,
                content.size
            ));
            section = s;
        }
        RangeAsk::Unsatisfiable => {
            let mut r = plain(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "invalid range: failed to overlap",
            );
            r.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{}", content.size))
                    .expect("a number is a valid header"),
            );
            return r;
        }
    }
    let (path, size) = content.file(coding);
    if coding != Coding::Identity {
        section = Section {
            offset: 0,
            len: size,
        };
    }
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        file_body(&content, path, section, sink)
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::LAST_MODIFIED, last_modified(&content));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/jsonl"),
    );
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some(enc) = coding.header() {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(enc));
    }
    if let Some(cr) = content_range {
        h.insert(
            header::CONTENT_RANGE,
            HeaderValue::from_str(&cr).expect("a range is a valid header"),
        );
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(section.len));
    r
}

/// A byte range asked for with `Range` (and honoured under `If-Range`).
enum RangeAsk {
    Whole,
    One(Section),
    Unsatisfiable,
}

/// Go's `parseRange` for one range (`a-b`, `a-`, `-n`); a header that does not parse, several
/// ranges, or an `If-Range` that does not name the modification time serve the whole file.
fn requested_range(h: &HeaderMap, modified: SystemTime, size: u64) -> RangeAsk {
    let Some(spec) = h.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return RangeAsk::Whole;
    };
    if let Some(ir) = h.get(header::IF_RANGE).and_then(|v| v.to_str().ok()) {
        match httpdate::parse_http_date(ir.trim()) {
            Ok(t) if t == modified => {}
            _ => return RangeAsk::Whole,
        }
    }
    let Some(spec) = spec.trim().strip_prefix("bytes=") else {
        return RangeAsk::Whole;
    };
    if spec.contains(',') {
        return RangeAsk::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeAsk::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let (start, end) = if a.is_empty() {
        let Ok(n) = b.parse::<u64>() else {
            return RangeAsk::Whole;
        };
        if n == 0 {
            return RangeAsk::Unsatisfiable;
        }
        (size.saturating_sub(n), size)
    } else {
        let Ok(start) = a.parse::<u64>() else {
            return RangeAsk::Whole;
        };
        if start >= size {
            return RangeAsk::Unsatisfiable;
        }
        let end = if b.is_empty() {
            size
        } else {
            match b.parse::<u64>() {
                Ok(e) if e >= start => (e + 1).min(size),
                _ => return RangeAsk::Whole,
            }
        };
        (start, end)
    };
    if start >= end {
        return RangeAsk::Unsatisfiable;
    }
    RangeAsk::One(Section {
        offset: start,
        len: end - start,
    })
}

fn last_modified(content: &Content) -> HeaderValue {
    HeaderValue::from_str(&httpdate::fmt_http_date(content.modified))
        .expect("an HTTP date is a valid header")
}

/// The answer to a request whose preconditions end it (304, 412, or Go's 500 for a bad
/// `If-Modified-Since`), with `Last-Modified` as Go writes it.
fn early_answer(content: &Content, headers: &HeaderMap) -> Option<Response> {
    let early = preconditions(headers, content.modified)?;
    let mut r = if early == StatusCode::INTERNAL_SERVER_ERROR {
        status_text(early)
    } else {
        empty(early)
    };
    r.headers_mut()
        .insert(header::LAST_MODIFIED, last_modified(content));
    Some(r)
}

async fn serve_metas(
    content: Arc<Content>,
    method: &Method,
    headers: &HeaderMap,
    (schema, package, name): (String, String, String),
    sink: Option<crate::conn::Sink>,
) -> Response {
    if let Some(early) = early_answer(&content, headers) {
        return early;
    }
    let mut r = if method == Method::HEAD {
        // catalogd writes no body to a HEAD and so claims no length.
        Response::new(Body::from_stream(tokio_stream::empty::<
            std::io::Result<Bytes>,
        >()))
    } else if schema.is_empty() && package.is_empty() && name.is_empty() {
        // The whole version: its file, or its compressed copy.
        let coding = encoding::negotiate(headers, content.size);
        let (path, size) = content.file(coding);
        let whole = Section {
            offset: 0,
            len: size,
        };
        let mut r = Response::new(file_body(&content, path, whole, sink));
        coded(&mut r, coding, size);
        r
    } else {
        let lines = content.index.get(&schema, &package, &name);
        let total: u64 = content.sections_len(&lines);
        let coding = encoding::negotiate(headers, total);
        // Cut from the compressed copy; only lines of runs not wanted whole are compressed
        // (on a blocking thread, as they are read).
        let answer = if coding == Coding::Identity {
            content.answer(&lines, coding)
        } else {
            let c = content.clone();
            tokio::task::spawn_blocking(move || c.answer(&lines, coding))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e)))
        };
        let (path, pieces, len) = match answer {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(error = %e, "cannot read {}", content.path.display());
                return status_text(StatusCode::INTERNAL_SERVER_ERROR);
            }
        };
        let mut r = Response::new(Body::from_stream(read_pieces(
            content.clone(),
            path,
            pieces,
        )));
        coded(&mut r, coding, len);
        r
    };
    let h = r.headers_mut();
    h.insert(header::LAST_MODIFIED, last_modified(&content));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/jsonl"),
    );
    r
}

/// Sets `Content-Encoding` (when coded) and the exact `Content-Length`.
fn coded(r: &mut Response, coding: Coding, len: u64) {
    let h = r.headers_mut();
    if let Some(enc) = coding.header() {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(enc));
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
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

/// `section` of `path` (a file of `content`) as a body: sent from the page cache by the
/// connection's socket when it has a sendfile sink, else read and streamed.
fn file_body(
    content: &Arc<Content>,
    path: std::path::PathBuf,
    section: Section,
    sink: Option<crate::conn::Sink>,
) -> Body {
    if let Some(sink) = sink {
        // Opened here, so the version's removal cannot take it away before it is sent.
        match std::fs::File::open(&path) {
            Ok(f) => return Body::new(sink.body(Arc::new(f), section.offset, section.len)),
            Err(e) => tracing::warn!(error = %e, "cannot open {}; streaming it", path.display()),
        }
    }
    Body::from_stream(read_pieces(
        content.clone(),
        path,
        vec![Piece::File(section)],
    ))
}

/// Streams the pieces in order, those of `path` in 64 KiB chunks (adjacent ones read as
/// one). `content` is held until the last chunk is read, so a swap cannot remove `path` before.
fn read_pieces(
    content: Arc<Content>,
    path: std::path::PathBuf,
    pieces: Vec<Piece>,
) -> tokio_stream::wrappers::ReceiverStream<std::io::Result<Bytes>> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt;
        let _version = content;
        let mut file = None;
        // Merge adjacent sections of the file into runs.
        let mut merged: Vec<Piece> = Vec::with_capacity(pieces.len());
        for p in pieces {
            match (merged.last_mut(), p) {
                (Some(Piece::File(last)), Piece::File(s)) if last.offset + last.len == s.offset => {
                    last.len += s.len
                }
                (_, p) => merged.push(p),
            }
        }
        const CHUNK: u64 = 64 * 1024;
        for piece in merged {
            let run = match piece {
                Piece::Bytes(b) => {
                    if tx.blocking_send(Ok(b)).is_err() {
                        return;
                    }
                    continue;
                }
                Piece::File(s) => s,
            };
            let f = match &file {
                Some(f) => f,
                None => match std::fs::File::open(&path) {
                    Ok(f) => file.insert(f),
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                },
            };
            let mut at = run.offset;
            let end = run.offset + run.len;
            while at < end {
                let n = (end - at).min(CHUNK) as usize;
                let mut buf = vec![0u8; n];
                let r = f.read_exact_at(&mut buf, at).map(|_| Bytes::from(buf));
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
