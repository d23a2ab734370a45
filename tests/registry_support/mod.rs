//! Test helpers for image sources: a real registry (Debian's `docker-registry`, the CNCF
//! distribution registry) on a free loopback port, plain HTTP or TLS with a self-signed
//! certificate and htpasswd basic auth; images built here (tar + gzip/zstd layers, OCI or Docker
//! schema 2 manifests, indexes, in `image.rs`) and pushed through the registry HTTP API; OCI
//! layouts on disk.
#![allow(dead_code)]

pub mod ctx;
pub mod faults;
pub mod image;
pub mod pki;
pub mod throttle;
pub mod token;

pub use image::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const USER: &str = "opreg";
pub const PASSWORD: &str = "s3cret-pass";

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

pub fn sha(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

fn need(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "`{tool}` is not installed: these tests run a real registry. Install it with \
         `apt-get install -y {package}` (see .ci/run)"
    );
}

/// Starts `docker-registry serve DIR/config.yml`, its output appended to DIR/registry.log.
fn spawn(dir: &std::path::Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("registry.log"))
        .unwrap();
    Command::new("docker-registry")
        .arg("serve")
        .arg(dir.join("config.yml"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start docker-registry")
}

/// How a registry's storage is configured.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Normal,
    ReadOnly,
    NoDeletes,
}

/// A running registry, stopped (and its storage removed) on drop.
pub struct Registry {
    child: Child,
    pub port: u16,
    pub tls: bool,
    /// The Authorization header the helpers push with.
    pub push_auth: Option<String>,
    /// The token server of a token-auth registry.
    pub token_server: Option<token::TokenServer>,
    pub dir: tempfile::TempDir,
    agent: ureq::Agent,
}

impl Registry {
    /// An anonymous plain-HTTP registry.
    pub fn http() -> Registry {
        Self::start(false)
    }

    /// A TLS registry with a self-signed certificate and basic auth (USER / PASSWORD).
    pub fn tls_auth() -> Registry {
        Self::start(true)
    }

    /// A plain-HTTP registry using the bearer-token flow: its token server (in this process)
    /// hands out tokens signed with a key the registry trusts, to USER / PASSWORD only.
    pub fn token_auth() -> Registry {
        Self::start_with(false, true)
    }

    fn start(tls: bool) -> Registry {
        Self::start_with(tls, false)
    }

    /// An anonymous plain-HTTP registry in read-only mode: pulls work, every write is answered
    /// 405 (as a registry under maintenance, or a pull-through cache, answers).
    pub fn read_only() -> Registry {
        Self::start_full(false, false, None, Mode::ReadOnly)
    }

    /// An anonymous plain-HTTP registry as distribution ships: deletes not enabled (a DELETE
    /// is answered 405 UNSUPPORTED).
    pub fn without_deletes() -> Registry {
        Self::start_full(false, false, None, Mode::NoDeletes)
    }

    /// An anonymous TLS registry whose certificate `pki`'s private CA signed; with `mtls`, it
    /// also requires a client certificate that CA signed.
    pub fn private_ca(pki: &pki::Pki, mtls: bool) -> Registry {
        Self::start_full(false, false, Some((pki, mtls)), Mode::Normal)
    }

    fn start_with(tls: bool, token: bool) -> Registry {
        Self::start_full(tls, token, None, Mode::Normal)
    }

