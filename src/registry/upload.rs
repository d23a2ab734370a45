//! Writing to a registry over the distribution API, for [`crate::image::copy`]: is a blob there
//! (HEAD), mount it from another repository of the same registry, upload it streamed (one PUT,
//! or PATCHes of `chunk_size` bytes then a PUT), put a manifest. A request answered 429 or
//! 5xx, or cut off, is tried again in the client's one retry loop ([`retry::run`]: its
//! doubling backoff, or the registry's `Retry-After`, capped); an upload starts over from a
//! new session, reading its blob again from the source.

use super::retry::{self, Retries};
use super::{Registry, Response, SendError};
use anyhow::anyhow;
use std::io::Read;

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

/// An answer that is not the one expected, as a failure naming `what`: tried again when it
/// is a 429 or 5xx.
fn refused(reg: &Registry, what: &str, resp: Response) -> SendError {
    let status = resp.status().as_u16();
    let after = retry::retry_after(&resp);
    SendError::status(reg.status_error(what, resp), status, after)
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
    let blob = Blob {
        digest,
        size,
        mount_from,
    };
    retry::run(&s.retries, digest, || upload_once(reg, blob, s, open)).map_err(|e| e.error)
}

/// The blob one upload sends, and where it may be mounted from.
#[derive(Clone, Copy)]
struct Blob<'a> {
    digest: &'a str,
    size: u64,
    mount_from: Option<&'a str>,
}

fn upload_once(
    reg: &mut Registry,
    blob: Blob<'_>,
    s: &Sending,
    open: &mut dyn FnMut() -> anyhow::Result<Box<dyn Read + Send>>,
) -> Result<Sent, SendError> {
    let Blob {
        digest,
        size,
        mount_from,
    } = blob;
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

    fn check(&self) -> Result<(), SendError> {
        if self.short {
            return Err(SendError::fatal(anyhow!(
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

fn location(reg: &Registry, resp: &Response) -> Result<String, SendError> {
    location_of(reg, resp).ok_or_else(|| {
        SendError::fatal(anyhow!("the registry started an upload without a Location"))
    })
}

/// Puts a manifest's bytes under `reference` (a tag or its digest).
pub fn put_manifest(
    reg: &mut Registry,
    media_type: &str,
    bytes: &[u8],
    reference: &str,
    s: &Sending,
) -> anyhow::Result<()> {
    let url = reg.url(&format!("manifests/{reference}"));
    retry::run(&s.retries, &url, || {
        let resp = reg.send("PUT", &url, Some(media_type), bytes)?;
        match resp.status().as_u16() {
            200..=204 => Ok(()),
            _ => Err(refused(reg, &format!("manifest {reference}"), resp)),
        }
    })
    .map_err(|e| e.error)
}
