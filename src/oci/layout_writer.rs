//! Writing OCI image layouts (`oci-layout`, `index.json`, `blobs/sha256/HEX`): blobs go in
//! first, each through a temporary file renamed into place once its digest is checked, and
//! `index.json` last, rewritten whole by a rename, so that a layout never names a blob it does
//! not hold. Every file is created `0644` less the umask, as skopeo writes layouts, so that
//! another user (a container runtime's, say) can read them. Reading a layout is
//! [`super::layout_reader::Layout`]'s.

use super::cache::Verify;
use super::source::BlobSource;
use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The annotation that names an image in a layout's `index.json`.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// Copies running at the same time rewrite the one index.json in turn.
static INDEX: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A layout being written (created if missing).
pub struct LayoutWriter {
    dir: PathBuf,
}

/// A descriptor as the layout's `index.json` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Top {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
}

impl LayoutWriter {
    pub fn create(dir: &Path) -> Result<LayoutWriter> {
        std::fs::create_dir_all(dir.join("blobs/sha256"))
            .with_context(|| format!("cannot create the image layout {}", dir.display()))?;
        let marker = dir.join("oci-layout");
        if !marker.exists() {
            std::fs::write(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        Ok(LayoutWriter {
            dir: dir.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A file put in place at `target`, readable by all (less the umask). Not synced, as
    /// before: a layout is an export a failed run writes again.
    fn temp_for(target: &Path) -> Result<crate::atomic::File> {
        use crate::atomic::{Mode, Options};
        let opts = Options::mode(Mode::Create(0o644)).sync(false);
        let dir = crate::atomic::parent(target);
        if !dir.is_dir() {
            // blobs/sha384 or blobs/sha512: only blobs/sha256 is made with the layout.
            std::fs::create_dir_all(dir)?;
        }
        Ok(crate::atomic::File::create(target, &opts)?)
    }

    fn blob_path(&self, digest: &str) -> Result<PathBuf> {
        super::layout_reader::blob_path(&self.dir, digest)
    }

    /// True when the layout already holds the blob.
    pub fn has(&self, digest: &str) -> bool {
        self.blob_path(digest).is_ok_and(|p| p.is_file())
    }

    /// Stores small bytes (a manifest, a config) under their digest; returns the digest.
    pub fn put(&self, bytes: &[u8]) -> Result<String> {
        let digest = crate::digest::sha256(bytes);
        if !self.has(&digest) {
            let mut t = Self::temp_for(&self.blob_path(&digest)?)?;
            t.write_all(bytes)?;
            t.commit()?;
        }
        Ok(digest)
    }

    /// Moves a file whose digest the caller computed into the layout (copies it when it is on
    /// another file system).
    pub fn adopt(&self, file: &Path, digest: &str) -> Result<()> {
        let dest = self.blob_path(digest)?;
        if dest.is_file() {
            return Ok(());
        }
        if crate::atomic::move_path(file, &dest, false).is_err() {
            let mut t = Self::temp_for(&dest)?;
            std::io::copy(&mut std::fs::File::open(file)?, &mut t)?;
            t.commit()?;
        }
        Ok(())
    }

    /// Copies a blob from `src`, verifying it against `digest` and `size`.
    pub fn copy_from(&self, src: &mut dyn BlobSource, digest: &str, size: u64) -> Result<()> {
        if self.has(digest) {
            return Ok(());
        }
        let mut v = Verify::new(src.blob(digest)?, digest, size, None)?;
        let mut t = Self::temp_for(&self.blob_path(digest)?)?;
        let copied = std::io::copy(&mut v, &mut t);
        v.finish()?;
        copied?;
        t.commit()?;
        Ok(())
    }

    /// Lists `top` in `index.json`, named `tag` when given. A named entry replaces the entry of
    /// that name; an unnamed one replaces an unnamed entry of the same digest, and never an
    /// entry with a name (as skopeo writes an untagged `oci:DIR`). Call it last.
    pub fn tag(&self, top: &Top, tag: Option<&str>) -> Result<()> {
        let _turn = INDEX.lock().unwrap_or_else(|e| e.into_inner());
        let index_path = self.dir.join("index.json");
        let mut index: Value = match std::fs::read(&index_path) {
            Ok(b) => serde_json::from_slice(&b)
                .map_err(|e| anyhow!("{}: malformed index.json: {e}", self.dir.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                json!({"schemaVersion": 2, "mediaType": super::manifest::OCI_INDEX, "manifests": []})
            }
            Err(e) => return Err(e.into()),
        };
        let mut entry = json!({
            "mediaType": top.media_type, "digest": top.digest, "size": top.size,
        });
        if let Some(t) = tag {
            entry["annotations"] = json!({ REF_NAME: t });
        }
        let manifests = index
            .get_mut("manifests")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| anyhow!("{}: index.json has no manifests", self.dir.display()))?;
        manifests.retain(|m| match tag {
            Some(t) => {
                m.pointer("/annotations/org.opencontainers.image.ref.name") != Some(&Value::from(t))
            }
            None => {
                m.get("digest") != Some(&Value::from(top.digest.as_str()))
                    || m.pointer("/annotations/org.opencontainers.image.ref.name")
                        .is_some_and(|n| n.as_str() != Some(""))
            }
        });
        manifests.push(entry);
        let mut t = Self::temp_for(&index_path)?;
        t.write_all(&serde_json::to_vec(&index)?)?;
        t.commit()?;
        Ok(())
    }

    /// Takes the entries named `names` out of `index.json` (their blobs stay until
    /// [`LayoutWriter::collect`]); how many went.
    pub fn untag(&self, names: &std::collections::BTreeSet<String>) -> Result<usize> {
        let _turn = INDEX.lock().unwrap_or_else(|e| e.into_inner());
        let index_path = self.dir.join("index.json");
        let bytes =
            std::fs::read(&index_path).with_context(|| format!("{}", index_path.display()))?;
        let mut index: Value = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow!("{}: malformed index.json: {e}", self.dir.display()))?;
        let manifests = index
            .get_mut("manifests")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| anyhow!("{}: index.json has no manifests", self.dir.display()))?;
        let before = manifests.len();
        manifests.retain(|m| {
            m.pointer("/annotations/org.opencontainers.image.ref.name")
                .and_then(Value::as_str)
                .is_none_or(|n| !names.contains(n))
        });
        let gone = before - manifests.len();
        if gone > 0 {
            let mut t = Self::temp_for(&index_path)?;
            t.write_all(&serde_json::to_vec(&index)?)?;
            t.commit()?;
        }
        Ok(gone)
    }

    /// Removes every blob no entry of `index.json` reaches (through indexes, manifests,
    /// configs, layers); returns their paths, `blobs/<algorithm>/<hex>`, sorted. A manifest
    /// that cannot be read stops it before anything is removed.
    pub fn collect(&self, limit: u64) -> Result<Vec<PathBuf>> {
        let _turn = INDEX.lock().unwrap_or_else(|e| e.into_inner());
        let entries = super::layout_reader::Layout::open(&self.dir)?.entries(limit)?;
        let mut reached = std::collections::BTreeSet::new();
        let mut todo: Vec<String> = entries.into_iter().map(|e| e.digest).collect();
        while let Some(d) = todo.pop() {
            let Some(rel) = crate::digest::blob_path(&d) else {
                return Err(anyhow!("{}: malformed digest {d:?}", self.dir.display()));
            };
            if !reached.insert(rel.clone()) {
                continue;
            }
            let path = self.dir.join(&rel);
            let Ok(bytes) = std::fs::read(&path) else {
                continue; // Not in the layout: nothing to keep.
            };
            let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
                continue; // A layer or a config that is no JSON document.
            };
            for key in ["manifests", "layers", "blobs"] {
                for m in v.get(key).and_then(Value::as_array).into_iter().flatten() {
                    match m.get("digest").and_then(Value::as_str) {
                        Some(d) => todo.push(d.to_string()),
                        None => {
                            return Err(anyhow!(
                                "{}: a descriptor without a digest",
                                path.display()
                            ))
                        }
                    }
                }
            }
            if let Some(d) = v.pointer("/config/digest").and_then(Value::as_str) {
                todo.push(d.to_string());
            }
        }
        let mut removed = Vec::new();
        for rel in super::layout_reader::blobs(&self.dir)? {
            if !reached.contains(&rel) {
                let path = self.dir.join(&rel);
                std::fs::remove_file(&path).with_context(|| format!("{}", path.display()))?;
                removed.push(rel);
            }
        }
        removed.sort();
        Ok(removed)
    }
}
