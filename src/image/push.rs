//! Pushing an image read from an OCI layout to a registry over the distribution API.
//!
//! Each blob is asked for first (HEAD) and sent only when missing: mounted from another
//! repository of the same registry when the caller names one (the base image's), else
//! uploaded in one request or, when large, in chunks. A request answered 429 or 5xx, or cut
//! off, is tried again after a backoff (the registry's `Retry-After` when it sends one).
//! Manifests go last, an index's platform manifests before the index, so a tag never points at
//! content the registry lacks: a push that fails half-way leaves unreferenced blobs at most.

use super::layout::{Image, Top};
use super::reference::Reference;
use super::registry::{Connection, Registry, SendError};
use anyhow::anyhow;
use std::io::Read;
use std::time::Duration;

type Response = ureq::http::Response<ureq::Body>;

/// How to push.
#[derive(Clone, Debug)]
pub struct PushOptions {
    pub connection: Connection,
    /// A repository of the target's registry that may hold some of the blobs (the base
    /// image's): they are mounted from it instead of uploaded.
    pub mount_from: Option<String>,
    /// Blobs larger than this go in chunks of this size.
    pub chunk_size: u64,
    /// Attempts per request on 429, 5xx or a dropped connection.
    pub attempts: u32,
    /// The first backoff; each retry doubles it, up to 10 s.
    pub backoff: Duration,
    /// Draw a bar of the bytes done on stderr (when it is a terminal).
    pub progress: bool,
}

impl PushOptions {
    pub fn new(connection: Connection) -> PushOptions {
        PushOptions {
            connection,
            mount_from: None,
            chunk_size: 16 << 20,
            attempts: 4,
            backoff: Duration::from_millis(250),
            progress: false,
        }
    }
}

/// What a push did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub digest: String,
    /// Blobs sent, and their bytes.
    pub uploaded: usize,
    pub uploaded_bytes: u64,
    /// Blobs mounted from [`PushOptions::mount_from`].
    pub mounted: usize,
    /// Blobs the repository had already.
    pub skipped: usize,
}

/// Pushes `img` to `to` (its tag, `latest` when it has none). The error is one line naming
/// the reference.
pub fn push(img: &Image, to: &Reference, opts: &PushOptions) -> anyhow::Result<Pushed> {
    push_inner(img, to, opts).map_err(|e| {
        anyhow!(
            "{}",
            format!("push to {}: {e:#}", to.given).replace('\n', "; ")
        )
    })
}

fn push_inner(img: &Image, to: &Reference, opts: &PushOptions) -> anyhow::Result<Pushed> {
    let mut reg = Registry::new(to, &opts.connection)?.for_push();
    let mut out = Pushed {
        digest: img.top.digest.clone(),
        ..Default::default()
    };
    let mount_from = opts
        .mount_from
        .as_deref()
        .filter(|from| *from != to.repository);
    let bar = opts.progress.then(|| {
        let total = img.blobs.iter().map(|b| b.1).sum();
        let pb = indicatif::ProgressBar::new(total);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "pushing {bar:30} {bytes}/{total_bytes} [{elapsed}]",
            )
            .expect("static template"),
        );
        pb
    });
    for (digest, size) in &img.blobs {
        // A HEAD is tried again by the registry client itself.
        if exists(&mut reg, digest).map_err(|e| e.error)? {
            out.skipped += 1;
        } else {
            match retry(opts, || {
                upload(&mut reg, img, digest, *size, mount_from, opts)
            })? {
                Sent::Mounted => out.mounted += 1,
                Sent::Uploaded => {
                    out.uploaded += 1;
                    out.uploaded_bytes += size;
                }
            }
        }
        if let Some(pb) = &bar {
            pb.inc(*size);
        }
    }
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    for m in &img.manifests {
        put_manifest(&mut reg, img, m, &m.digest, opts)?;
    }
    let tag = to.tag.clone().unwrap_or_else(|| "latest".into());
    put_manifest(&mut reg, img, &img.top, &tag, opts)?;
    Ok(out)
}

/// Why a request failed, as [`retry`] needs it.
struct Failure {
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

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure {
            error: e.into(),
            transient: false,
            retry_after: None,
        }
    }
}

