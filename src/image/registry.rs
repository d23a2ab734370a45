//! Where manifests and blobs come from: a registry over the distribution API (anonymous,
//! basic auth, or the bearer-token flow a `WWW-Authenticate` challenge asks for), or an OCI
//! image-layout directory.
//!
//! Every failure becomes one sentence a user can act on: unknown repository or tag,
//! unauthorized, a certificate that does not verify, a registry that is down or does not
//! answer in time. Credentials and tokens are never logged.

use super::auth::{self, Credential};
use anyhow::{anyhow, bail, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A manifest as fetched.
pub struct Fetched {
    pub bytes: Vec<u8>,
    pub content_type: Option<String>,
    /// The registry's `Docker-Content-Digest`, when it sent one.
    pub digest: Option<String>,
}

/// A place to read an image from.
pub trait BlobSource {
    /// The manifest named by a tag or digest, at most `limit` bytes.
    fn manifest(&mut self, reference: &str, limit: u64) -> Result<Fetched>;
    /// A blob's bytes, streamed (the caller verifies them).
    fn blob(&mut self, digest: &str) -> Result<Box<dyn Read + Send>>;
}

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

fn transient(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => !matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
        ),
        ureq::Error::HostNotFound => false,
        other => !other
            .to_string()
            .to_ascii_lowercase()
            .contains("certificate"),
    }
}

/// Connection settings.
#[derive(Clone, Debug)]
pub struct Connection {
    pub use_http: bool,
    pub skip_tls_verify: bool,
    pub timeout: Duration,
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
}

