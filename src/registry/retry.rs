//! When a registry request is tried again, and how long to wait: one policy ([`Retries`]) and
//! one loop ([`run`]) for every request the client makes, uploads included. The decision is
//! made from typed errors (ureq's [`ureq::Error`], rustls's [`rustls::Error`],
//! [`std::io::ErrorKind`]) and status codes, never from an error's text. A blob body that
//! breaks off part way is resumed where it stopped ([`Resuming`]).
//!
//! Tried again: 429 (after `Retry-After`, capped), 5xx, and connections reset or closed early.
//! Not tried again: other 4xx, timeouts (a hung registry would cost a multiple of the timeout),
//! refused connections, unknown hosts, TLS and certificate failures, protocol mismatches.

use std::io::Read;
use std::time::Duration;

/// An answer, its body not read yet.
pub type Response = ureq::http::Response<ureq::Body>;

/// A request that failed, and whether trying it again may help.
#[derive(Debug)]
pub struct SendError {
    pub error: anyhow::Error,
    pub again: Again,
    /// The answer that failed it (a 429 or 5xx), kept so that the last one can be returned
    /// to the caller as an answer when no attempt is left.
    answer: Option<Box<Response>>,
}

/// Whether, and when, a failed request is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Again {
    /// Trying again cannot help.
    Never,
    /// After the policy's doubling backoff.
    Backoff,
    /// After the registry's `Retry-After` (capped by the policy).
    After(Duration),
}

impl SendError {
    /// A failure not worth trying again.
    pub fn fatal(error: anyhow::Error) -> SendError {
        SendError {
            error,
            again: Again::Never,
            answer: None,
        }
    }

    /// A failure from ureq, tried again when the connection broke.
    pub fn transport(error: anyhow::Error, e: &ureq::Error) -> SendError {
        SendError {
            error,
            again: match fault(e) {
                Fault::Broken => Again::Backoff,
                Fault::Final => Again::Never,
            },
            answer: None,
        }
    }

    /// A body that could not be read whole (`read_limited`'s error): tried again when the
    /// connection broke, not when the body is over its limit.
    pub fn body(e: anyhow::Error) -> SendError {
        let again = match e.downcast_ref::<std::io::Error>().map(io_fault) {
            Some(Fault::Broken) => Again::Backoff,
            _ => Again::Never,
        };
        SendError {
            error: e,
            again,
            answer: None,
        }
    }

    /// An answer that is not the one expected, as `error`: tried again for 429 and 5xx.
    pub fn status(error: anyhow::Error, status: u16, retry_after: Option<u64>) -> SendError {
        SendError {
            error,
            again: status_again(status, retry_after),
            answer: None,
        }
    }

    /// Whether trying again may help.
    pub fn transient(&self) -> bool {
        self.again != Again::Never
    }
}

impl From<anyhow::Error> for SendError {
    fn from(error: anyhow::Error) -> SendError {
        SendError::fatal(error)
    }
}

impl From<std::io::Error> for SendError {
    fn from(e: std::io::Error) -> SendError {
        SendError::fatal(e.into())
    }
}

/// The seconds an answer's `Retry-After` asks to wait (the HTTP-date form is not used by
/// registries, and is ignored).
pub fn retry_after<B>(resp: &ureq::http::Response<B>) -> Option<u64> {
    resp.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Whether an answer's status asks to be tried again (429 and 5xx), and when.
fn status_again(status: u16, retry_after: Option<u64>) -> Again {
    match (status == 429 || status >= 500, retry_after) {
        (false, _) => Again::Never,
        (true, Some(s)) => Again::After(Duration::from_secs(s)),
        (true, None) => Again::Backoff,
    }
}

/// An answer as an outcome: a 429 or 5xx is a failure that keeps the answer, so that the
/// caller gets it (to word its error) when no attempt is left.
pub fn answered(resp: Response) -> Result<Response, SendError> {
    let status = resp.status().as_u16();
    match status_again(status, retry_after(&resp)) {
        Again::Never => Ok(resp),
        again => Err(SendError {
            error: anyhow::anyhow!("the registry answered HTTP {status}"),
            again,
            answer: Some(Box::new(resp)),
        }),
    }
}

/// The outcome of [`run`] over attempts judged by [`answered`]: a 429 or 5xx left when the
/// attempts are spent is the answer it is (`Ok(Err(answer))`), for the caller to word.
pub fn or_answer<T>(r: Result<T, SendError>) -> Result<Result<T, Response>, SendError> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(SendError {
            answer: Some(resp), ..
        }) => Ok(Err(*resp)),
        Err(e) => Err(e),
    }
}

