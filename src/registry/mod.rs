//! The transport: every request to a registry over the distribution API (anonymous, basic
//! auth, or the bearer-token flow a `WWW-Authenticate` challenge asks for) goes through
//! [`Registry`], with the trust of [`trust`] and the retries of [`retry`]. An OCI layout is the
//! other [`BlobSource`] ([`crate::oci::layout_reader`]).
//!
//! Every failure becomes one sentence a user can act on: unknown repository or tag,
//! unauthorized, a certificate that does not verify, a registry that is down or does not
//! answer in time. Credentials and tokens are never logged.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`Registry`]: one repository's client, its requests, auth challenges, transport errors |
//! | `read.rs` | a registry as a [`BlobSource`]: manifests and blobs, a cut-off body asked for again |
//! | `send.rs` | the one send function every request goes through; transport errors as sentences |
//! | [`agents`] | one HTTP agent per registry and settings, shared by a run's clients |
//! | [`auth`] | auth files, credentials, the `WWW-Authenticate` parser |
//! | [`trust`] | whom a connection trusts: roots, the system store, certs.d, `--cert-dir`, mTLS |
//! | [`retry`] | the one retry loop and policy, decided from typed errors; a blob body resumed |
//! | [`upload`] | HEAD, mount, streamed and chunked uploads, manifest PUTs |
//! | `delete.rs` | DELETE of a manifest by digest, and the probe for a registry that refuses deletes |
//! | [`insecure`] | registries reached without full TLS: `--insecure-registry`, registries.conf |
//! | [`registries_conf`] | containers' `registries.conf` and its drop-ins, read for `insecure` |

pub use crate::oci::layout_reader::Layout;
pub use crate::oci::source::{read_limited, BlobSource, Fetched};
use anyhow::{anyhow, bail, Result};
use auth::Credential;
pub use retry::Response;
pub use retry::SendError;
use retry::{retry_after, Retries};
use send::Transport;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

pub mod agents;
pub mod auth;
mod delete;
pub mod insecure;
mod read;
pub mod registries_conf;
pub mod retry;
mod send;
pub mod trust;
pub mod upload;
pub use delete::Deleted;
pub use read::discard;

/// How to reach one side's registries: each [`Registry`] made with it reads its trust from
/// this value alone, so a copy's two sides (`--src-cert-dir`, `--dest-cert-dir`) each get
/// their own [`Connection`].
#[derive(Clone, Debug)]
pub struct Connection {
    pub use_http: bool,
    pub skip_tls_verify: bool,
    /// Registries (`HOST[:PORT]`) reached as registries.conf's `insecure = true` says:
    /// unverified TLS, or plain HTTP when only that answers ([`insecure`]).
    pub insecure_registries: Vec<String>,
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
            insecure_registries: Vec::new(),
            timeout: Duration::from_secs(DEFAULT_REGISTRY_TIMEOUT),
            cert_dir: None,
            retries: Retries::default(),
            deadline: None,
        }
    }
}

/// The two sides of a command that reads from some registries and writes to another (copy,
/// mirror, image build): `--src-*` and `--dest-*` each on top of the shared flags.
#[derive(Clone, Debug, Default)]
pub struct Connections {
    pub source: Connection,
    pub destination: Connection,
}

impl Connections {
    /// Both sides reached the same way.
    pub fn same(c: Connection) -> Connections {
        Connections {
            source: c.clone(),
            destination: c,
        }
    }
}

/// `--registry-timeout`'s default, in seconds.
pub const DEFAULT_REGISTRY_TIMEOUT: u64 = 30;

/// A repository on a registry.
pub struct Registry {
    transport: Transport,
    base: String,
    repository: String,
    credential: Option<Credential>,
    /// The auth file the credential came from.
    credential_file: Option<std::path::PathBuf>,
    /// The `Authorization` header that worked last (bearer token or basic).
    authorization: Option<String>,
    /// Tokens are asked for with push rights ([`Registry::for_push`]).
    pushing: bool,
    use_http: bool,
    retries: Retries,
}

impl Registry {
    /// A client for `reference`'s repository: its credentials are read here, its trust
    /// (built-in roots, the system store, certs.d or `--cert-dir`) with the agent it shares
    /// with other clients of the registry ([`agents`]); a malformed file of either is
    /// an error naming it.
    pub fn new(
        reference: &crate::image::reference::Reference,
        conn: &Connection,
    ) -> Result<Registry> {
        let insecure = !conn.use_http
            && insecure::marked(
                &conn.insecure_registries,
                &reference.registry,
                &reference.repository,
            )?;
        let settings = agents::Settings {
            cert_dir: conn.cert_dir.as_deref(),
            skip_tls_verify: conn.skip_tls_verify || insecure,
            timeout: conn.timeout,
        };
        let agent = agents::agent(&reference.registry, &settings)?;
        let transport = Transport {
            agent,
            host: reference.registry.clone(),
            timeout: conn.timeout,
            deadline: conn.deadline,
        };
        let use_http =
            conn.use_http || (insecure && insecure::plain_http(&transport, reference.api_host()));
        let scheme = if use_http { "http" } else { "https" };
        let found = auth::lookup(&reference.registry, &reference.repository)?;
        let (credential, credential_file) = match found {
            Some(f) => (Some(f.credential), Some(f.file)),
            None => (None, None),
        };
        Ok(Registry {
            transport,
            base: format!("{scheme}://{}", reference.api_host()),
            repository: reference.repository.clone(),
            credential,
            credential_file,
            authorization: None,
            pushing: false,
            use_http,
            retries: conn.retries,
        })
    }

