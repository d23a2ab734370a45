//! Reproducible image layers: a tar stream of entries sorted by path (whiteouts before their
//! siblings, hard links right after the entry they link to, which an unpacker needs first), with fixed owners, modes and timestamps and no user or group names, compressed by
//! gzip with no name and no time in its header. The same entries give the same bytes, and so
//! the same digest, on any machine and at any time.
//!
//! The layer is hashed as it is written: its digest (the compressed bytes) and its `diff_id`
//! (the tar stream) come out of [`LayerBuilder::write`] without reading the file back.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Who owns an entry, and its permission bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u64,
    pub gid: u64,
}

/// root:root.
pub const ROOT: Owner = Owner { uid: 0, gid: 0 };

/// What an entry holds.
#[derive(Clone, Debug)]
enum Content {
    Dir,
    /// A file's bytes, read from this path when the layer is written.
    File(PathBuf),
    Bytes(Vec<u8>),
    /// A hard link to another entry of the layer.
    Hardlink(String),
}

#[derive(Clone, Debug)]
struct Entry {
    /// Relative to the image root, no leading or trailing slash.
    path: String,
    mode: u32,
    owner: Owner,
    content: Content,
}

/// A written layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    pub path: PathBuf,
    /// `sha256:` of the compressed bytes.
    pub digest: String,
    /// `sha256:` of the uncompressed tar stream.
    pub diff_id: String,
    pub size: u64,
}

/// The media type of the layers written here.
pub const MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// Collects entries, then writes them as one reproducible layer.
#[derive(Debug)]
pub struct LayerBuilder {
    entries: Vec<Entry>,
    mtime: u64,
}

/// `/a/b/` as `a/b`.
fn clean(path: &str) -> String {
    path.trim_matches('/').to_string()
}

impl LayerBuilder {
    /// Every entry gets `mtime` (seconds since the epoch).
    pub fn new(mtime: u64) -> LayerBuilder {
        LayerBuilder {
            entries: Vec::new(),
            mtime,
        }
    }

    pub fn dir(&mut self, path: &str, mode: u32, owner: Owner) {
        self.push(path, mode, owner, Content::Dir);
    }

