//! Signing catalog images and deciding which images may be used, in the formats the container
//! ecosystem already reads: cosign's key files and tag-based signatures, and
//! containers-policy.json. Nothing here talks to a registry: `image::signature` reads and
//! writes the signatures, and applies a [`policy::Policy`] to every image pulled.
//!
//! | module | owns |
//! |---|---|
//! | [`keys`] | cosign's encrypted private key and PEM public key files; ECDSA P-256 sign and verify |
//! | [`passphrase`] | the key's passphrase: a file, else `COSIGN_PASSWORD`, else the caller's prompt |
//! | [`payload`] | the simple-signing payload and the `sha256-<hex>.sig` signature manifest |
//! | [`identity`] | docker references as policies compare them: scopes, `signedIdentity` rules |
//! | [`policy`] | containers-policy.json, read as containers/image reads it, and its verdicts |
//! | [`strict_json`] | JSON that refuses a key named twice |
//!
//! The cryptography is RustCrypto's (`p256`, `scrypt`, `crypto_secretbox`): nothing here is
//! written by hand.

/// A key, passphrase file, payload, signature manifest, identity or policy that opreg cannot
/// use, or a policy's refusal: the message says which and why, on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error(message.to_string())
    }
}

pub mod identity;
pub mod keys;
pub mod passphrase;
pub mod payload;
pub mod policy;
pub mod strict_json;

#[cfg(test)]
mod keys_tests;
