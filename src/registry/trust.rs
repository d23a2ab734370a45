//! Whom a registry connection trusts, as podman, skopeo and CRI-O decide it:
//!
//! * the built-in public roots (Mozilla's, as `webpki-root-certs` ships them) and the system
//!   trust store (`rustls-native-certs`, which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`);
//! * a certificate directory for the registry, as containers-certs.d(5) lays it out: every
//!   `*.crt` is a CA, and each `NAME.cert` with its `NAME.key` is a client certificate for
//!   mutual TLS. `--cert-dir DIR` names it; otherwise the first of
//!   `$HOME/.config/containers/certs.d/HOST[:PORT]/`, `/etc/containers/certs.d/HOST[:PORT]/`
//!   and `/etc/docker/certs.d/HOST[:PORT]/` that exists is used.
//!
//! A file of the directory that cannot be read or parsed is an error naming it: a CA that
//! silently does not load would turn into a confusing certificate error later. So the
//! directory is read when a client is made ([`trust`]), and the roots, read once per process,
//! when the first TLS connection is ([`Trust::config`]): a run that speaks only plain HTTP
//! never reads the system store.

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};

/// Whom connections to one registry trust: its certificate directory, read, and whether to
/// verify at all. The TLS settings are made from it at the first TLS connection.
pub struct Trust {
    /// The directory's CAs and client certificate (none without a directory).
    found: Option<Found>,
    skip_verify: bool,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("cas", &self.found.as_ref().map_or(0, |d| d.cas.len()))
            .field("skip_verify", &self.skip_verify)
            .finish_non_exhaustive()
    }
}

/// The trust of `host` (`HOST[:PORT]` as the reference names it): `cert_dir`, else its
/// certs.d directory, read now so that a bad file is an error naming it.
pub fn trust(host: &str, cert_dir: Option<&Path>, skip_verify: bool) -> Result<Trust> {
    let dir = match cert_dir {
        Some(d) => {
            if !d.is_dir() {
                bail!("--cert-dir {}: not a directory", d.display());
            }
            Some(d.to_path_buf())
        }
        None => certs_d(host),
    };
    let found = match dir {
        Some(dir) => {
            let found = read_dir(&dir)?;
            tracing::debug!(dir = %dir.display(), cas = found.cas.len(), client = found.client.is_some(), host, "certificate directory");
            Some(found)
        }
        None => None,
    };
    Ok(Trust { found, skip_verify })
}

impl Trust {
    /// The TLS settings: the built-in and system roots (read on the first call in the
    /// process), the directory's CAs and client certificate.
    pub fn config(&self) -> TlsConfig {
        let builder = TlsConfig::builder().disable_verification(self.skip_verify);
        let Some(found) = &self.found else {
            return builder.root_certs(default_roots()).build();
        };
        let mut roots: Vec<Certificate<'static>> = shared_roots().to_vec();
        roots.extend(found.cas.iter().cloned());
        builder
            .root_certs(RootCerts::new_with_certs(&roots))
            .client_cert(found.client.clone())
            .build()
    }
}

/// The directories containers-certs.d(5) looks in for `host`, in order.
pub fn certs_d_candidates(host: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        out.push(
            PathBuf::from(home)
                .join(".config/containers/certs.d")
                .join(host),
        );
    }
    out.push(Path::new("/etc/containers/certs.d").join(host));
    out.push(Path::new("/etc/docker/certs.d").join(host));
    out
}

/// The certs.d directory of `host`: the first of [`certs_d_candidates`] that exists.
pub fn certs_d(host: &str) -> Option<PathBuf> {
    certs_d_candidates(host).into_iter().find(|d| d.is_dir())
}

/// What a certificate directory holds.
struct Found {
    cas: Vec<Certificate<'static>>,
    client: Option<ClientCert>,
}

fn read_dir(dir: &Path) -> Result<Found> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("certificate directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    let mut cas = Vec::new();
    let mut client = None;
    for path in &names {
        match path.extension().and_then(|e| e.to_str()) {
            Some("crt") => cas.extend(certificates(path)?),
            Some("cert") => {
                let key = path.with_extension("key");
                if !key.is_file() {
                    bail!(
                        "client certificate {} has no key {} beside it",
                        path.display(),
                        key.display()
                    );
                }
                let chain = certificates(path)?;
                let bytes = std::fs::read(&key).with_context(|| key.display().to_string())?;
                let key = PrivateKey::from_pem(&bytes)
                    .map_err(|e| anyhow!("{}: not a PEM private key ({e})", key.display()))?;
                client = Some(ClientCert::new_with_certs(&chain, key));
            }
            Some("key") if !path.with_extension("cert").is_file() => {
                bail!(
                    "client key {} has no certificate {} beside it",
                    path.display(),
                    path.with_extension("cert").display()
                );
            }
            _ => {}
        }
    }
    Ok(Found { cas, client })
}

/// Every certificate of a PEM file; none is an error.
fn certificates(path: &Path) -> Result<Vec<Certificate<'static>>> {
    let bytes = std::fs::read(path).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for item in ureq::tls::parse_pem(&bytes) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => out.push(c),
            Ok(_) => {}
            Err(e) => bail!("{}: not a PEM certificate file ({e})", path.display()),
        }
    }
    if out.is_empty() {
        bail!("{}: holds no PEM certificate", path.display());
    }
    Ok(out)
}

/// The built-in roots and the system store, read once per process.
fn shared_roots() -> &'static [Certificate<'static>] {
    static ROOTS: OnceLock<Vec<Certificate<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots: Vec<Certificate<'static>> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|c| Certificate::from_der(c.as_ref()).to_owned())
            .collect();
        let system = rustls_native_certs::load_native_certs();
        for e in &system.errors {
            tracing::debug!(error = %e, "system trust store");
        }
        roots.extend(
            system
                .certs
                .iter()
                .map(|c| Certificate::from_der(c.as_ref()).to_owned()),
        );
        tracing::debug!(roots = roots.len(), "system trust store read");
        roots
    })
}

/// [`shared_roots`] as ureq takes them, made once (a clone shares the list).
fn default_roots() -> RootCerts {
    static ROOTS: OnceLock<RootCerts> = OnceLock::new();
    ROOTS
        .get_or_init(|| RootCerts::new_with_certs(shared_roots()))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certs_d_is_looked_up_in_containers_order() {
        let c = certs_d_candidates("reg.example:5000");
        let tail: Vec<String> = c
            .iter()
            .rev()
            .take(2)
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            tail,
            [
                "/etc/docker/certs.d/reg.example:5000",
                "/etc/containers/certs.d/reg.example:5000"
            ]
        );
    }

    #[test]
    fn a_bad_file_in_a_cert_dir_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("ca.crt"), "not a certificate").unwrap();
        let e = trust("h", Some(d.path()), false).unwrap_err().to_string();
        assert!(e.contains("ca.crt"), "{e}");
        std::fs::remove_file(d.path().join("ca.crt")).unwrap();
        std::fs::write(d.path().join("client.key"), "x").unwrap();
        let e = trust("h", Some(d.path()), false).unwrap_err().to_string();
        assert!(e.contains("client.key") && e.contains("client.cert"), "{e}");
        let e = trust("h", Some(&d.path().join("missing")), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn the_built_in_roots_are_always_there() {
        assert!(shared_roots().len() >= 100);
    }
}