impl Registry {
    pub fn new(reference: &super::reference::Reference, conn: &Connection) -> Registry {
        let tls = ureq::tls::TlsConfig::builder()
            .disable_verification(conn.skip_tls_verify)
            .build();
        let t = Some(conn.timeout);
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls)
            .timeout_resolve(t)
            .timeout_connect(t)
            .timeout_send_request(t)
            .timeout_recv_response(t)
            .timeout_per_read(t)
            .user_agent(concat!("opreg/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        let scheme = if conn.use_http { "http" } else { "https" };
        Registry {
            agent,
            base: format!("{scheme}://{}", reference.api_host()),
            host: reference.registry.clone(),
            repository: reference.repository.clone(),
            credential: auth::lookup(&reference.registry, &reference.repository),
            authorization: None,
            timeout: conn.timeout,
            pushing: false,
        }
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
                req.call()
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
                self.agent.run(req)
            };
            let resp = resp.map_err(|e| SendError {
                transient: transient(&e),
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
        let resp = match &self.credential {
            Some(Credential::IdentityToken { token, .. }) => self
                .agent
                .post(realm)
                .send_form([
                    ("grant_type", "refresh_token"),
                    ("refresh_token", token.as_str()),
                    ("service", service.as_str()),
                    ("scope", scope.as_str()),
                    ("client_id", "opreg"),
                ])
                .map_err(|e| self.transport_error(e))?,
            cred => {
                let sep = if realm.contains('?') { '&' } else { '?' };
                let mut url = format!("{realm}{sep}scope={}", encode(&scope));
                if !service.is_empty() {
                    url.push_str(&format!("&service={}", encode(&service)));
                }
                let mut req = self.agent.get(&url);
                if let Some(cred) = cred {
                    req = req.header("Authorization", cred.basic_header());
                }
                req.call().map_err(|e| self.transport_error(e))?
            }
        };
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
        match e {
            ureq::Error::Timeout(_) => anyhow!(
                "the registry {} did not answer within {} s",
                self.host,
                self.timeout.as_secs()
            ),
            ureq::Error::HostNotFound => anyhow!("unknown registry host {}", self.host),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => anyhow!(
                "the registry {} did not answer within {} s",
                self.host,
                self.timeout.as_secs()
            ),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => anyhow!(
                "cannot connect to the registry {}: connection refused (is it running?)",
                self.host
            ),
            _ if text.to_ascii_lowercase().contains("certificate") => anyhow!(
                "TLS certificate of {} does not verify ({text}); use --skip-tls-verify for a registry with a self-signed certificate",
                self.host
            ),
            _ => anyhow!("cannot talk to the registry {}: {text}", self.host),
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

impl BlobSource for Registry {
    fn manifest(&mut self, reference: &str, limit: u64) -> Result<Fetched> {
        let url = format!("{}/v2/{}/manifests/{reference}", self.base, self.repository);
        let resp = self.get(&url, Some(super::manifest::ACCEPT))?;
        let what = if reference.starts_with("sha256:") {
            format!("manifest {reference}")
        } else {
            format!("tag {reference:?}")
        };
        if !resp.status().is_success() {
            return Err(self.status_error(&what, resp));
        }
        let header = |k: &str| {
            resp.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header("content-type");
        let digest = header("docker-content-digest");
        if let Some(len) = header("content-length").and_then(|l| l.parse::<u64>().ok()) {
            if len > limit {
                bail!("the manifest is {len} bytes, over the size limit of {limit} bytes");
            }
        }
        let bytes = read_limited(resp.into_body().into_reader(), limit, "manifest")?;
        Ok(Fetched {
            bytes,
            content_type,
            digest,
        })
    }

    fn blob(&mut self, digest: &str) -> Result<Box<dyn Read + Send>> {
        let url = format!("{}/v2/{}/blobs/{digest}", self.base, self.repository);
        let resp = self.get(&url, None)?;
        if !resp.status().is_success() {
            return Err(self.status_error(&format!("blob {digest}"), resp));
        }
        Ok(Box::new(resp.into_body().into_reader()))
    }
}

/// Reads at most `limit` bytes; more is an error naming `what`.
pub fn read_limited(r: impl Read, limit: u64, what: &str) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        bail!("the {what} is over the size limit of {limit} bytes");
    }
    Ok(buf)
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

/// An OCI image-layout directory (`oci-layout`, `index.json`, `blobs/sha256/…`).
pub struct Layout {
    dir: PathBuf,
}

impl Layout {
    pub fn open(dir: &Path) -> Result<Layout> {
        if !dir.join("index.json").is_file() {
            bail!(
                "{} is not an OCI image layout (no index.json)",
                dir.display()
            );
        }
        Ok(Layout {
            dir: dir.to_path_buf(),
        })
    }

    fn blob_path(&self, digest: &str) -> Result<PathBuf> {
        if !super::reference::is_digest(digest) {
            bail!("unsupported or malformed digest {digest:?}");
        }
        Ok(self
            .dir
            .join("blobs/sha256")
            .join(&digest["sha256:".len()..]))
    }
}

impl BlobSource for Layout {
    /// `reference` is a digest, a tag (`org.opencontainers.image.ref.name`), or "" for the
    /// layout's only image.
    fn manifest(&mut self, reference: &str, limit: u64) -> Result<Fetched> {
        let digest = if reference.starts_with("sha256:") {
            reference.to_string()
        } else {
            let index = read_limited(
                std::fs::File::open(self.dir.join("index.json"))?,
                limit,
                "layout's index.json",
            )?;
            let v: serde_json::Value =
                serde_json::from_slice(&index).map_err(|e| anyhow!("malformed index.json: {e}"))?;
            let entries = v
                .get("manifests")
                .and_then(|m| m.as_array())
                .cloned()
                .unwrap_or_default();
            let name = |e: &serde_json::Value| {
                e.pointer("/annotations/org.opencontainers.image.ref.name")
                    .and_then(|n| n.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            let pick = if reference.is_empty() {
                match entries.as_slice() {
                    [only] => Some(only.clone()),
                    _ => bail!(
                        "the layout holds {} images; name one with oci:DIR:TAG",
                        entries.len()
                    ),
                }
            } else {
                entries.iter().find(|e| name(e) == reference).cloned()
            };
            let Some(e) = pick else {
                bail!("tag {reference:?} not found in the layout's index.json");
            };
            let d = e.get("digest").and_then(|d| d.as_str()).unwrap_or("");
            let mt = e
                .get("mediaType")
                .and_then(|d| d.as_str())
                .map(str::to_string);
            let bytes = read_limited(
                std::fs::File::open(self.blob_path(d)?)
                    .map_err(|e| anyhow!("manifest {d}: {e}"))?,
                limit,
                "manifest",
            )?;
            return Ok(Fetched {
                bytes,
                content_type: mt,
                digest: Some(d.to_string()),
            });
        };
        let bytes = read_limited(
            std::fs::File::open(self.blob_path(&digest)?)
                .map_err(|e| anyhow!("manifest {digest}: {e}"))?,
            limit,
            "manifest",
        )?;
        Ok(Fetched {
            bytes,
            content_type: None,
            digest: None,
        })
    }

    fn blob(&mut self, digest: &str) -> Result<Box<dyn Read + Send>> {
        let p = self.blob_path(digest)?;
        Ok(Box::new(
            std::fs::File::open(&p).map_err(|e| anyhow!("blob {digest}: {e}"))?,
        ))
    }
}
