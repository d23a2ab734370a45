//! cosign's key files (the encrypted private key, the PEM public key) and what a signature
//! tag holds (the simple-signing payload, the signature manifest's layers).
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::sign::{keys, payload};

fuzz_target!(|data: &[u8]| {
    let _ = keys::decrypt_private_key(data, b"hello");
    if let Ok(k) = keys::parse_public_key(data) {
        assert!(!keys::verify(&k, data, data));
    }
    if let Ok(c) = payload::parse_payload(data) {
        assert!(!c.digest.is_empty());
    }
    let _ = payload::signature_layers(data);
});
