//! Signing catalog images and deciding which images may be used, in the formats the container
//! ecosystem already reads: cosign's key files and tag-based signatures, and
//! containers-policy.json. Nothing here talks to a registry: `image::signature` reads and
//! writes the signatures, and applies a [`policy::Policy`] to every image pulled.
//!
//! | module | owns |
//! |---|---|
//! | [`keys`] | cosign's encrypted private key and PEM public key files; ECDSA P-256 sign and verify |
//! | [`payload`] | the simple-signing payload and the `sha256-<hex>.sig` signature manifest |
//! | [`identity`] | docker references as policies compare them: scopes, `signedIdentity` rules |
//! | [`policy`] | containers-policy.json, read as containers/image reads it, and its verdicts |
//! | [`strict_json`] | JSON that refuses a key named twice |
//!
//! The cryptography is RustCrypto's (`p256`, `scrypt`, `crypto_secretbox`): nothing here is
//! written by hand.

pub mod identity;
pub mod keys;
pub mod payload;
pub mod policy;
pub mod strict_json;

#[cfg(test)]
mod keys_tests;
