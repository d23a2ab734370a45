//! cosign's key files: the private key encrypted with a passphrase (`cosign generate-key-pair`'s
//! `cosign.key`) and the public key (`cosign.pub`).
//!
//! The private key is a PEM block `ENCRYPTED SIGSTORE PRIVATE KEY` (older cosign wrote
//! `ENCRYPTED COSIGN PRIVATE KEY`; both are read, the first is written) whose body is the JSON
//! of go-securesystemslib's `encrypted` package: `{"kdf":{"name":"scrypt","params":{"N":…,"r":8,
//! "p":1},"salt":B64},"cipher":{"name":"nacl/secretbox","nonce":B64},"ciphertext":B64}`. The
//! passphrase and the salt give a 32-byte secretbox key through scrypt; the plaintext is the
//! PKCS#8 DER of the private key. Only the three scrypt settings that package accepts are read
//! (N of 2^15, 2^16 or 2^17 with r=8, p=1); 2^16 is written, as cosign does now.
//!
//! The public key is a PEM `PUBLIC KEY` block, a SubjectPublicKeyInfo. opreg signs and verifies
//! with ECDSA P-256 and SHA-256 only: a key of any other type is refused, saying which it is.

use super::Error;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::XSalsa20Poly1305;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::Signature;
pub use p256::ecdsa::{SigningKey, VerifyingKey};
use p256::pkcs8::der::pem::LineEnding;
use p256::pkcs8::der::Decode;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey};
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

/// The PEM type written for private keys.
pub const SIGSTORE_PRIVATE_KEY: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
/// The PEM type older cosign versions wrote; read too.
pub const COSIGN_PRIVATE_KEY: &str = "ENCRYPTED COSIGN PRIVATE KEY";

/// scrypt's N as written (2^16, go-securesystemslib's "standard" strength).
const WRITTEN_LOG_N: u8 = 16;