    /// The same repository, for pushing to: bearer tokens are asked for with push rights.
    pub fn for_push(mut self) -> Registry {
        self.pushing = true;
        self
    }

    /// The registry's host, as the reference names it.
    fn host(&self) -> &str {
        &self.transport.host
    }

    /// GET `url`, answering one auth challenge if the registry sends one.
    fn get(&mut self, url: &str, accept: Option<&str>) -> Result<Response> {
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
    ) -> std::result::Result<Response, SendError> {
        self.send_with(method, url, content_type, &[], body)
    }

    /// [`Registry::send`] with more headers. GET and HEAD are tried again under the one
    /// policy ([`retry::run`]); an upload's steps are tried again by [`upload`], which knows
    /// where an upload session must start over. A 429 or 5xx left when the attempts are spent
    /// is returned as the answer it is.
    pub fn send_with(
        &mut self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::result::Result<Response, SendError> {
        let retries = self.retries_for(method);
        let mut all: Vec<(&str, &str)> = content_type
            .map(|ct| ("Content-Type", ct))
            .into_iter()
            .collect();
        all.extend_from_slice(headers);
        retry::answer_of(retry::run(&retries, url, || {
            self.send_once(method, url, &all, body)
                .and_then(retry::answered)
        }))
    }

    /// The policy for `method`: GET and HEAD are tried again here; anything else once, its
    /// caller trying the whole step again.
    fn retries_for(&self, method: &str) -> Retries {
        match method {
            "GET" | "HEAD" => self.retries,
            _ => Retries {
                attempts: 1,
                ..self.retries
            },
        }
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
    ) -> std::result::Result<Response, SendError> {
        let length = len.to_string();
        let mut all = vec![
            ("Content-Type", "application/octet-stream"),
            ("Content-Length", length.as_str()),
        ];
        if let Some(h) = &self.authorization {
            all.push(("Authorization", h));
        }
        all.extend_from_slice(headers);
        let req = send::request(method, url, &all).body(ureq::SendBody::from_reader(body))?;
        self.transport.send(req)
    }

    /// One request, answering one auth challenge; `headers` follow the `Authorization` one.
    fn send_once(
        &mut self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::result::Result<Response, SendError> {
        let mut challenged = false;
        loop {
            let auth = self.authorization.clone();
            let mut all: Vec<(&str, &str)> = Vec::new();
            if let Some(h) = &auth {
                all.push(("Authorization", h));
            }
            all.extend_from_slice(headers);
            let builder = send::request(method, url, &all);
            let resp = if method == "HEAD" || method == "GET" {
                self.transport.send(builder.body(())?)?
            } else {
                self.transport.send(builder.body(body)?)?
            };
            if resp.status() == 401 && !challenged {
                challenged = true;
                let header = resp
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                self.answer_challenge(&header).map_err(SendError::fatal)?;
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
                return Err(auth::Unauthorized(format!(
                    "the registry {} requires credentials and none were found in {}",
                    self.host(),
                    auth::searched()
                ))
                .into());
            };
            self.authorization = Some(cred.basic_header());
            return Ok(());
        }
        Err(auth::Unauthorized(
            "the registry sent an authentication challenge opreg does not support".into(),
        )
        .into())
    }

    /// The bearer-token flow: ask the challenge's realm for a token for this repository (to
    /// pull, or to push as well).
    fn fetch_token(&mut self, c: &auth::Challenge) -> Result<String> {
        let realm = c
            .params
            .get("realm")
            .ok_or_else(|| auth::Unauthorized("a bearer challenge without a realm".into()))?;
        // A push asks for push rights from the first challenge on (a HEAD's names only pull):
        // registries that grant exactly the scope asked for would refuse the upload otherwise.
        let scope = match c.params.get("scope") {
            Some(s) if !self.pushing || s.contains("push") => s.clone(),
            _ if self.pushing => format!("repository:{}:pull,push", self.repository),
            _ => format!("repository:{}:pull", self.repository),
        };
        let service = c.params.get("service").cloned().unwrap_or_default();
        let (transport, credential) = (self.transport.clone(), self.credential.clone());
        let token_request = || {
            let req = match &credential {
                Some(Credential::IdentityToken { token, .. }) => {
                    let form = [
                        ("grant_type", "refresh_token"),
                        ("refresh_token", token.as_str()),
                        ("service", service.as_str()),
                        ("scope", scope.as_str()),
                        ("client_id", "opreg"),
                    ]
                    .iter()
                    .map(|(k, v)| format!("{k}={}", encode(v)))
                    .collect::<Vec<_>>()
                    .join("&");
                    let ct = [("Content-Type", "application/x-www-form-urlencoded")];
                    return transport.send(send::request("POST", realm, &ct).body(form)?);
                }
                cred => {
                    let sep = if realm.contains('?') { '&' } else { '?' };
                    let mut url = format!("{realm}{sep}scope={}", encode(&scope));
                    if !service.is_empty() {
                        url.push_str(&format!("&service={}", encode(&service)));
                    }
                    let basic = cred.as_ref().map(Credential::basic_header);
                    let headers: Vec<(&str, &str)> = basic
                        .iter()
                        .map(|b| ("Authorization", b.as_str()))
                        .collect();
                    send::request("GET", &url, &headers).body(())?
                }
            };
            transport.send(req)
        };
        let resp = retry::answer_of(retry::run(&self.retries, realm, || {
            token_request().and_then(retry::answered)
        }))
        .map_err(|e| e.error)?;
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            return Err(auth::Unauthorized(format!(
                "the token service refused {} for {}",
                self.whose_credentials(),
                self.host()
            ))
            .into());
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

    /// Asks the registry's API root (`/v2/`), answering its auth challenge: what is wrong
    /// with the registry as a whole (no connection, TLS, refused credentials) shows here once,
    /// before any image is asked for.
    pub fn check(&mut self) -> Result<()> {
        let url = format!("{}/v2/", self.base);
        let resp = self.get(&url, None)?;
        match resp.status().as_u16() {
            // The answer read to its end, so that its connection goes back to the agent's
            // pool for the requests that follow.
            200..=299 => {
                read_limited(resp.into_body().into_reader(), 64 * 1024, "answer").map(drop)
            }
            _ => Err(self.status_error("the API root /v2/", resp)),
        }
    }

    /// Whether the registry, asked in plain HTTP for `/v2/`, answers that it speaks TLS.
    fn speaks_tls(&self) -> bool {
        let url = format!("{}/v2/", self.base);
        let Ok(req) = send::request("GET", &url, &[]).body(()) else {
            return false;
        };
        match self.transport.send(req) {
            Ok(resp) if resp.status() == 400 => {
                read_limited(resp.into_body().into_reader(), 64 * 1024, "error")
                    .is_ok_and(|b| String::from_utf8_lossy(&b).contains("HTTPS"))
            }
            _ => false,
        }
    }

    /// The credentials sent, as an error names them: with the auth file they came from.
    fn whose_credentials(&self) -> String {
        match &self.credential_file {
            Some(f) => format!("the credentials from {}", f.display()),
            None => format!(
                "anonymous access (no credentials found in {})",
                auth::searched()
            ),
        }
    }

    /// Turns a non-2xx answer into an error naming what was not found or not allowed.
    pub fn status_error(&self, what: &str, resp: Response) -> anyhow::Error {
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
        // A TLS server asked in plain HTTP answers 400 with a body saying so; a HEAD's answer
        // has no body, so `/v2/` is asked to tell.
        if status == 400
            && self.use_http
            && (String::from_utf8_lossy(&body).contains("HTTPS") || self.speaks_tls())
        {
            return anyhow!(
                "the registry {} speaks TLS (HTTPS) and was asked in plain HTTP: leave out --use-http",
                self.host()
            );
        }
        match status {
            401 => match self.credential_file.is_some() {
                true => anyhow!(
                    "unauthorized: the registry {} rejected {}",
                    self.host(),
                    self.whose_credentials()
                ),
                false => anyhow!(
                    "unauthorized: the registry {} requires credentials and none were found in {}",
                    self.host(),
                    auth::searched()
                ),
            },
            403 => anyhow!("access denied to {} on {}", self.repository, self.host()),
            405 => anyhow!(
                "the registry {} refuses writes to {} (HTTP 405 Method Not Allowed for {what}): \
                 it is read-only, or does not allow this operation",
                self.host(),
                self.repository
            ),
            404 => match code.as_str() {
                "NAME_UNKNOWN" => {
                    anyhow!(
                        "repository {} not found on {}",
                        self.repository,
                        self.host()
                    )
                }
                "MANIFEST_UNKNOWN" => anyhow!("{what} not found in {}", self.repository),
                _ => anyhow!(
                    "{what} not found (repository {} on {})",
                    self.repository,
                    self.host()
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
