//! Reading an OCI image-layout directory as a [`BlobSource`]: manifests by digest, by tag
//! (`org.opencontainers.image.ref.name`) or the layout's only image, and blobs from
//! `blobs/sha256/`. Writing layouts is [`super::layout_writer`]'s.

use super::source::{read_limited, BlobSource, Fetched};
use anyhow::{anyhow, bail, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

/// An OCI image-layout directory (`oci-layout`, `index.json`, `blobs/sha256/…`).
pub struct Layout {
    dir: PathBuf,
}

impl Layout {
    pub fn open(dir: &Path) -> Result<Layout> {
        if !dir.join("index.json").is_file() {
            bail!(
                "{} is not an OCI image layout (no index.json)",
                dir.display()
            );
        }
        Ok(Layout {
            dir: dir.to_path_buf(),
        })
    }

    fn blob_path(&self, digest: &str) -> Result<PathBuf> {
        blob_path(&self.dir, digest)
    }
}

/// Where the layout at `dir` keeps the blob `digest` (`blobs/<algorithm>/<hex>`; refused
/// unless a valid digest).
pub fn blob_path(dir: &Path, digest: &str) -> Result<PathBuf> {
    let rel = crate::digest::blob_path(digest)
        .ok_or_else(|| anyhow::anyhow!("unsupported or malformed digest {digest:?}"))?;
    Ok(dir.join(rel))
}

/// The blobs in the layout at `dir`, as `blobs/<algorithm>/<hex>` paths (none when it has no
/// `blobs/`). Only digests: a temporary file a write in progress (or a killed one) left is no
/// blob.
pub fn blobs(dir: &Path) -> Result<std::collections::BTreeSet<PathBuf>> {
    let mut out = std::collections::BTreeSet::new();
    let root = dir.join("blobs");
    let algorithms = match std::fs::read_dir(&root) {
        Ok(list) => list,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(anyhow!("{}: {e}", root.display())),
    };
    for alg in algorithms {
        let alg = alg.map_err(|e| anyhow!("{}: {e}", root.display()))?;
        if !alg.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let list =
            std::fs::read_dir(alg.path()).map_err(|e| anyhow!("{}: {e}", alg.path().display()))?;
        for blob in list {
            let blob = blob.map_err(|e| anyhow!("{}: {e}", alg.path().display()))?;
            let name = blob.file_name();
            let hex = name.to_str().is_some_and(|n| {
                !n.is_empty() && n.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
            });
            if hex && blob.file_type().is_ok_and(|t| t.is_file()) {
                out.insert(Path::new("blobs").join(alg.file_name()).join(name));
            }
        }
    }
    Ok(out)
}

/// The entry of the layout at `dir` named `name`, if any (none when there is no layout yet).
pub fn named(dir: &Path, name: &str, limit: u64) -> Result<Option<Entry>> {
    if !dir.join("index.json").is_file() {
        return Ok(None);
    }
    Ok(Layout::open(dir)?
        .entries(limit)?
        .into_iter()
        .find(|e| e.name == name))
}

/// One entry of a layout's `index.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its `org.opencontainers.image.ref.name` ("" when it has none).
    pub name: String,
    pub digest: String,
    pub media_type: String,
}

impl Layout {
    /// The entries of `index.json`, in its order.
    pub fn entries(&self, limit: u64) -> Result<Vec<Entry>> {
        let index = read_limited(
            std::fs::File::open(self.dir.join("index.json"))?,
            limit,
            "layout's index.json",
        )?;
        let v: serde_json::Value =
            serde_json::from_slice(&index).map_err(|e| anyhow!("malformed index.json: {e}"))?;
        let text = |e: &serde_json::Value, p: &str| {
            e.pointer(p)
                .and_then(|n| n.as_str())
                .unwrap_or("")
                .to_string()
        };
        Ok(v.get("manifests")
            .and_then(|m| m.as_array())
            .map(|a| a.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|e| Entry {
                name: text(e, "/annotations/org.opencontainers.image.ref.name"),
                digest: text(e, "/digest"),
                media_type: text(e, "/mediaType"),
            })
            .collect())
    }
}

impl BlobSource for Layout {
    /// `reference` is a digest, a tag (`org.opencontainers.image.ref.name`), or "" for the
    /// layout's only image.
    fn manifest(&mut self, reference: &str, limit: u64) -> Result<Fetched> {
        let digest = if crate::digest::is_valid(reference) {
            reference.to_string()
        } else {
            let entries = self.entries(limit)?;
            let pick = if reference.is_empty() {
                match entries.as_slice() {
                    [only] => Some(only.clone()),
                    _ => bail!(
                        "the layout holds {} images; name one with oci:DIR:TAG",
                        entries.len()
                    ),
                }
            } else {
                entries.into_iter().find(|e| e.name == reference)
            };
            let Some(e) = pick else {
                bail!("tag {reference:?} not found in the layout's index.json");
            };
            let d = e.digest.as_str();
            let mt = Some(e.media_type.clone()).filter(|t| !t.is_empty());
            let bytes = read_limited(
                std::fs::File::open(self.blob_path(d)?)
                    .map_err(|e| anyhow!("manifest {d}: {e}"))?,
                limit,
                "manifest",
            )?;
            return Ok(Fetched {
                bytes,
                content_type: mt,
                digest: Some(d.to_string()),
            });
        };
        let bytes = read_limited(
            std::fs::File::open(self.blob_path(&digest)?)
                .map_err(|e| anyhow!("manifest {digest}: {e}"))?,
            limit,
            "manifest",
        )?;
        Ok(Fetched {
            bytes,
            content_type: None,
            digest: None,
        })
    }

    fn blob(&mut self, digest: &str) -> Result<Box<dyn Read + Send>> {
        let p = self.blob_path(digest)?;
        Ok(Box::new(
            std::fs::File::open(&p).map_err(|e| anyhow!("blob {digest}: {e}"))?,
        ))
    }
}
