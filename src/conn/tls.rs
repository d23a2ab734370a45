//! TLS with rustls and the ring provider the registry client already uses: the server
//! configuration both listeners use (`--tls-cert`, `--tls-key`), and the client configuration
//! of the health probe (`-tls`, `-tls-ca-cert`, `-tls-no-verify`). Every error is one line
//! naming the file.

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
    read_pem_certs("--tls-cert", path)
}

fn read_pem_certs(flag: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let bytes =
        std::fs::read(path).map_err(|e| anyhow!("{flag} {}: cannot read: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("{flag} {}: invalid PEM: {e}", path.display()))?;
    if certs.is_empty() {
        bail!(
            "{flag} {}: no CERTIFICATE block in the PEM file",
            path.display()
        );
    }
    Ok(certs)
}

/// How a client checks the server's certificate.
pub enum Trust<'a> {
    /// The Mozilla roots (webpki-roots, already in the tree through the registry client).
    PublicRoots,
    /// The certificates in this PEM file (the flag that named it, for errors).
    CaFile(&'a str, &'a Path),
    /// No check at all (grpc_health_probe's `-tls-no-verify`).
    NoVerify,
}

/// A client configuration offering HTTP/2 (gRPC).
pub fn client_config(trust: Trust) -> Result<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| anyhow!("TLS setup failed: {e}"))?;
    let mut cfg = match trust {
        Trust::NoVerify => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth(),
        Trust::PublicRoots | Trust::CaFile(..) => {
            let mut roots = rustls::RootCertStore::empty();
            match trust {
                Trust::CaFile(flag, path) => {
                    for c in read_pem_certs(flag, path)? {
                        roots.add(c).map_err(|e| {
                            anyhow!("{flag} {}: not a CA certificate: {e}", path.display())
                        })?;
                    }
                }
                _ => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// Accepts any certificate; signatures are still checked with the provider's algorithms, so
/// the handshake itself stays sound.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
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