    /// `path`'s parents (not `path` itself), as root-owned 0755 directories, except `/tmp`,
    /// which is 1777 as in any image.
    pub fn parents(&mut self, path: &str) {
        let p = clean(path);
        let mut acc = String::new();
        let parts: Vec<&str> = p.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(part);
            let mode = if acc == "tmp" { 0o1777 } else { 0o755 };
            if !self.entries.iter().any(|e| e.path == acc) {
                self.dir(&acc, mode, ROOT);
            }
        }
    }

    pub fn file(&mut self, path: &str, mode: u32, owner: Owner, source: &Path) {
        self.push(path, mode, owner, Content::File(source.to_path_buf()));
    }

    pub fn bytes(&mut self, path: &str, mode: u32, owner: Owner, bytes: Vec<u8>) {
        self.push(path, mode, owner, Content::Bytes(bytes));
    }

    /// A hard link at `path` to the entry `target` (which must be in this layer).
    pub fn hardlink(&mut self, path: &str, target: &str) {
        let (mode, owner) = self
            .entries
            .iter()
            .find(|e| e.path == clean(target))
            .map(|e| (e.mode, e.owner))
            .unwrap_or((0o755, ROOT));
        self.push(path, mode, owner, Content::Hardlink(clean(target)));
    }

    /// Removes `path` of lower layers (`.wh.NAME`).
    pub fn whiteout(&mut self, path: &str) {
        let p = clean(path);
        let (dir, name) = p.rsplit_once('/').unwrap_or(("", &p));
        let wh = if dir.is_empty() {
            format!(".wh.{name}")
        } else {
            format!("{dir}/.wh.{name}")
        };
        self.push(&wh, 0o644, ROOT, Content::Bytes(Vec::new()));
    }

    /// Hides everything lower layers have in the directory `dir` (`.wh..wh..opq`).
    pub fn opaque(&mut self, dir: &str) {
        let p = format!("{}/.wh..wh..opq", clean(dir));
        self.push(&p, 0o644, ROOT, Content::Bytes(Vec::new()));
    }

    /// Adds the tree under `src` at `dest`: directories `dir_mode`, files `file_mode`, all
    /// owned by `owner`. Symbolic links and special files in `src` are an error.
    pub fn tree(
        &mut self,
        src: &Path,
        dest: &str,
        owner: Owner,
        dir_mode: u32,
        file_mode: u32,
    ) -> io::Result<()> {
        let dest = clean(dest);
        for e in walkdir::WalkDir::new(src).min_depth(1) {
            let e = e.map_err(io::Error::other)?;
            let rel = e.path().strip_prefix(src).map_err(io::Error::other)?;
            let rel = rel.to_str().ok_or_else(|| {
                io::Error::other(format!("{}: not a UTF-8 path", e.path().display()))
            })?;
            let path = format!("{dest}/{rel}");
            let t = e.file_type();
            if t.is_dir() {
                self.dir(&path, dir_mode, owner);
            } else if t.is_file() {
                self.file(&path, file_mode, owner, e.path());
            } else {
                return Err(io::Error::other(format!(
                    "{}: only files and directories go into a layer",
                    e.path().display()
                )));
            }
        }
        Ok(())
    }

    fn push(&mut self, path: &str, mode: u32, owner: Owner, content: Content) {
        let path = clean(path);
        self.entries.retain(|e| e.path != path);
        self.entries.push(Entry {
            path,
            mode,
            owner,
            content,
        });
    }

    /// Writes the layer to `dir/<random>.tar.gz`.
    pub fn write(mut self, dir: &Path) -> io::Result<Layer> {
        // Sorted component by component, whiteouts before their siblings; then each hard link
        // moved to just after its target, which must exist when the link is unpacked.
        self.entries
            .sort_by(|a, b| sort_key(&a.path).cmp(&sort_key(&b.path)));
        let (links, mut rest): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|e| matches!(e.content, Content::Hardlink(_)));
        for l in links.into_iter().rev() {
            let Content::Hardlink(target) = &l.content else {
                unreachable!("partitioned on hard links")
            };
            let at = rest.iter().position(|e| &e.path == target).ok_or_else(|| {
                io::Error::other(format!(
                    "hard link {} to {target}, which is not in the layer",
                    l.path
                ))
            })?;
            rest.insert(at + 1, l);
        }
        self.entries = rest;
        let file = tempfile::Builder::new()
            .prefix("layer-")
            .suffix(".tar.gz")
            .tempfile_in(dir)?;
        let (file, path) = file.keep().map_err(|e| e.error)?;
        let gz = flate2::GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(Hashing::new(file), flate2::Compression::new(6));
        let mut tar = tar::Builder::new(Hashing::new(gz));
        tar.mode(tar::HeaderMode::Deterministic);
        for e in &self.entries {
            let mut h = tar::Header::new_gnu();
            h.set_mode(e.mode);
            h.set_uid(e.owner.uid);
            h.set_gid(e.owner.gid);
            h.set_mtime(self.mtime);
            match &e.content {
                Content::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    tar.append_data(&mut h, format!("{}/", e.path), io::empty())?;
                }
                Content::Bytes(b) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(b.len() as u64);
                    tar.append_data(&mut h, &e.path, &b[..])?;
                }
                Content::File(src) => {
                    let f = std::fs::File::open(src)?;
                    let len = f.metadata()?.len();
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(len);
                    tar.append_data(&mut h, &e.path, f.take(len))?;
                }
                Content::Hardlink(target) => {
                    h.set_entry_type(tar::EntryType::Link);
                    h.set_size(0);
                    tar.append_link(&mut h, &e.path, target)?;
                }
            }
        }
        let tar_hash = tar.into_inner()?;
        let diff_id = tar_hash.digest();
        let gz = tar_hash.inner;
        let file_hash = gz.finish()?;
        let digest = file_hash.digest();
        let size = file_hash.count;
        file_hash.inner.sync_all()?;
        Ok(Layer {
            path,
            digest,
            diff_id,
            size,
        })
    }
}