/// id-ecPublicKey and the prime256v1 curve.
const EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const PRIME256V1: &str = "1.2.840.10045.3.1.7";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Encrypted {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kdf {
    name: String,
    params: ScryptParams,
    salt: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScryptParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cipher {
    name: String,
    nonce: String,
}

/// A new ECDSA P-256 private key.
pub fn generate() -> SigningKey {
    SigningKey::random(&mut OsRng)
}

/// `key` as cosign's encrypted private key file (PEM text).
pub fn encrypt_private_key(key: &SigningKey, passphrase: &[u8]) -> Result<String, Error> {
    let der = key
        .to_pkcs8_der()
        .map_err(|e| Error::from(format!("cannot encode the private key: {e}")))?;
    encrypt_der(der.as_bytes(), passphrase)
}

/// PKCS#8 DER, encrypted into cosign's key file format.
pub(crate) fn encrypt_der(der: &[u8], passphrase: &[u8]) -> Result<String, Error> {
    let mut salt = [0u8; 32];
    let mut nonce = [0u8; 24];
    OsRng.fill_bytes(&mut salt);
    OsRng.fill_bytes(&mut nonce);
    let box_key = derive(passphrase, &salt, WRITTEN_LOG_N)?;
    let sealed = XSalsa20Poly1305::new(&box_key.into())
        .encrypt(&nonce.into(), der)
        .map_err(|_| Error::from("cannot encrypt the private key"))?;
    let body = Encrypted {
        kdf: Kdf {
            name: "scrypt".into(),
            params: ScryptParams {
                n: 1 << WRITTEN_LOG_N,
                r: 8,
                p: 1,
            },
            salt: B64.encode(salt),
        },
        cipher: Cipher {
            name: "nacl/secretbox".into(),
            nonce: B64.encode(nonce),
        },
        ciphertext: B64.encode(sealed),
    };
    let json = serde_json::to_vec(&body).map_err(|e| Error::from(e.to_string()))?;
    p256::pkcs8::der::pem::encode_string(SIGSTORE_PRIVATE_KEY, LineEnding::LF, &json)
        .map_err(|e| Error::from(format!("cannot write the PEM block: {e}")))
}

/// The scrypt key for secretbox.
fn derive(passphrase: &[u8], salt: &[u8], log_n: u8) -> Result<[u8; 32], Error> {
    let params = scrypt::Params::new(log_n, 8, 1, 32)
        .map_err(|e| Error::from(format!("invalid scrypt parameters: {e}")))?;
    let mut out = [0u8; 32];
    scrypt::scrypt(passphrase, salt, &params, &mut out)
        .map_err(|e| Error::from(format!("scrypt failed: {e}")))?;
    Ok(out)
}

/// One PEM block: its type and its body. Text before and after the block is allowed, as Go's
/// `pem.Decode` allows it.
fn pem_block(text: &[u8]) -> Result<(String, Vec<u8>), Error> {
    let s =
        std::str::from_utf8(text).map_err(|_| Error::from("not a PEM file (not UTF-8 text)"))?;
    let start = s
        .find("-----BEGIN ")
        .ok_or_else(|| Error::from("not a PEM file (no -----BEGIN line)"))?;
    let rest = &s[start..];
    let end_marker = rest
        .find("-----END ")
        .ok_or_else(|| Error::from("not a PEM file (no -----END line)"))?;
    let end = rest[end_marker..]
        .find('\n')
        .map(|i| end_marker + i + 1)
        .unwrap_or(rest.len());
    let block = rest[..end].trim_end().replace("\r\n", "\n");
    let (label, der) = p256::pkcs8::der::pem::decode_vec(block.as_bytes())
        .map_err(|e| Error::from(format!("not a valid PEM block: {e}")))?;
    Ok((label.to_string(), der))
}

/// Reads cosign's encrypted private key, decrypting it with `passphrase`.
pub fn decrypt_private_key(text: &[u8], passphrase: &[u8]) -> Result<SigningKey, Error> {
    let (label, body) = pem_block(text)?;
    if label != SIGSTORE_PRIVATE_KEY && label != COSIGN_PRIVATE_KEY {
        return Err(Error::from(format!(
            "a PEM block of type {label:?}: opreg reads cosign's encrypted private keys ({SIGSTORE_PRIVATE_KEY:?} or {COSIGN_PRIVATE_KEY:?})"
        )));
    }
    let enc: Encrypted = serde_json::from_slice(&body)
        .map_err(|e| Error::from(format!("not cosign's encrypted key format: {e}")))?;
    if enc.kdf.name != "scrypt" {
        return Err(Error::from(format!(
            "unknown key derivation {:?}",
            enc.kdf.name
        )));
    }
    if enc.cipher.name != "nacl/secretbox" {
        return Err(Error::from(format!("unknown cipher {:?}", enc.cipher.name)));
    }
    let p = &enc.kdf.params;
    let log_n = match (p.n, p.r, p.p) {
        (32768, 8, 1) => 15,
        (65536, 8, 1) => 16,
        (131072, 8, 1) => 17,
        _ => {
            return Err(Error::from(format!(
                "unsupported scrypt parameters N={} r={} p={} (accepted: N of 32768, 65536 or 131072 with r=8, p=1)",
                p.n, p.r, p.p
            )))
        }
    };
    let b64 = |what: &str, v: &str| {
        B64.decode(v)
            .map_err(|e| Error::from(format!("{what}: {e}")))
    };
    let salt = b64("salt", &enc.kdf.salt)?;
    let nonce = b64("nonce", &enc.cipher.nonce)?;
    let sealed = b64("ciphertext", &enc.ciphertext)?;
    let nonce: [u8; 24] = nonce
        .try_into()
        .map_err(|_| Error::from("the nonce is not 24 bytes"))?;
    let box_key = derive(passphrase, &salt, log_n)?;
    let der = XSalsa20Poly1305::new(&box_key.into())
        .decrypt(&nonce.into(), sealed.as_slice())
        .map_err(|_| Error::from("cannot decrypt: wrong passphrase, or a damaged key file"))?;
    private_key_from_pkcs8(&der)
}

/// An ECDSA P-256 key from PKCS#8 DER; any other key type is refused, naming it.
fn private_key_from_pkcs8(der: &[u8]) -> Result<SigningKey, Error> {
    let info = p256::pkcs8::PrivateKeyInfo::from_der(der)
        .map_err(|_| Error::from("the decrypted key is not a PKCS#8 private key"))?;
    check_algorithm(
        &info.algorithm.oid.to_string(),
        info.algorithm
            .parameters_oid()
            .ok()
            .map(|o| o.to_string())
            .as_deref(),
    )?;
    SigningKey::from_pkcs8_der(der)
        .map_err(|e| Error::from(format!("invalid ECDSA P-256 private key: {e}")))
}

/// Refuses any key but ECDSA P-256, with the key type's name.
fn check_algorithm(oid: &str, curve: Option<&str>) -> Result<(), Error> {
    let kind = match oid {
        EC_PUBLIC_KEY => match curve {
            Some(PRIME256V1) => return Ok(()),
            Some("1.3.132.0.34") => "an ECDSA P-384 key",
            Some("1.3.132.0.35") => "an ECDSA P-521 key",
            _ => "an ECDSA key on another curve",
        },
        "1.2.840.113549.1.1.1" | "1.2.840.113549.1.1.10" => "an RSA key",
        "1.3.101.112" => "an Ed25519 key",
        "1.3.101.113" => "an Ed448 key",
        _ => "a key of an unknown type",
    };
    Err(Error::from(format!(
        "{kind} ({oid}): opreg signs and verifies with ECDSA P-256 keys only"
    )))
}

/// The public key as a PEM `PUBLIC KEY` block.
pub fn public_key_pem(key: &VerifyingKey) -> Result<String, Error> {
    key.to_public_key_pem(LineEnding::LF)
        .map_err(|e| Error::from(format!("cannot encode the public key: {e}")))
}

/// Reads a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo) holding an ECDSA P-256 key.
pub fn parse_public_key(text: &[u8]) -> Result<VerifyingKey, Error> {
    let (label, der) = pem_block(text)?;
    if label != "PUBLIC KEY" {
        return Err(Error::from(format!(
            "a PEM block of type {label:?}: a public key is a \"PUBLIC KEY\" block"
        )));
    }
    let spki = p256::pkcs8::spki::SubjectPublicKeyInfoRef::from_der(&der)
        .map_err(|e| Error::from(format!("not a SubjectPublicKeyInfo: {e}")))?;
    check_algorithm(
        &spki.algorithm.oid.to_string(),
        spki.algorithm
            .parameters_oid()
            .ok()
            .map(|o| o.to_string())
            .as_deref(),
    )?;
    let point = spki
        .subject_public_key
        .as_bytes()
        .ok_or_else(|| Error::from("the public key has unused bits"))?;
    VerifyingKey::from_sec1_bytes(point).map_err(|_| Error::from("not a point on P-256"))
}

/// ECDSA-SHA256 over `payload`, ASN.1 DER encoded (what cosign puts, base64, in the
/// signature annotation).
pub fn sign(key: &SigningKey, payload: &[u8]) -> Vec<u8> {
    let sig: Signature = key.sign(payload);
    sig.to_der().as_bytes().to_vec()
}

/// True when `der` is a valid ECDSA-SHA256 signature of `payload` by `key`.
pub fn verify(key: &VerifyingKey, payload: &[u8], der: &[u8]) -> bool {
    Signature::from_der(der).is_ok_and(|s| key.verify(payload, &s).is_ok())
}

/// The DER of the SubjectPublicKeyInfo, to tell two keys apart.
pub fn public_key_der(key: &VerifyingKey) -> Vec<u8> {
    key.to_public_key_der()
        .map(|d| d.as_bytes().to_vec())
        .unwrap_or_default()
}

/// The largest key file read.
const MAX_KEY_FILE: u64 = 1 << 20;

/// A file of at most `limit` bytes (a key or policy file: never a device that never ends).
pub fn read_small_file(path: &std::path::Path, limit: u64) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .map_err(fail)?
        .take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(fail)?;
    if buf.len() as u64 > limit {
        return Err(Error::from(format!(
            "{}: over {limit} bytes",
            path.display()
        )));
    }
    Ok(buf)
}

/// Reads and decrypts the private key file `path`; the error names the file.
pub fn read_private_key_file(
    path: &std::path::Path,
    passphrase: &[u8],
) -> Result<SigningKey, Error> {
    let text = read_small_file(path, MAX_KEY_FILE)?;
    decrypt_private_key(&text, passphrase)
        .map_err(|e| Error::from(format!("{}: {e}", path.display())))
}

/// Reads the public key file `path`; the error names the file.
pub fn read_public_key_file(path: &std::path::Path) -> Result<VerifyingKey, Error> {
    let text = read_small_file(path, MAX_KEY_FILE)?;
    parse_public_key(&text).map_err(|e| Error::from(format!("{}: {e}", path.display())))
}

/// Writes a new key pair as `PREFIX.key` (mode 0600) and `PREFIX.pub`, refusing to replace
/// either. Each file is written whole or not at all; returns both paths.
pub fn generate_key_pair(
    prefix: &std::path::Path,
    passphrase: &[u8],
) -> Result<(std::path::PathBuf, std::path::PathBuf), Error> {
    let with = |ext: &str| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(ext);
        std::path::PathBuf::from(p)
    };
    let (private, public) = (with(".key"), with(".pub"));
    for p in [&private, &public] {
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(Error::from(format!(
                "{} exists already: remove it, or write elsewhere with --output-key-prefix",
                p.display()
            )));
        }
    }
    let key = generate();
    let private_text = encrypt_private_key(&key, passphrase)?;
    let public_text = public_key_pem(key.verifying_key())?;
    write_new(&private, private_text.as_bytes(), 0o600)?;
    if let Err(e) = write_new(&public, public_text.as_bytes(), 0o644) {
        let _ = std::fs::remove_file(&private);
        return Err(e);
    }
    Ok((private, public))
}

/// Writes `bytes` to a temporary file beside `path` with `mode`, then moves it there without
/// replacing anything.
fn write_new(path: &std::path::Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    use crate::atomic::{Mode, Options};
    let opts = Options::mode(Mode::Exact(mode))
        .replace(false)
        .named(".opreg-key-", "");
    crate::atomic::write(path, bytes, &opts)
        .map_err(|e| Error::from(format!("{}: {e}", path.display())))
}
