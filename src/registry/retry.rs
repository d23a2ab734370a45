//! When a registry request is tried again, and how long to wait: one policy for every request
//! the registry client makes ([`with_retries`]), and a blob body that breaks off part way is
//! resumed where it stopped ([`Resuming`]).
//!
//! Tried again: 429 (after `Retry-After`, capped), 5xx, and connections reset or closed early.
//! Not tried again: other 4xx, timeouts (a hung registry would cost a multiple of the timeout),
//! refused connections, unknown hosts, TLS and certificate failures, protocol mismatches.

use std::io::Read;
use std::time::Duration;

/// A request that got no answer, and whether it is worth trying again: a timeout or a
/// connection that broke may pass; a refused connection, an unknown host, a certificate that
/// does not verify or a refused token will not.
#[derive(Debug)]
pub struct SendError {
    pub error: anyhow::Error,
    pub transient: bool,
}

/// The seconds an answer's `Retry-After` asks to wait (the HTTP-date form is not used by
/// registries, and is ignored).
pub fn retry_after<B>(resp: &ureq::http::Response<B>) -> Option<u64> {
    resp.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// What a failed request's error says about trying again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The connection broke (reset, closed early, cut in the middle of an answer): may pass.
    Broken,
    /// Trying again cannot help: a timeout (a hung registry would cost a multiple of the
    /// timeout), a refused connection, an unknown host, TLS or certificate trouble, a protocol
    /// mismatch.
    Final,
}

pub fn fault(e: &ureq::Error) -> Fault {
    use std::io::ErrorKind as K;
    let text = e.to_string().to_ascii_lowercase();
    if tls_problem(&text).is_some() {
        return Fault::Final;
    }
    match e {
        ureq::Error::Io(io) => match io.kind() {
            K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::UnexpectedEof
            | K::Interrupted => Fault::Broken,
            _ => Fault::Final,
        },
        ureq::Error::Protocol(_) | ureq::Error::ConnectionFailed
            if text.contains("closed") || text.contains("eof") || text.contains("reset") =>
        {
            Fault::Broken
        }
        _ => Fault::Final,
    }
}

/// The kind of TLS trouble an error's text shows, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsProblem {
    /// A TLS client got a plain-HTTP answer.
    PlainHttp,
    /// The certificate did not verify.
    Certificate,
    /// Anything else in the handshake.
    Handshake,
}

pub fn tls_problem(lower: &str) -> Option<TlsProblem> {
    if lower.contains("invalidcontenttype") || lower.contains("corrupt message") {
        Some(TlsProblem::PlainHttp)
    } else if lower.contains("certificate") || lower.contains("unknownissuer") {
        Some(TlsProblem::Certificate)
    } else if lower.contains("handshake") || lower.contains("alert") || lower.contains("tls") {
        Some(TlsProblem::Handshake)
    } else {
        None
    }
}

/// How often an idempotent request (GET, HEAD, a token) is tried, and how long to wait: the
/// registry's `Retry-After` (capped), else a doubling backoff.
#[derive(Clone, Copy, Debug)]
pub struct Retries {
    pub attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    pub max_retry_after: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            attempts: 5,
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(20),
        }
    }
}

impl Retries {
    /// The wait before attempt `n + 1` (after `n` failed attempts, from 1).
    pub fn backoff(&self, n: u32) -> Duration {
        self.first_backoff
            .saturating_mul(1 << (n - 1).min(16))
            .min(self.max_backoff)
    }
}

/// Runs `attempt` until it gets an answer that is not 429 or 5xx, or fails for good, at most
/// `retries.attempts` times; the last answer or error is returned as it is.
pub fn with_retries(
    retries: &Retries,
    url: &str,
    mut attempt: impl FnMut() -> std::result::Result<ureq::http::Response<ureq::Body>, SendError>,
) -> std::result::Result<ureq::http::Response<ureq::Body>, SendError> {
    let mut failed = 0;
    loop {
        let outcome = attempt();
        let last = failed + 1 >= retries.attempts;
        let wait = match &outcome {
            Ok(resp) if !last && retryable_status(resp.status().as_u16()) => {
                let asked = retry_after(resp).map(Duration::from_secs);
                let wait = asked
                    .map(|a| a.min(retries.max_retry_after))
                    .unwrap_or_else(|| retries.backoff(failed + 1));
                tracing::warn!(
                    status = resp.status().as_u16(),
                    url,
                    wait_ms = wait.as_millis() as u64,
                    "the registry asked to try again"
                );
                wait
            }
            Err(e) if !last && e.transient => {
                let wait = retries.backoff(failed + 1);
                tracing::warn!(error = %format!("{:#}", e.error), url, wait_ms = wait.as_millis() as u64, "retrying");
                wait
            }
            _ => return outcome,
        };
        failed += 1;
        std::thread::sleep(wait);
    }
}