fn sort_key(path: &str) -> Vec<(bool, &str)> {
    path.split('/')
        .map(|c| (!c.starts_with(".wh."), c))
        .collect()
}

/// A writer that hashes and counts what goes through it.
pub struct Hashing<W> {
    pub inner: W,
    hasher: crate::digest::Hasher,
    pub count: u64,
}

impl<W> Hashing<W> {
    pub fn new(inner: W) -> Self {
        Hashing {
            inner,
            hasher: crate::digest::Hasher::sha256(),
            count: 0,
        }
    }

    /// `sha256:HEX` of what was written so far.
    pub fn digest(&self) -> String {
        self.hasher.clone().digest()
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(layer: &Layer) -> Vec<(String, u32, u64, u64)> {
        let f = std::fs::File::open(&layer.path).unwrap();
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
        a.entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().to_string_lossy().to_string(),
                    h.mode().unwrap(),
                    h.uid().unwrap(),
                    h.mtime().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn same_entries_same_bytes_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("f");
        std::fs::write(&src, b"hello").unwrap();
        let build = |rev: bool| {
            let mut b = LayerBuilder::new(42);
            if rev {
                b.whiteout("/tmp/cache");
                b.opaque("configs");
                b.dir("configs/a", 0o755, ROOT);
                b.file("configs/a/catalog.json", 0o644, ROOT, &src);
                b.dir("configs", 0o755, ROOT);
            } else {
                b.dir("configs", 0o755, ROOT);
                b.file("configs/a/catalog.json", 0o644, ROOT, &src);
                b.dir("configs/a", 0o755, ROOT);
                b.opaque("configs");
                b.whiteout("/tmp/cache");
            }
            b.parents("/tmp/cache");
            b.write(dir.path()).unwrap()
        };
        let (one, two) = (build(false), build(true));
        assert_eq!(one.digest, two.digest);
        assert_eq!(one.diff_id, two.diff_id);
        assert_eq!(
            std::fs::read(&one.path).unwrap(),
            std::fs::read(&two.path).unwrap()
        );
        let n = names(&one);
        let paths: Vec<&str> = n.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            paths,
            [
                "configs/",
                "configs/.wh..wh..opq",
                "configs/a/",
                "configs/a/catalog.json",
                "tmp/",
                "tmp/.wh.cache"
            ]
        );
        assert!(n.iter().all(|e| e.3 == 42 && e.2 == 0));
        assert_eq!(n[4].1, 0o1777);
    }

    #[test]
    fn hard_links_follow_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("f");
        std::fs::write(&src, b"binary").unwrap();
        let mut b = LayerBuilder::new(0);
        b.dir("bin", 0o755, ROOT);
        b.hardlink("bin/grpc_health_probe", "bin/opreg");
        b.file("bin/opreg", 0o755, ROOT, &src);
        b.hardlink("bin/opm", "bin/opreg");
        b.file("bin/zz", 0o755, ROOT, &src);
        let layer = b.write(dir.path()).unwrap();
        let paths: Vec<String> = names(&layer).into_iter().map(|e| e.0).collect();
        assert_eq!(
            paths,
            [
                "bin/",
                "bin/opreg",
                "bin/grpc_health_probe",
                "bin/opm",
                "bin/zz"
            ]
        );
        // And it unpacks: each link finds its target already there.
        let out = dir.path().join("out");
        let f = std::fs::File::open(&layer.path).unwrap();
        tar::Archive::new(flate2::read::GzDecoder::new(f))
            .unpack(&out)
            .unwrap();
        assert_eq!(std::fs::read(out.join("bin/opm")).unwrap(), b"binary");
        let mut b = LayerBuilder::new(0);
        b.hardlink("bin/opm", "bin/missing");
        let e = b.write(dir.path()).unwrap_err();
        assert!(e.to_string().contains("bin/missing"), "{e}");
    }
}
