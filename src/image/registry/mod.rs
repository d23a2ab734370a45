//! The registry client: every request to a registry over the distribution API (anonymous,
//! basic auth, or the bearer-token flow a `WWW-Authenticate` challenge asks for) goes through
//! [`Registry`], with the trust of [`super::trust`] and the retries of [`super::retry`]. An
//! OCI layout is the other [`BlobSource`] ([`super::layout_source`]).
//!
//! Every failure becomes one sentence a user can act on: unknown repository or tag,
//! unauthorized, a certificate that does not verify, a registry that is down or does not
//! answer in time. Credentials and tokens are never logged.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the client: authentication, sending a request, the deadline |
//! | [`read`] | the registry as a [`BlobSource`]: manifests and streamed blobs |

use super::auth::{self, Credential};
pub use super::fetch::{read_limited, BlobSource, Fetched};
pub use super::layout_source::Layout;
pub use super::retry::SendError;
use super::retry::{fault, retry_after, tls_problem, with_retries, Fault, Retries, TlsProblem};
use anyhow::{anyhow, bail, Result};
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

mod read;
pub use read::discard;

/// How to reach one side's registries: each [`Registry`] made with it reads its trust from
/// this value alone, so a copy's two sides (`--src-cert-dir`, `--dest-cert-dir`) each get
/// their own [`Connection`].
#[derive(Clone, Debug)]
pub struct Connection {
    pub use_http: bool,
    pub skip_tls_verify: bool,
    pub timeout: Duration,
    /// The registry's CAs (`*.crt`) and client certificate (`NAME.cert`, `NAME.key`), in place
    /// of its certs.d directory.
    pub cert_dir: Option<PathBuf>,
    pub retries: Retries,
    /// When set, no request starts after it and none runs past it (`--image-timeout`).
    pub deadline: Option<std::time::Instant>,
}

impl Default for Connection {
    /// HTTPS, verified, certs.d and the system store trusted, a 30 s timeout, the one retry
    /// policy.
    fn default() -> Self {
        Connection {
            use_http: false,
            skip_tls_verify: false,
            timeout: Duration::from_secs(super::DEFAULT_REGISTRY_TIMEOUT),
            cert_dir: None,
            retries: Retries::default(),
            deadline: None,
        }
    }
}

/// A repository on a registry.
pub struct Registry {
    agent: ureq::Agent,
    base: String,
    host: String,
    repository: String,
    credential: Option<Credential>,
    /// The `Authorization` header that worked last (bearer token or basic).
    authorization: Option<String>,
    timeout: Duration,
    /// Tokens are asked for with push rights ([`Registry::for_push`]).
    pushing: bool,
    use_http: bool,
    retries: Retries,
    deadline: Option<std::time::Instant>,
}

impl Registry {
    /// A client for `reference`'s repository: its credentials are read here, its trust
    /// (built-in roots, the system store, certs.d or `--cert-dir`) with the agent it shares
    /// with other clients of the registry ([`super::agents`]); a malformed file of either is
    /// an error naming it.
    pub fn new(reference: &super::reference::Reference, conn: &Connection) -> Result<Registry> {
        let settings = super::agents::Settings {
            cert_dir: conn.cert_dir.as_deref(),
            skip_tls_verify: conn.skip_tls_verify,
            timeout: conn.timeout,
        };
        let agent = super::agents::agent(&reference.registry, &settings)?;
        let scheme = if conn.use_http { "http" } else { "https" };
        Ok(Registry {
            agent,
            base: format!("{scheme}://{}", reference.api_host()),
            host: reference.registry.clone(),
            repository: reference.repository.clone(),
            credential: auth::lookup(&reference.registry, &reference.repository)?,
            authorization: None,
            timeout: conn.timeout,
            pushing: false,
            use_http: conn.use_http,
            retries: conn.retries,
            deadline: conn.deadline,
        })
    }

    /// The same repository, for pushing to: bearer tokens are asked for with push rights.
    pub fn for_push(mut self) -> Registry {
        self.pushing = true;
        self
    }

