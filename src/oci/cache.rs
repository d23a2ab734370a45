//! The image cache: blobs (manifests, configs, layers) stored by digest under
//! `DIR/blobs/ALGORITHM/HEX`, and the reader that verifies every blob as it streams.
//!
//! A blob is first written to a temporary file under `DIR/tmp/` while its digest is computed,
//! and renamed into place only once digest and size match, so a killed pull leaves at most a
//! stray temp file (removed by a later run), never a wrong blob under a digest's name.

use anyhow::{bail, Context, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A content-addressed blob store.
#[derive(Clone, Debug)]
pub struct BlobCache {
    root: PathBuf,
}

/// The default cache directory: `$XDG_CACHE_HOME/opreg/images`, else `~/.cache/opreg/images`.
pub fn default_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_CACHE_HOME")
        .or_else(|| env("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("opreg/images"))
}

impl BlobCache {
    pub fn open(dir: &Path) -> Result<BlobCache> {
        for sub in ["blobs/sha256", "blobs/sha384", "blobs/sha512", "tmp"] {
            std::fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("cannot create the image cache {}", dir.display()))?;
        }
        let c = BlobCache {
            root: dir.to_path_buf(),
        };
        c.remove_stale_temp_files();
        Ok(c)
    }

    pub fn dir(&self) -> &Path {
        &self.root
    }

    fn path(&self, digest: &str) -> PathBuf {
        match crate::digest::blob_path(digest) {
            Some(p) => self.root.join(p),
            // Never reached with a verified digest; a name no blob has.
            None => self.root.join("blobs/invalid"),
        }
    }

    /// The cached blob, if any.
    pub fn open_blob(&self, digest: &str) -> Option<std::fs::File> {
        std::fs::File::open(self.path(digest)).ok()
    }

    /// Removes a blob found to be corrupt.
    pub fn evict(&self, digest: &str) {
        let _ = std::fs::remove_file(self.path(digest));
    }

    /// Stores verified bytes.
    pub fn put(&self, digest: &str, bytes: &[u8]) -> Result<()> {
        if crate::digest::blob_path(digest).is_none() {
            bail!("unsupported or malformed digest {digest:?}");
        }
        let tmp = self.root.join("tmp");
        let opts = crate::atomic::Options::default().temp_dir(&tmp);
        crate::atomic::write(&self.path(digest), bytes, &opts)?;
        Ok(())
    }

    /// Temp files and directories of pulls killed more than an hour ago.
    fn remove_stale_temp_files(&self) {
        let Ok(entries) = std::fs::read_dir(self.root.join("tmp")) else {
            return;
        };
        for e in entries.flatten() {
            // A directory (an image being unpacked) is stale only when nothing in it has
            // changed for the hour: writing deep inside it does not touch its own time.
            let old = walkdir::WalkDir::new(e.path()).into_iter().all(|f| {
                f.ok()
                    .and_then(|f| f.metadata().ok())
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|d| d.as_secs() > 3600)
            });
            if old {
                // Blobs are files; images being unpacked are directories.
                let _ =
                    std::fs::remove_file(e.path()).or_else(|_| std::fs::remove_dir_all(e.path()));
            }
        }
    }
}

/// A blob stream that is hashed and counted as it is read ([`crate::digest::Verifying`]),
/// optionally copied into the cache. Reading past the descriptor's size, or reaching the end
/// with the wrong digest, is an error.
pub struct Verify<R: Read> {
    inner: crate::digest::Verifying<R>,
    digest: String,
    tee: Option<crate::atomic::File>,
}

impl<R: Read> Verify<R> {
    /// Verifies `inner` against `digest` and `size`; with `cache`, also stores it there.
    pub fn new(inner: R, digest: &str, size: u64, cache: Option<&BlobCache>) -> Result<Self> {
        let inner = crate::digest::Verifying::new(inner, digest, Some(size))?;
        let tee = match cache {
            Some(c) => Some(crate::atomic::File::create(
                &c.path(digest),
                &crate::atomic::Options::default().temp_dir(&c.root.join("tmp")),
            )?),
            None => None,
        };
        Ok(Verify {
            inner,
            digest: digest.to_string(),
            tee,
        })
    }

    /// Reads what the consumer left, then checks the digest and moves the cached copy into
    /// place. Call it whether or not the consumer succeeded: a digest mismatch explains most
    /// consumer failures better than the consumer's own error.
    pub fn finish(mut self) -> Result<()> {
        let drained = std::io::copy(&mut self, &mut std::io::sink());
        if let Some(f) = self.inner.failure() {
            bail!("{f}");
        }
        drained?;
        if let Some(tmp) = self.tee.take() {
            tmp.commit()
                .with_context(|| format!("cannot store {} in the image cache", self.digest))?;
        }
        Ok(())
    }
}

impl<R: Read> Read for Verify<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(t) = &mut self.tee {
            t.write_all(&buf[..n])?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_blobs_are_cached_and_bad_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = BlobCache::open(dir.path()).unwrap();
        let good = b"hello layer";
        let d = crate::digest::sha256(good);
        let mut v = Verify::new(&good[..], &d, good.len() as u64, Some(&cache)).unwrap();
        let mut first = [0u8; 5];
        v.read_exact(&mut first).unwrap();
        v.finish().unwrap();
        assert_eq!(std::fs::read(cache.path(&d)).unwrap(), good);

        let other = crate::digest::sha256(b"something else");
        let v = Verify::new(&good[..], &other, good.len() as u64, Some(&cache)).unwrap();
        let e = v.finish().unwrap_err().to_string();
        assert!(e.contains("digest mismatch"), "{e}");
        assert!(cache.open_blob(&other).is_none());
        assert_eq!(
            std::fs::read_dir(dir.path().join("tmp")).unwrap().count(),
            0
        );

        let v = Verify::new(&good[..], &d, 3, None).unwrap();
        assert!(v.finish().is_err());
    }
}