    fn start_full(
        tls: bool,
        token: bool,
        private: Option<(&pki::Pki, bool)>,
        mode: Mode,
    ) -> Registry {
        need("docker-registry", "docker-registry");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let token_server = token.then(|| token::TokenServer::start(dir.path()));
        let mut config = format!(
            "version: 0.1\nlog: {{level: error, accesslog: {{disabled: true}}}}\n\
             storage: {{filesystem: {{rootdirectory: {}}}, delete: {{enabled: {}}}{}}}\n\
             http: {{addr: 127.0.0.1:{port}",
            dir.path().join("storage").display(),
            mode != Mode::NoDeletes,
            if mode == Mode::ReadOnly {
                ", maintenance: {readonly: {enabled: true}}"
            } else {
                ""
            }
        );
        if tls {
            need("openssl", "openssl");
            need("htpasswd", "apache2-utils");
            let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
            self_signed(
                &key,
                &cert,
                &[
                    "-subj",
                    "/CN=127.0.0.1",
                    "-addext",
                    "subjectAltName=IP:127.0.0.1",
                ],
            );
            let out = Command::new("htpasswd")
                .args(["-Bbn", USER, PASSWORD])
                .output()
                .unwrap();
            assert!(out.status.success(), "htpasswd failed");
            std::fs::write(dir.path().join("htpasswd"), &out.stdout).unwrap();
            config.push_str(&format!(
                ", tls: {{certificate: {}, key: {}}}}}\nauth: {{htpasswd: {{realm: test, path: {}}}}}\n",
                cert.display(),
                key.display(),
                dir.path().join("htpasswd").display()
            ));
        } else if let Some((pki, mtls)) = private {
            let client_cas = if mtls {
                format!(", clientcas: [{}]", pki.ca().display())
            } else {
                String::new()
            };
            config.push_str(&format!(
                ", tls: {{certificate: {}, key: {}{client_cas}}}}}\n",
                pki.dir.join("server.crt").display(),
                pki.dir.join("server.key").display(),
            ));
        } else if let Some(t) = &token_server {
            config.push_str(&format!(
                "}}\nauth: {{token: {{realm: {}, service: {}, issuer: {}, rootcertbundle: {}}}}}\n",
                t.realm(),
                token::SERVICE,
                token::ISSUER,
                t.cert.display()
            ));
        } else {
            config.push_str("}\n");
        }
        let cfg = dir.path().join("config.yml");
        std::fs::write(&cfg, config).unwrap();
        let child = spawn(dir.path());
        let client_cert = private.filter(|(_, mtls)| *mtls).map(|(pki, _)| {
            let cert = std::fs::read(pki.dir.join("client.crt")).unwrap();
            let key = std::fs::read(pki.dir.join("client.key")).unwrap();
            ureq::tls::ClientCert::new_with_certs(
                &[ureq::tls::Certificate::from_pem(&cert).unwrap()],
                ureq::tls::PrivateKey::from_pem(&key).unwrap(),
            )
        });
        let tls = tls || private.is_some();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .disable_verification(true)
                    .client_cert(client_cert)
                    .build(),
            )
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .new_agent();
        let push_auth = match &token_server {
            Some(t) => Some(format!("Bearer {}", t.mint())),
            None if tls => Some(basic(USER, PASSWORD)),
            None => None,
        };
        let mut r = Registry {
            child,
            port,
            tls,
            push_auth,
            token_server,
            dir,
            agent,
        };
        r.wait_up();
        r
    }

    fn wait_up(&mut self) {
        let start = Instant::now();
        loop {
            if let Ok(resp) = self.agent.get(&format!("{}/v2/", self.base())).call() {
                if matches!(resp.status().as_u16(), 200 | 401) {
                    return;
                }
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                let log = std::fs::read_to_string(self.dir.path().join("registry.log"))
                    .unwrap_or_default();
                panic!("docker-registry exited with {st}:\n{log}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "registry did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// distribution's garbage collection as its documentation says to run it: the registry
    /// stopped, `garbage-collect CONFIG` (without `--delete-untagged`), then started again on
    /// the same port and storage.
    pub fn collect_garbage(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let out = Command::new("docker-registry")
            .arg("garbage-collect")
            .arg(self.dir.path().join("config.yml"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "garbage-collect: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.child = spawn(self.dir.path());
        self.wait_up();
    }

    /// The bytes the registry's storage holds.
    pub fn storage_bytes(&self) -> u64 {
        walkdir::WalkDir::new(self.dir.path().join("storage"))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
            .sum()
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn base(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.host()
        )
    }

    fn auth(
        &self,
        req: ureq::RequestBuilder<ureq::typestate::WithBody>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        match &self.push_auth {
            Some(h) => req.header("Authorization", h),
            None => req,
        }
    }

    /// Uploads a blob (POST, then PUT with the digest); returns its digest.
    pub fn push_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = sha(bytes);
        let resp = self
            .auth(
                self.agent
                    .post(&format!("{}/v2/{repo}/blobs/uploads/", self.base())),
            )
            .send_empty()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 202, "upload start");
        let loc = resp.headers()["location"].to_str().unwrap().to_string();
        let loc = if loc.starts_with("http") {
            loc
        } else {
            format!("{}{loc}", self.base())
        };
        let sep = if loc.contains('?') { '&' } else { '?' };
        let resp = self
            .auth(self.agent.put(&format!("{loc}{sep}digest={digest}")))
            .header("Content-Type", "application/octet-stream")
            .send(bytes)
            .unwrap();
        assert_eq!(resp.status().as_u16(), 201, "blob upload");
        digest
    }

    /// PUTs a manifest under a tag (or digest); returns the manifest's digest.
    pub fn push_manifest(
        &self,
        repo: &str,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> String {
        let resp = self
            .auth(
                self.agent
                    .put(&format!("{}/v2/{repo}/manifests/{reference}", self.base())),
            )
            .header("Content-Type", media_type)
            .send(bytes)
            .unwrap();
        let status = resp.status().as_u16();
        assert_eq!(
            status,
            201,
            "manifest push: {}",
            resp.into_body().read_to_string().unwrap_or_default()
        );
        sha(bytes)
    }

    /// Pushes an image's blobs and manifest under `repo:tag`; returns the manifest digest.
    pub fn push(&self, repo: &str, tag: &str, img: &Image) -> String {
        for b in img.blobs() {
            self.push_blob(repo, &b);
        }
        self.push_manifest(repo, tag, &img.media_type(), &img.manifest())
    }

    /// Pushes a multi-arch index of `images` (each with its platform).
    pub fn push_index(&self, repo: &str, tag: &str, images: &[(&str, &str, &Image)]) -> String {
        let mut entries = Vec::new();
        for (os, arch, img) in images {
            let d = self.push(repo, &sha(&img.manifest()), img);
            entries.push(serde_json::json!({
                "mediaType": img.media_type(), "digest": d, "size": img.manifest().len(),
                "platform": {"os": os, "architecture": arch}
            }));
        }
        let idx =
            serde_json::json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries});
        self.push_manifest(repo, tag, OCI_INDEX, idx.to_string().as_bytes())
    }

    /// The registry's own copy of a blob, to corrupt it.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir
            .path()
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Deletes a blob from the registry (to prove a later pull did not need it).
    pub fn delete_blob(&self, repo: &str, digest: &str) {
        self.delete(&format!("{repo}/blobs/{digest}"));
    }

    /// Deletes a manifest, and so every tag on it, from the registry.
    pub fn delete_manifest(&self, repo: &str, digest: &str) {
        self.delete(&format!("{repo}/manifests/{digest}"));
    }

    fn delete(&self, path: &str) {
        let mut req = self.agent.delete(&format!("{}/v2/{path}", self.base()));
        if let Some(h) = &self.push_auth {
            req = req.header("Authorization", h);
        }
        let st = req.call().unwrap().status().as_u16();
        assert_eq!(st, 202, "DELETE {path}");
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn basic(user: &str, pass: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

/// A docker config file with `auths.HOST.auth` = base64 `user:pass`.
pub fn auth_file(host: &str, user: &str, pass: &str) -> String {
    use base64::Engine;
    let enc = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    serde_json::json!({"auths": {host: {"auth": enc}}}).to_string()
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A self-signed certificate and its key, made with `openssl req` (`args` add the subject and
/// any extensions).
pub fn self_signed(key: &std::path::Path, cert: &std::path::Path, args: &[&str]) {
    let st = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(args)
        .arg("-keyout")
        .arg(key)
        .arg("-out")
        .arg(cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "openssl failed");
}
