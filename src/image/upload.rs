//! Writing to a registry over the distribution API, for [`super::copy`]: is a blob there
//! (HEAD), mount it from another repository of the same registry, upload it streamed (one PUT,
//! or PATCHes of `chunk_size` bytes then a PUT), put a manifest. A request answered 429 or
//! 5xx, or cut off, is tried again under the registry client's one policy
//! ([`super::retry::Retries`]: its doubling backoff, or the registry's `Retry-After`, capped);
//! an upload starts over from a new session, reading its blob again from the source.

use super::registry::{Registry, SendError};
use super::retry::Retries;
use anyhow::anyhow;
use std::io::Read;
use std::time::Duration;

type Response = ureq::http::Response<ureq::Body>;

/// How uploads are sent and tried again.
#[derive(Clone, Copy, Debug)]
pub struct Sending {
    /// Blobs larger than this go in chunks of this size.
    pub chunk_size: u64,
    /// When a request is tried again, and after how long: the connection's policy.
    pub retries: Retries,
}

/// How a blob reached the destination (a progress event's too).
pub use crate::progress::Sent;

/// Why a request failed, as [`retry`] needs it.
pub struct Failure {
    error: anyhow::Error,
    /// Worth trying again: 429, 5xx, or no answer that may come next time.
    transient: bool,
    /// The registry's `Retry-After`, in seconds.
    retry_after: Option<Duration>,
}

impl From<SendError> for Failure {
    fn from(e: SendError) -> Failure {
        Failure {
            error: e.error,
            transient: e.transient,
            retry_after: None,
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure {
            error,
            transient: false,
            retry_after: None,
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::from(anyhow::Error::from(e))
    }
}

/// An answer that is not the one expected, as a failure naming `what`.
fn refused(reg: &Registry, what: &str, resp: Response) -> Failure {
    let status = resp.status().as_u16();
    let retry_after = super::retry::retry_after(&resp).map(Duration::from_secs);
    Failure {
        error: reg.status_error(what, resp),
        transient: status == 429 || status >= 500,
        retry_after,
    }
}

/// Runs `f` until it succeeds, fails for good, or has been tried `s.retries.attempts` times,
/// waiting as [`Retries`] says between attempts.
pub fn retry<T>(s: &Sending, mut f: impl FnMut() -> Result<T, Failure>) -> anyhow::Result<T> {
    let r = &s.retries;
    let mut attempt = 1;
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if e.transient && attempt < r.attempts => {
                let wait = match e.retry_after {
                    Some(asked) => asked.min(r.max_retry_after),
                    None => r.backoff(attempt),
                };
                tracing::warn!(error = %format!("{:#}", e.error), wait_ms = wait.as_millis() as u64, attempt, "retrying");
                std::thread::sleep(wait);
                attempt += 1;
            }
            Err(e) => return Err(e.error),
        }
    }
}

/// True when the repository holds the blob (a HEAD, which the client tries again itself).
pub fn exists(reg: &mut Registry, digest: &str) -> anyhow::Result<bool> {
    let url = reg.url(&format!("blobs/{digest}"));
    let resp = reg.send("HEAD", &url, None, &[]).map_err(|e| e.error)?;
    match resp.status().as_u16() {
        200 => Ok(true),
        404 => Ok(false),
        _ => Err(refused(reg, &format!("blob {digest}"), resp).error),
    }
}

/// Mounts the blob from `mount_from` when the registry can, else uploads the bytes `open`
/// gives (opened again on each attempt), streamed.
pub fn upload(
    reg: &mut Registry,
    digest: &str,
    size: u64,
    mount_from: Option<&str>,
    s: &Sending,
    open: &mut dyn FnMut() -> anyhow::Result<Box<dyn Read + Send>>,
) -> anyhow::Result<Sent> {
    retry(s, || upload_once(reg, digest, size, mount_from, s, open))
}

