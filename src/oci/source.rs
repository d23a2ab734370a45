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
    /// The manifest named, or `None` when the source says it has none by that name (a
    /// registry's 404); any other failure is an error.
    fn manifest_if_any(&mut self, reference: &str, limit: u64) -> Result<Option<Fetched>> {
        self.manifest(reference, limit).map(Some)
    }
    /// The answer to a GET of `rest` below the repository's API path (`referrers/DIGEST`), at
    /// most `limit` bytes; `None` when the source has no such thing or no such API.
    fn get_if_any(&mut self, _rest: &str, _limit: u64) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }
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
