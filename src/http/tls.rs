//! `--tls-cert` and `--tls-key`: the rustls server configuration both listeners use, with the
//! ring provider the registry client already uses. Every error is one line naming the file.

use anyhow::{anyhow, bail, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The server configuration for a PEM certificate chain and its PEM private key. `alpn` lists
/// the protocols offered (`h2` for gRPC; `h2` and `http/1.1` for the HTTP port).
pub fn server_config(cert: &Path, key: &Path, alpn: &[&[u8]]) -> Result<Arc<rustls::ServerConfig>> {
    let certs = read_certs(cert)?;
    let key_der = read_key(key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| anyhow!("TLS setup failed: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => anyhow!(
                "--tls-key {}: not the private key of the certificate in --tls-cert {}",
                key.display(),
                cert.display()
            ),
            e => anyhow!(
                "--tls-key {}: cannot be used with --tls-cert {}: {e}",
                key.display(),
                cert.display()
            ),
        })?;
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(cfg))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow!("--tls-cert {}: cannot read: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("--tls-cert {}: invalid PEM: {e}", path.display()))?;
    if certs.is_empty() {
        bail!(
            "--tls-cert {}: no CERTIFICATE block in the PEM file",
            path.display()
        );
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow!("--tls-key {}: cannot read: {e}", path.display()))?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => anyhow!(
            "--tls-key {}: no PRIVATE KEY block in the PEM file",
            path.display()
        ),
        e => anyhow!("--tls-key {}: invalid PEM: {e}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let junk = d.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = server_config(&junk, &junk, &[]).unwrap_err().to_string();
        assert!(
            e.starts_with("--tls-cert ") && e.contains("junk.pem"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let missing = d.path().join("missing.pem");
        let e = server_config(&missing, &junk, &[]).unwrap_err().to_string();
        assert!(
            e.contains("missing.pem") && e.contains("cannot read"),
            "{e}"
        );
    }
}