/// [`or_answer`] for attempts whose success is an answer too.
pub fn answer_of(r: Result<Response, SendError>) -> Result<Response, SendError> {
    or_answer(r).map(|a| a.unwrap_or_else(|resp| resp))
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

/// The fault of one of ureq's errors, by its variant.
pub fn fault(e: &ureq::Error) -> Fault {
    match e {
        ureq::Error::Io(io) => io_fault(io),
        _ => Fault::Final,
    }
}

/// The fault of an I/O error: a broken connection by its kind, unless it carries a TLS error
/// (rustls's, which is final) or one of ureq's (judged by [`fault`]).
pub fn io_fault(e: &std::io::Error) -> Fault {
    use std::io::ErrorKind as K;
    if let Some(inner) = e.get_ref() {
        if inner.is::<rustls::Error>() {
            return Fault::Final;
        }
        if let Some(u) = inner.downcast_ref::<ureq::Error>() {
            return fault(u);
        }
    }
    match e.kind() {
        K::ConnectionReset
        | K::ConnectionAborted
        | K::BrokenPipe
        | K::UnexpectedEof
        | K::Interrupted => Fault::Broken,
        _ => Fault::Final,
    }
}

/// The kind of TLS trouble an error is, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsProblem {
    /// A TLS client got a plain-HTTP answer.
    PlainHttp,
    /// The certificate did not verify, or the peer refused one.
    Certificate,
    /// The certificate has expired: when it did (`notAfter`) and the time it was checked at,
    /// in seconds since the epoch, when rustls says.
    Expired(Option<(u64, u64)>),
    /// Anything else in the handshake.
    Handshake,
}

/// The TLS trouble of one of ureq's errors: rustls's error, as ureq returns it or inside an
/// I/O error; ureq's own TLS errors.
pub fn tls_problem(e: &ureq::Error) -> Option<TlsProblem> {
    let rustls = match e {
        ureq::Error::Rustls(r) => Some(r),
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    match (rustls, e) {
        (Some(r), _) => Some(rustls_problem(r)),
        (None, ureq::Error::Tls(_) | ureq::Error::Pem(_) | ureq::Error::TlsRequired) => {
            Some(TlsProblem::Handshake)
        }
        _ => None,
    }
}

fn rustls_problem(e: &rustls::Error) -> TlsProblem {
    use rustls::AlertDescription as A;
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidMessage(_) => TlsProblem::PlainHttp,
        rustls::Error::InvalidCertificate(C::ExpiredContext { time, not_after }) => {
            TlsProblem::Expired(Some((not_after.as_secs(), time.as_secs())))
        }
        rustls::Error::InvalidCertificate(C::Expired) => TlsProblem::Expired(None),
        rustls::Error::InvalidCertificate(_)
        | rustls::Error::NoCertificatesPresented
        | rustls::Error::AlertReceived(
            A::NoCertificate
            | A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::CertificateUnobtainable
            | A::BadCertificateStatusResponse
            | A::BadCertificateHashValue
            | A::CertificateRequired,
        ) => TlsProblem::Certificate,
        _ => TlsProblem::Handshake,
    }
}

/// How often a request is tried, and how long to wait: the registry's `Retry-After` (capped),
/// else a doubling backoff.
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

    /// The wait after `n` failed attempts that failed as `again` says (`None`: give up).
    fn wait(&self, n: u32, again: Again) -> Option<Duration> {
        if n >= self.attempts {
            return None;
        }
        match again {
            Again::Never => None,
            Again::Backoff => Some(self.backoff(n)),
            Again::After(asked) => Some(asked.min(self.max_retry_after)),
        }
    }
}