    /// GET `url`, answering one auth challenge if the registry sends one.
    fn get(&mut self, url: &str, accept: Option<&str>) -> Result<ureq::http::Response<ureq::Body>> {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        self.send_with("GET", url, None, &headers, &[])
            .map_err(|e| e.error)
    }

    /// Sends `method url` with `body` (HEAD and GET send none), answering one auth challenge. A
    /// failure to get any answer says whether trying again may help ([`SendError`]).
    pub fn send(
        &mut self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<ureq::http::Response<ureq::Body>, SendError> {
        self.send_with(method, url, content_type, &[], body)
    }

    /// [`Registry::send`] with more headers.
    pub fn send_with(
        &mut self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::result::Result<ureq::http::Response<ureq::Body>, SendError> {
        // GET and HEAD are tried again here; an upload's steps are tried again by the push,
        // which knows where an upload session must start over.
        let idempotent = method == "GET" || method == "HEAD";
        let retries = if idempotent {
            self.retries
        } else {
            Retries {
                attempts: 1,
                ..self.retries
            }
        };
        with_retries(&retries, url, || {
            self.send_once(method, url, content_type, headers, body)
        })
    }

    /// One request whose body is streamed from `body` (`len` bytes, sent as Content-Length),
    /// never held whole. It is sent once: an upload's caller starts it over on failure. The
    /// upload session was opened by a request that answered any auth challenge already.
    pub fn send_reader(
        &mut self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &mut dyn Read,
        len: u64,
    ) -> std::result::Result<ureq::http::Response<ureq::Body>, SendError> {
        let length = len.to_string();
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(url)
            .header("Content-Type", "application/octet-stream")
            .header("Content-Length", length.as_str());
        if let Some(h) = &self.authorization {
            req = req.header("Authorization", h);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(ureq::SendBody::from_reader(body))
            .map_err(|e| SendError {
                error: anyhow!("{e}"),
                transient: false,
            })?;
        let req = match self.time_left()? {
            Some(left) => self
                .agent
                .configure_request(req)
                .timeout_global(Some(left))
                .build(),
            None => req,
        };
        self.agent.run(req).map_err(|e| SendError {
            transient: fault(&e) == Fault::Broken,
            error: self.transport_error(e),
        })
    }

    /// The time left before the deadline (None: no deadline); an error once it has passed.
    fn time_left(&self) -> std::result::Result<Option<Duration>, SendError> {
        time_left(self.deadline, &self.host)
    }

    /// One request, answering one auth challenge.
    fn send_once(
        &mut self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::result::Result<ureq::http::Response<ureq::Body>, SendError> {
        let mut challenged = false;
        loop {
            let auth = self.authorization.clone();
            let resp = if method == "HEAD" || method == "GET" {
                let mut req = if method == "HEAD" {
                    self.agent.head(url)
                } else {
                    self.agent.get(url)
                };
                if let Some(h) = &auth {
                    req = req.header("Authorization", h);
                }
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                match self.time_left()? {
                    Some(left) => req.config().timeout_global(Some(left)).build().call(),
                    None => req.call(),
                }
            } else {
                let mut req = ureq::http::Request::builder().method(method).uri(url);
                if let Some(h) = &auth {
                    req = req.header("Authorization", h);
                }
                if let Some(ct) = content_type {
                    req = req.header("Content-Type", ct);
                }
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                let req = req.body(body).map_err(|e| SendError {
                    error: anyhow!("{e}"),
                    transient: false,
                })?;
                match self.time_left()? {
                    Some(left) => self.agent.run(
                        self.agent
                            .configure_request(req)
                            .timeout_global(Some(left))
                            .build(),
                    ),
                    None => self.agent.run(req),
                }
            };
            let resp = resp.map_err(|e| SendError {
                transient: fault(&e) == Fault::Broken,
                error: self.transport_error(e),
            })?;
            if resp.status() == 401 && !challenged {
                challenged = true;
                let header = resp
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                self.answer_challenge(&header).map_err(|error| SendError {
                    error,
                    transient: false,
                })?;
                continue;
            }
            return Ok(resp);
        }
    }

    /// `BASE/v2/REPOSITORY/{rest}`; a `Location` the registry sent, made absolute.
    pub fn url(&self, rest: &str) -> String {
        format!("{}/v2/{}/{rest}", self.base, self.repository)
    }

    pub fn absolute(&self, location: &str) -> String {
        if location.starts_with("http://") || location.starts_with("https://") {
            location.to_string()
        } else {
            format!("{}{location}", self.base)
        }
    }

    fn answer_challenge(&mut self, header: &str) -> Result<()> {
        let challenges = auth::parse_challenges(header);
        if let Some(c) = challenges.iter().find(|c| c.scheme == "bearer") {
            let token = self.fetch_token(c)?;
            self.authorization = Some(format!("Bearer {token}"));
            return Ok(());
        }
        if challenges.iter().any(|c| c.scheme == "basic") {
            let Some(cred) = &self.credential else {
                bail!(
                    "unauthorized: the registry requires credentials and none were found for {} in $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, $DOCKER_CONFIG/config.json or ~/.docker/config.json",
                    self.host
                );
            };
            self.authorization = Some(cred.basic_header());
            return Ok(());
        }
        bail!("unauthorized: the registry sent an authentication challenge opreg does not support")
    }

    /// The bearer-token flow: ask the challenge's realm for a token for this repository (to
    /// pull, or to push as well).
    fn fetch_token(&mut self, c: &auth::Challenge) -> Result<String> {
        let realm = c
            .params
            .get("realm")
            .ok_or_else(|| anyhow!("unauthorized: a bearer challenge without a realm"))?;
        // A push asks for push rights from the first challenge on (a HEAD's names only pull):
        // registries that grant exactly the scope asked for would refuse the upload otherwise.
        let scope = match c.params.get("scope") {
            Some(s) if !self.pushing || s.contains("push") => s.clone(),
            _ if self.pushing => format!("repository:{}:pull,push", self.repository),
            _ => format!("repository:{}:pull", self.repository),
        };
        let service = c.params.get("service").cloned().unwrap_or_default();
        let (agent, credential) = (self.agent.clone(), self.credential.clone());
        let resp = with_retries(&self.retries, realm, || {
            let sent = match &credential {
                Some(Credential::IdentityToken { token, .. }) => agent.post(realm).send_form([
                    ("grant_type", "refresh_token"),
                    ("refresh_token", token.as_str()),
                    ("service", service.as_str()),
                    ("scope", scope.as_str()),
                    ("client_id", "opreg"),
                ]),
                cred => {
                    let sep = if realm.contains('?') { '&' } else { '?' };
                    let mut url = format!("{realm}{sep}scope={}", encode(&scope));
                    if !service.is_empty() {
                        url.push_str(&format!("&service={}", encode(&service)));
                    }
                    let mut req = agent.get(&url);
                    if let Some(cred) = cred {
                        req = req.header("Authorization", cred.basic_header());
                    }
                    req.call()
                }
            };
            sent.map_err(|e| SendError {
                transient: fault(&e) == Fault::Broken,
                error: self.transport_error(e),
            })
        })
        .map_err(|e| e.error)?;
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            bail!(
                "unauthorized: the token service refused {} for {}",
                if self.credential.is_some() {
                    "the credentials"
                } else {
                    "anonymous access (no credentials found)"
                },
                self.host
            );
        }
        if status != 200 {
            bail!("the token service answered HTTP {status}");
        }
        let body = read_limited(resp.into_body().into_reader(), 1 << 20, "token response")?;
        let v: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|_| anyhow!("the token service sent a malformed answer"))?;
        v.get("token")
            .or_else(|| v.get("access_token"))
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .ok_or_else(|| anyhow!("the token service sent no token"))
    }

    fn transport_error(&self, e: ureq::Error) -> anyhow::Error {
        let text = e.to_string();
        let timed_out = || {
            anyhow!(
                "the registry {} did not answer within {} s (--registry-timeout)",
                self.host,
                self.timeout.as_secs()
            )
        };
        match e {
            ureq::Error::Timeout(ureq::Timeout::Global) => return out_of_time(&self.host),
            ureq::Error::Timeout(_) | ureq::Error::BodyStalled => return timed_out(),
            ureq::Error::HostNotFound => return anyhow!("unknown registry host {}", self.host),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => return timed_out(),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                return anyhow!(
                    "cannot connect to the registry {}: connection refused (is it running?)",
                    self.host
                )
            }
            _ => {}
        }
        match tls_problem(&text.to_ascii_lowercase()) {
            Some(TlsProblem::PlainHttp) => anyhow!(
                "the registry {} answered in plain HTTP to a TLS request: use --use-http for a plain-HTTP registry",
                self.host
            ),
            Some(TlsProblem::Certificate) => anyhow!(
                "the TLS certificate of the registry {} does not verify ({text}): trust its CA with --cert-dir DIR (a DIR/ca.crt), a certs.d directory (/etc/containers/certs.d/{}/ca.crt) or SSL_CERT_FILE, or pass --skip-tls-verify",
                self.host,
                self.host
            ),
            Some(TlsProblem::Handshake) => anyhow!(
                "TLS with the registry {} failed ({text}); a client certificate goes in --cert-dir or certs.d as NAME.cert and NAME.key",
                self.host
            ),
            None => anyhow!("cannot talk to the registry {}: {text}", self.host),
        }
    }

    /// Turns a non-2xx answer into an error naming what was not found or not allowed.
    pub fn status_error(
        &self,
        what: &str,
        resp: ureq::http::Response<ureq::Body>,
    ) -> anyhow::Error {
        let status = resp.status().as_u16();
        let retry_after = retry_after(&resp)
            .map(|s| format!("; Retry-After {s} s"))
            .unwrap_or_default();
        let body =
            read_limited(resp.into_body().into_reader(), 64 * 1024, "error").unwrap_or_default();
        let code = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| {
                v.pointer("/errors/0/code")
                    .and_then(|c| c.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default();
        if status == 400 && self.use_http && String::from_utf8_lossy(&body).contains("HTTPS") {
            return anyhow!(
                "the registry {} speaks TLS (HTTPS) and was asked in plain HTTP: leave out --use-http",
                self.host
            );
        }
        match status {
            401 => anyhow!(
                "unauthorized: {} for {}",
                if self.credential.is_some() {
                    "the registry rejected the credentials"
                } else {
                    "the registry requires credentials and none were found"
                },
                self.host
            ),
            403 => anyhow!("access denied to {} on {}", self.repository, self.host),
            404 => match code.as_str() {
                "NAME_UNKNOWN" => {
                    anyhow!("repository {} not found on {}", self.repository, self.host)
                }
                "MANIFEST_UNKNOWN" => anyhow!("{what} not found in {}", self.repository),
                _ => anyhow!(
                    "{what} not found (repository {} on {})",
                    self.repository,
                    self.host
                ),
            },
            s => anyhow!(
                "the registry answered HTTP {s} for {what}{}{retry_after}",
                if code.is_empty() {
                    String::new()
                } else {
                    format!(" ({code})")
                }
            ),
        }
    }
}

/// The time left before `deadline` (None: no deadline); an error naming `host` and
/// `--image-timeout` once it has passed.
fn time_left(
    deadline: Option<std::time::Instant>,
    host: &str,
) -> std::result::Result<Option<Duration>, SendError> {
    match deadline {
        None => Ok(None),
        Some(d) => match d.checked_duration_since(std::time::Instant::now()) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(SendError {
                error: out_of_time(host),
                transient: false,
            }),
        },
    }
}

fn out_of_time(host: &str) -> anyhow::Error {
    anyhow!("the image's copy from or to {host} took longer than --image-timeout")
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