/// An answer that is not the one expected, as a failure naming `what`.
fn refused(reg: &Registry, what: &str, resp: Response) -> Failure {
    let status = resp.status().as_u16();
    let retry_after = super::retry::retry_after(&resp).map(|s| Duration::from_secs(s.min(60)));
    Failure {
        error: reg.status_error(what, resp),
        transient: status == 429 || status >= 500,
        retry_after,
    }
}

/// Runs `f` until it succeeds, fails for good, or has been tried `opts.attempts` times.
fn retry<T>(opts: &PushOptions, mut f: impl FnMut() -> Result<T, Failure>) -> anyhow::Result<T> {
    let mut delay = opts.backoff;
    let mut attempt = 1;
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if e.transient && attempt < opts.attempts => {
                let wait = e.retry_after.unwrap_or(delay);
                tracing::warn!(error = %format!("{:#}", e.error), wait_ms = wait.as_millis() as u64, attempt, "retrying");
                std::thread::sleep(wait);
                delay = (delay * 2).min(Duration::from_secs(10));
                attempt += 1;
            }
            Err(e) => return Err(e.error),
        }
    }
}

fn exists(reg: &mut Registry, digest: &str) -> Result<bool, Failure> {
    let url = reg.url(&format!("blobs/{digest}"));
    let resp = reg.send("HEAD", &url, None, &[])?;
    match resp.status().as_u16() {
        200 => Ok(true),
        404 => Ok(false),
        _ => Err(refused(reg, &format!("blob {digest}"), resp)),
    }
}

enum Sent {
    Mounted,
    Uploaded,
}

/// Mounts the blob from `mount_from` when the registry can, else uploads it.
fn upload(
    reg: &mut Registry,
    img: &Image,
    digest: &str,
    size: u64,
    mount_from: Option<&str>,
    opts: &PushOptions,
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
    let path = img.dir.join("blobs/sha256").join(&digest[7..]);
    let mut file = std::fs::File::open(&path)?;
    let mut body = Vec::with_capacity(size.min(opts.chunk_size) as usize);
    if size > opts.chunk_size {
        let mut sent = 0u64;
        while sent < size {
            body.clear();
            (&mut file).take(opts.chunk_size).read_to_end(&mut body)?;
            if body.is_empty() {
                return Err(Failure::from(std::io::Error::other(format!(
                    "{}: shorter than its descriptor's {size} bytes",
                    path.display()
                ))));
            }
            let range = format!("{sent}-{}", sent + body.len() as u64 - 1);
            let resp = reg.send_with(
                "PATCH",
                &location,
                Some("application/octet-stream"),
                &[("Content-Range", range.as_str())],
                &body,
            )?;
            if resp.status().as_u16() != 202 {
                return Err(refused(reg, &what, resp));
            }
            location = location_of(reg, &resp).unwrap_or(location);
            sent += body.len() as u64;
        }
        body.clear();
    } else {
        file.read_to_end(&mut body)?;
    }
    let resp = reg.send(
        "PUT",
        &with_digest(&location, digest),
        Some("application/octet-stream"),
        &body,
    )?;
    match resp.status().as_u16() {
        201 | 204 => Ok(Sent::Uploaded),
        _ => Err(refused(reg, &what, resp)),
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
    location_of(reg, resp).ok_or_else(|| Failure {
        error: anyhow!("the registry started an upload without a Location"),
        transient: false,
        retry_after: None,
    })
}

fn put_manifest(
    reg: &mut Registry,
    img: &Image,
    m: &Top,
    reference: &str,
    opts: &PushOptions,
) -> anyhow::Result<()> {
    let body = std::fs::read(img.dir.join("blobs/sha256").join(&m.digest[7..]))?;
    retry(opts, || {
        let url = reg.url(&format!("manifests/{reference}"));
        let resp = reg.send("PUT", &url, Some(&m.media_type), &body)?;
        match resp.status().as_u16() {
            200..=204 => Ok(()),
            _ => Err(refused(reg, &format!("manifest {reference}"), resp)),
        }
    })
}