/// The one retry loop: runs `attempt` until it succeeds, fails for good, or has been tried
/// `retries.attempts` times, waiting as [`Retries`] says between attempts; the last error is
/// returned as it is.
pub fn run<T>(
    retries: &Retries,
    what: &str,
    mut attempt: impl FnMut() -> Result<T, SendError>,
) -> Result<T, SendError> {
    let mut failed = 0;
    loop {
        let e = match attempt() {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        failed += 1;
        let Some(wait) = retries.wait(failed, e.again) else {
            return Err(e);
        };
        tracing::warn!(error = %format!("{:#}", e.error), what, attempt = failed, wait_ms = wait.as_millis() as u64, "retrying");
        std::thread::sleep(wait);
    }
}

/// Opens a body from a byte offset: `Range: bytes=OFFSET-` (0: the whole body).
pub type Reopen = Box<dyn FnMut(u64) -> anyhow::Result<Response> + Send>;

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
                Err(e) => {
                    self.failures += 1;
                    let again = match io_fault(&e) {
                        Fault::Broken => Again::Backoff,
                        Fault::Final => Again::Never,
                    };
                    let Some(wait) = self.retries.wait(self.failures, again) else {
                        return Err(e);
                    };
                    tracing::warn!(error = %e, offset = self.offset, wait_ms = wait.as_millis() as u64, "blob cut off; asking for the rest");
                    std::thread::sleep(wait);
                    if let Err(again) = self.resume() {
                        if io_fault(&again) == Fault::Final {
                            return Err(again);
                        }
                    }
                }
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
        let never = |s| status_again(s, None) == Again::Never;
        assert!(!never(429) && !never(503) && !never(500));
        assert!(never(404) && never(400) && never(413));
        assert_eq!(
            status_again(429, Some(3)),
            Again::After(Duration::from_secs(3))
        );
        let reset = ureq::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(fault(&reset), Fault::Broken);
        let refused = ureq::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(fault(&refused), Fault::Final);
        let timeout = ureq::Error::Io(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(fault(&timeout), Fault::Final);
        // Judged by type, not by text: an error that says "closed" or "reset" but is neither
        // is not tried again; one of ureq's wrapped in an I/O error is judged as itself.
        let says_reset = ureq::Error::Io(std::io::Error::other("connection reset, eof, closed"));
        assert_eq!(fault(&says_reset), Fault::Final);
        assert_eq!(fault(&ureq::Error::ConnectionFailed), Fault::Final);
        let wrapped = std::io::Error::other(ureq::Error::Timeout(ureq::Timeout::Global));
        assert_eq!(io_fault(&wrapped), Fault::Final);
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(io_fault(&eof), Fault::Broken);
    }

    #[test]
    fn tls_trouble_is_told_apart_by_type_and_never_tried_again() {
        let tls = |e: rustls::Error| {
            ureq::Error::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        };
        let plain = tls(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(tls_problem(&plain), Some(TlsProblem::PlainHttp));
        let unknown = tls(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        assert_eq!(tls_problem(&unknown), Some(TlsProblem::Certificate));
        assert_eq!(fault(&unknown), Fault::Final);
        let alert = tls(rustls::Error::AlertReceived(
            rustls::AlertDescription::HandshakeFailure,
        ));
        assert_eq!(tls_problem(&alert), Some(TlsProblem::Handshake));
        let direct = ureq::Error::Rustls(rustls::Error::AlertReceived(
            rustls::AlertDescription::CertificateRequired,
        ));
        assert_eq!(tls_problem(&direct), Some(TlsProblem::Certificate));
        assert_eq!(fault(&direct), Fault::Final);
        let text_only = ureq::Error::Io(std::io::Error::other("tls handshake alert certificate"));
        assert_eq!(tls_problem(&text_only), None);
    }

    #[test]
    fn the_loop_stops_at_the_budget_or_a_final_failure() {
        let quick = Retries {
            attempts: 3,
            first_backoff: Duration::from_millis(1),
            ..Retries::default()
        };
        let mut n = 0;
        let r: Result<(), SendError> = run(&quick, "x", || {
            n += 1;
            Err(SendError::status(anyhow::anyhow!("503"), 503, None))
        });
        assert!(r.is_err());
        assert_eq!(n, 3);
        let mut n = 0;
        let r: Result<(), SendError> = run(&quick, "x", || {
            n += 1;
            Err(SendError::status(anyhow::anyhow!("404"), 404, None))
        });
        assert!(r.is_err());
        assert_eq!(n, 1);
    }
}