fn upload_once(
    reg: &mut Registry,
    digest: &str,
    size: u64,
    mount_from: Option<&str>,
    s: &Sending,
    open: &mut dyn FnMut() -> anyhow::Result<Box<dyn Read + Send>>,
) -> Result<Sent, Failure> {
    let what = format!("blob {digest}");
    let start = match mount_from {
        Some(from) => reg.url(&format!(
            "blobs/uploads/?mount={}&from={}",
            digest.replace(':', "%3A"),
            from
        )),
        None => reg.url("blobs/uploads/"),
    };
    let resp = reg.send("POST", &start, None, &[])?;
    match resp.status().as_u16() {
        // Mounted: the registry had the blob in `from`.
        201 if mount_from.is_some() => return Ok(Sent::Mounted),
        // An upload session (also what a registry answers when it cannot mount).
        202 => {}
        _ => return Err(refused(reg, &what, resp)),
    }
    let mut location = location(reg, &resp)?;
    let mut body = open()?;
    let resp = if size > s.chunk_size {
        let mut sent = 0u64;
        while sent < size {
            let n = s.chunk_size.min(size - sent);
            let range = format!("{sent}-{}", sent + n - 1);
            let mut chunk = Exact::new(&mut body, n);
            let resp = reg.send_reader(
                "PATCH",
                &location,
                &[("Content-Range", range.as_str())],
                &mut chunk,
                n,
            );
            chunk.check()?;
            let resp = resp?;
            if resp.status().as_u16() != 202 {
                return Err(refused(reg, &what, resp));
            }
            location = location_of(reg, &resp).unwrap_or(location);
            sent += n;
        }
        reg.send_reader(
            "PUT",
            &with_digest(&location, digest),
            &[],
            &mut [].as_slice(),
            0,
        )
    } else {
        let mut all = Exact::new(&mut body, size);
        let resp = reg.send_reader("PUT", &with_digest(&location, digest), &[], &mut all, size);
        all.check()?;
        resp
    }?;
    match resp.status().as_u16() {
        201 | 204 => Ok(Sent::Uploaded),
        _ => Err(refused(reg, &what, resp)),
    }
}

/// Exactly `n` bytes of a reader: one that ends sooner is noted, and [`Exact::check`] says so.
struct Exact<'a> {
    inner: &'a mut dyn Read,
    left: u64,
    short: bool,
}

impl<'a> Exact<'a> {
    fn new(inner: &'a mut dyn Read, n: u64) -> Exact<'a> {
        Exact {
            inner,
            left: n,
            short: false,
        }
    }

    fn check(&self) -> Result<(), Failure> {
        if self.short {
            return Err(Failure::from(anyhow!(
                "the blob is shorter than its descriptor's size"
            )));
        }
        Ok(())
    }
}

impl Read for Exact<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let max = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..max])?;
        if n == 0 {
            self.short = true;
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the blob is shorter than its descriptor's size",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn with_digest(location: &str, digest: &str) -> String {
    let sep = if location.contains('?') { '&' } else { '?' };
    format!("{location}{sep}digest={}", digest.replace(':', "%3A"))
}

fn location_of(reg: &Registry, resp: &Response) -> Option<String> {
    resp.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(|l| reg.absolute(l))
}

fn location(reg: &Registry, resp: &Response) -> Result<String, Failure> {
    location_of(reg, resp)
        .ok_or_else(|| Failure::from(anyhow!("the registry started an upload without a Location")))
}

/// Puts a manifest's bytes under `reference` (a tag or its digest).
pub fn put_manifest(
    reg: &mut Registry,
    media_type: &str,
    bytes: &[u8],
    reference: &str,
    s: &Sending,
) -> anyhow::Result<()> {
    retry(s, || {
        let url = reg.url(&format!("manifests/{reference}"));
        let resp = reg.send("PUT", &url, Some(media_type), bytes)?;
        match resp.status().as_u16() {
            200..=204 => Ok(()),
            _ => Err(refused(reg, &format!("manifest {reference}"), resp)),
        }
    })
}
