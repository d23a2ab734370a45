//! Key files: cosign's own test keys (tests/fixtures/cosign, with the verdicts cosign's
//! `keys_test.go` gives them), round trips, and keys of other types refused.

use super::keys::*;
use p256::pkcs8::der::pem::PemLabel;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/cosign/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn cosigns_test_keys_get_cosigns_verdicts() {
    for ok in ["cosign-pem-type.key", "sigstore-pem-type.key"] {
        let k = decrypt_private_key(&fixture(ok), b"hello").unwrap_or_else(|e| panic!("{ok}: {e}"));
        let sig = sign(&k, b"payload");
        assert!(verify(k.verifying_key(), b"payload", &sig));
        let e = decrypt_private_key(&fixture(ok), b"wrong")
            .unwrap_err()
            .to_string();
        assert!(e.contains("wrong passphrase"), "{e}");
    }
    // Its plaintext is a SEC1 key, not PKCS#8: cosign refuses it too.
    let e = decrypt_private_key(&fixture("cosign-sec1-ec.key"), b"hello")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a PKCS#8"), "{e}");
    // Unencrypted keys are not cosign key files.
    let e = decrypt_private_key(&fixture("plain-p256-pkcs8.key"), b"hello")
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"PRIVATE KEY\""), "{e}");
}

#[test]
fn a_generated_key_round_trips() {
    let k = generate();
    let text = encrypt_private_key(&k, b"pass").unwrap();
    assert!(
        text.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"),
        "{text}"
    );
    let back = decrypt_private_key(text.as_bytes(), b"pass").unwrap();
    assert_eq!(back.to_bytes(), k.to_bytes());
    let body = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>();
    use base64::Engine;
    let json = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        v["kdf"]["params"],
        serde_json::json!({"N": 65536, "r": 8, "p": 1})
    );
    assert_eq!(v["cipher"]["name"], "nacl/secretbox");
    let public = public_key_pem(k.verifying_key()).unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----\n"));
    assert_eq!(
        parse_public_key(public.as_bytes()).unwrap(),
        *k.verifying_key()
    );
    // Text around the block is allowed, as Go's pem.Decode allows it.
    let wrapped = format!("a comment\n{public}trailer\n");
    assert!(parse_public_key(wrapped.as_bytes()).is_ok());
}

/// Rewrites the scrypt N of a key file.
fn with_n(text: &str, n: u64) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let body = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>();
    let mut v: serde_json::Value = serde_json::from_slice(&b64.decode(body).unwrap()).unwrap();
    v["kdf"]["params"]["N"] = n.into();
    let json = serde_json::to_vec(&v).unwrap();
    p256::pkcs8::der::pem::encode_string(
        SIGSTORE_PRIVATE_KEY,
        p256::pkcs8::der::pem::LineEnding::LF,
        &json,
    )
    .unwrap()
}

#[test]
fn only_cosigns_scrypt_settings_are_read() {
    let text = encrypt_private_key(&generate(), b"p").unwrap();
    for n in [1024, 16384, 262144, 65537] {
        let e = decrypt_private_key(with_n(&text, n).as_bytes(), b"p")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unsupported scrypt parameters"), "{n}: {e}");
    }
    // An accepted N that is not the one used: the key derived differs.
    let e = decrypt_private_key(with_n(&text, 32768).as_bytes(), b"p")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot decrypt"), "{e}");
}

/// The DER of an unencrypted PEM fixture.
fn der_of(name: &str) -> Vec<u8> {
    let text = fixture(name);
    let (_, der) =
        p256::pkcs8::der::pem::decode_vec(String::from_utf8(text).unwrap().trim().as_bytes())
            .unwrap();
    der
}

#[test]
fn other_key_types_are_refused_with_their_name() {
    for (name, says) in [
        ("plain-ed25519-pkcs8.key", "an Ed25519 key"),
        ("plain-rsa-pkcs8.key", "an RSA key"),
    ] {
        let enc = encrypt_der(&der_of(name), b"p").unwrap();
        let e = decrypt_private_key(enc.as_bytes(), b"p")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(says) && e.contains("ECDSA P-256 keys only"),
            "{name}: {e}"
        );
    }
    let e = parse_public_key(&fixture("rsa.pub"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("an RSA key"), "{e}");
    let e = parse_public_key(&fixture("plain-p256-pkcs8.key"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"PRIVATE KEY\""), "{e}");
    assert_eq!(
        p256::pkcs8::SubjectPublicKeyInfoRef::PEM_LABEL,
        "PUBLIC KEY"
    );
}

#[test]
fn signatures_verify_only_their_payload_and_key() {
    let (a, b) = (generate(), generate());
    let sig = sign(&a, b"one");
    assert!(verify(a.verifying_key(), b"one", &sig));
    assert!(!verify(a.verifying_key(), b"two", &sig));
    assert!(!verify(b.verifying_key(), b"one", &sig));
    assert!(!verify(a.verifying_key(), b"one", b"not der"));
}
