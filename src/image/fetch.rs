//! What pulling reads an image from: the [`BlobSource`] trait a registry and an OCI layout
//! both implement, and the size-limited read every manifest and small blob goes through.

use anyhow::{bail, Result};
use std::io::Read;

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

/// Reads at most `limit` bytes; more is an error naming `what`.
pub fn read_limited(r: impl Read, limit: u64, what: &str) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        bail!("the {what} is over the size limit of {limit} bytes");
    }
    Ok(buf)
}
