//! The one send function: every request to a registry (a manifest, a blob, a token, an
//! upload's steps, a resumed blob) goes through [`Transport::send`], which keeps the
//! `--image-timeout` deadline and turns ureq's failures into [`SendError`]s that say, by the
//! error's type, whether trying again may help, worded as one sentence a user can act on.

pub use super::retry::Response;
use super::retry::{tls_problem, SendError, TlsProblem};
use anyhow::anyhow;
use std::time::{Duration, Instant};

/// What a request to one registry is sent with: the shared agent ([`super::agents`]), the
/// host it names in errors, the timeout and the deadline.
#[derive(Clone)]
pub(super) struct Transport {
    pub agent: ureq::Agent,
    pub host: String,
    pub timeout: Duration,
    /// When set, no request starts after it and none runs past it (`--image-timeout`).
    pub deadline: Option<Instant>,
}

/// A request to send: method, URL, headers (`Authorization` among them), and a body.
pub(super) fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> RequestBuilder {
    let mut b = ureq::http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    RequestBuilder(b)
}

/// A request being built ([`request`]).
pub(super) struct RequestBuilder(ureq::http::request::Builder);

impl RequestBuilder {
    /// The request with `body`: bytes, a reader, or nothing (`()`).
    pub fn body<B: ureq::AsSendBody>(self, body: B) -> Result<ureq::http::Request<B>, SendError> {
        self.0
            .body(body)
            .map_err(|e| SendError::fatal(anyhow!("{e}")))
    }
}

impl Transport {
    /// Sends one request, once: the retry policy is the caller's ([`super::retry::run`]).
    pub fn send<B: ureq::AsSendBody>(
        &self,
        req: ureq::http::Request<B>,
    ) -> Result<Response, SendError> {
        let req = match self.time_left()? {
            Some(left) => self
                .agent
                .configure_request(req)
                .timeout_global(Some(left))
                .build(),
            None => req,
        };
        self.agent
            .run(req)
            .map_err(|e| SendError::transport(self.error(&e), &e))
    }

    /// The time left before the deadline (None: no deadline); an error naming the host and
    /// `--image-timeout` once it has passed.
    fn time_left(&self) -> Result<Option<Duration>, SendError> {
        match self.deadline {
            None => Ok(None),
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Ok(Some(left)),
                _ => Err(SendError::fatal(out_of_time(&self.host))),
            },
        }
    }

    /// One of ureq's errors as a sentence naming the registry and what to do.
    pub fn error(&self, e: &ureq::Error) -> anyhow::Error {
        let host = &self.host;
        let timed_out = || {
            anyhow!(
                "the registry {host} did not answer within {} s (--registry-timeout)",
                self.timeout.as_secs()
            )
        };
        match e {
            ureq::Error::Timeout(ureq::Timeout::Global) => return out_of_time(host),
            ureq::Error::Timeout(_) | ureq::Error::BodyStalled => return timed_out(),
            ureq::Error::HostNotFound => return anyhow!("unknown registry host {host}"),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => return timed_out(),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                return anyhow!(
                    "cannot connect to the registry {host}: connection refused (is it running?)"
                )
            }
            _ => {}
        }
        match tls_problem(e) {
            Some(TlsProblem::PlainHttp) => anyhow!(
                "the registry {host} answered in plain HTTP to a TLS request: use --insecure-registry {host} (or --use-http when every registry is plain HTTP)"
            ),
            Some(TlsProblem::Expired(when)) => anyhow!(
                "the TLS certificate of the registry {host} has expired{}: the registry must renew it (trusting a CA does not help; --skip-tls-verify skips the check)",
                match when {
                    Some((not_after, now)) => format!(
                        " (valid until {}, checked at {})",
                        crate::text::rfc3339(not_after),
                        crate::text::rfc3339(now)
                    ),
                    None => String::new(),
                }
            ),
            Some(TlsProblem::Certificate) => anyhow!(
                "the TLS certificate of the registry {host} does not verify ({e}): trust its CA with --cert-dir DIR (a DIR/ca.crt), a certs.d directory (/etc/containers/certs.d/{host}/ca.crt) or SSL_CERT_FILE, or pass --skip-tls-verify"
            ),
            Some(TlsProblem::Handshake) => anyhow!(
                "TLS with the registry {host} failed ({e}); a client certificate goes in --cert-dir or certs.d as NAME.cert and NAME.key"
            ),
            None => anyhow!("cannot talk to the registry {host}: {e}"),
        }
    }
}

fn out_of_time(host: &str) -> anyhow::Error {
    anyhow!("the image's copy from or to {host} took longer than --image-timeout")
}