/// Whether an answer asks to be tried again: 429 and 5xx.
fn retryable_status(status: u16) -> bool {
    status == 429 || status >= 500
}

/// Whether a body read failed in a way that reading again may fix.
fn broken_read(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::UnexpectedEof
            | K::Interrupted
    ) || {
        let t = e.to_string().to_ascii_lowercase();
        t.contains("closed") || t.contains("eof") || t.contains("reset")
    }
}

/// Opens a body from a byte offset: `Range: bytes=OFFSET-` (0: the whole body).
pub type Reopen = Box<dyn FnMut(u64) -> anyhow::Result<ureq::http::Response<ureq::Body>> + Send>;

/// A blob body that, when the connection breaks part way, asks again from the byte it got to
/// (a `206` answer continues; a `200` is read from the start with the bytes already had
/// skipped), within the same retry budget. The caller still verifies the digest.
pub struct Resuming {
    inner: Box<dyn Read + Send>,
    reopen: Reopen,
    offset: u64,
    failures: u32,
    retries: Retries,
}

impl Resuming {
    pub fn new(first: Box<dyn Read + Send>, reopen: Reopen, retries: Retries) -> Resuming {
        Resuming {
            inner: first,
            reopen,
            offset: 0,
            failures: 0,
            retries,
        }
    }

    fn resume(&mut self) -> std::io::Result<()> {
        let resp = (self.reopen)(self.offset).map_err(std::io::Error::other)?;
        let status = resp.status().as_u16();
        let mut body: Box<dyn Read + Send> = Box::new(resp.into_body().into_reader());
        match status {
            206 => {}
            200 => {
                let skipped =
                    std::io::copy(&mut (&mut body).take(self.offset), &mut std::io::sink())?;
                if skipped != self.offset {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the blob ended early when asked again",
                    ));
                }
            }
            s => {
                return Err(std::io::Error::other(format!(
                    "the registry answered HTTP {s} when the blob was asked for again"
                )))
            }
        }
        self.inner = body;
        Ok(())
    }
}

impl Read for Resuming {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Ok(n) => {
                    self.offset += n as u64;
                    return Ok(n);
                }
                Err(e) if broken_read(&e) && self.failures + 1 < self.retries.attempts => {
                    self.failures += 1;
                    let wait = self.retries.backoff(self.failures);
                    tracing::warn!(error = %e, offset = self.offset, wait_ms = wait.as_millis() as u64, "blob cut off; asking for the rest");
                    std::thread::sleep(wait);
                    if let Err(again) = self.resume() {
                        if !broken_read(&again) {
                            return Err(again);
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let r = Retries::default();
        let waits: Vec<u128> = (1..=7).map(|n| r.backoff(n).as_millis()).collect();
        assert_eq!(waits, [250, 500, 1000, 2000, 4000, 8000, 8000]);
    }

    #[test]
    fn what_is_tried_again() {
        assert!(retryable_status(429) && retryable_status(503) && retryable_status(500));
        assert!(!retryable_status(404) && !retryable_status(400) && !retryable_status(413));
        assert_eq!(
            tls_problem("received corrupt message of type invalidcontenttype"),
            Some(TlsProblem::PlainHttp)
        );
        assert_eq!(
            tls_problem("invalid peer certificate: unknownissuer"),
            Some(TlsProblem::Certificate)
        );
        assert_eq!(tls_problem("connection reset by peer"), None);
        let reset = ureq::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(fault(&reset), Fault::Broken);
        let refused = ureq::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(fault(&refused), Fault::Final);
        let timeout = ureq::Error::Io(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(fault(&timeout), Fault::Final);
    }
}
