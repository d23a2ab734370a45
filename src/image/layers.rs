//! The layer reader: applies image layers in order to a private directory, extracting only
//! the files under the labelled paths, with OCI whiteouts (`.wh.NAME` removes NAME from lower
//! layers, `.wh..wh..opq` empties its directory of lower layers' files).
//!
//! Layers are streamed: gzip, zstd or plain tar, told apart by their first bytes. Every entry
//! is checked before anything is written:
//! - absolute paths and `..` components are refused wherever they appear;
//! - under a labelled path, device files and FIFOs are refused, and so are symbolic and hard
//!   links whose target leaves the image root. Links inside the image are kept, with absolute
//!   targets rewritten relative to the link, so nothing ever points outside the directory;
//! - nothing is written through a symbolic link: every parent of a written path must be a real
//!   directory created here.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Why a layer could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("unsafe layer entry {path:?}: {why}")]
    Unsafe { path: String, why: &'static str },
    #[error("the files extracted from the image exceed the size limit of {0} bytes")]
    TooLarge(u64),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Applies layers, in order, to `root`.
pub struct Extractor {
    root: PathBuf,
    /// Labelled paths, relative to the image root, without leading or trailing slashes.
    wanted: Vec<String>,
    max_bytes: u64,
    written: u64,
}

/// Wraps a layer stream in the decompressor its first bytes call for.
pub fn decompress<'a>(r: impl Read + 'a) -> std::io::Result<Box<dyn Read + 'a>> {
    let mut r = BufReader::with_capacity(256 * 1024, r);
    let head = r.fill_buf()?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(flate2::read::MultiGzDecoder::new(r)))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Ok(Box::new(ZstdFrames {
            src: Some(r),
            dec: None,
        }))
    } else {
        Ok(Box::new(r))
    }
}

/// A zstd stream of one or more frames.
struct ZstdFrames<R: BufRead> {
    src: Option<R>,
    dec: Option<ruzstd::decoding::StreamingDecoder<R, ruzstd::decoding::FrameDecoder>>,
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(d) = &mut self.dec {
                let n = d.read(buf)?;
                if n > 0 || buf.is_empty() {
                    return Ok(n);
                }
                self.src = self.dec.take().map(|d| d.into_inner());
            }
            let Some(mut src) = self.src.take() else {
                return Ok(0);
            };
            if src.fill_buf()?.is_empty() {
                return Ok(0);
            }
            let d = ruzstd::decoding::StreamingDecoder::new(src)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            self.dec = Some(d);
        }
    }
}

/// A path inside the image, as components; `Err` for absolute paths and `..`.
pub fn normalize(raw: &str) -> Result<Vec<String>, &'static str> {
    let p = raw.strip_prefix("./").unwrap_or(raw);
    if p.starts_with('/') {
        return Err("absolute path");
    }
    let mut out = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err("path climbs out of the image root with '..'"),
            c => out.push(c.to_string()),
        }
    }
    Ok(out)
}

/// Where a labelled path of an image unpacked at `root` is on disk.
pub fn local_path(root: &Path, wanted: &str) -> PathBuf {
    let c = normalize(wanted.trim_start_matches('/')).unwrap_or_default();
    let mut p = root.to_path_buf();
    p.extend(c);
    p
}

impl Extractor {
    /// `wanted` are the labelled paths (`/configs`, `manifests/`, `database/index.db`).
    pub fn new(root: &Path, wanted: &[String], max_bytes: u64) -> Result<Extractor, LayerError> {
        let mut w = Vec::new();
        for p in wanted {
            // Labels name paths from the image root: `/configs`.
            let c = normalize(p.trim_start_matches('/')).map_err(|why| LayerError::Unsafe {
                path: p.clone(),
                why,
            })?;
            w.push(c.join("/"));
        }
        Ok(Extractor {
            root: root.to_path_buf(),
            wanted: w,
            max_bytes,
            written: 0,
        })
    }

    fn is_wanted(&self, rel: &str) -> bool {
        self.wanted
            .iter()
            .any(|w| w.is_empty() || rel == w || rel.starts_with(&format!("{w}/")))
    }

    /// True when removing `rel` can change what is extracted: it is inside a labelled path or
    /// one of its ancestors.
    fn touches_wanted(&self, rel: &str) -> bool {
        self.is_wanted(rel)
            || rel.is_empty()
            || self
                .wanted
                .iter()
                .any(|w| w.starts_with(&format!("{rel}/")))
    }

    /// Applies one layer (compressed or not).
    pub fn apply(&mut self, layer: impl Read) -> Result<(), LayerError> {
        let mut ar = tar::Archive::new(decompress(layer)?);
        let mut this_layer: HashSet<String> = HashSet::new();
        for entry in ar.entries()? {
            let mut entry = entry?;
            let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let comps = normalize(&raw).map_err(|why| LayerError::Unsafe {
                path: raw.clone(),
                why,
            })?;
            let Some(name) = comps.last().cloned() else {
                continue; // the root directory itself
            };
            let parent = comps[..comps.len() - 1].join("/");
            let rel = comps.join("/");
            if name == ".wh..wh..opq" {
                if self.touches_wanted(&parent) {
                    self.opaque(&parent, &this_layer)?;
                }
                continue;
            }
            if let Some(hidden) = name.strip_prefix(".wh.") {
                let target = if parent.is_empty() {
                    hidden.to_string()
                } else {
                    format!("{parent}/{hidden}")
                };
                if self.touches_wanted(&target) {
                    self.remove(&target)?;
                }
                continue;
            }
            if !self.is_wanted(&rel) {
                continue;
            }
            for i in 1..=comps.len() {
                this_layer.insert(comps[..i].join("/"));
            }
            let kind = entry.header().entry_type();
            let unsafe_entry = |why| LayerError::Unsafe {
                path: raw.clone(),
                why,
            };
            use tar::EntryType as T;
            match kind {
                T::Directory => {
                    let dir = self.prepare(&comps, true)?;
                    if !dir.is_dir() {
                        std::fs::create_dir(&dir)?;
                    }
                }
                T::Regular | T::Continuous | T::GNUSparse => {
                    let size = entry.header().size()?;
                    if self.written.saturating_add(size) > self.max_bytes {
                        return Err(LayerError::TooLarge(self.max_bytes));
                    }
                    let path = self.prepare(&comps, false)?;
                    let mut f = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&path)?;
                    let n = std::io::copy(&mut (&mut entry).take(size), &mut f)?;
                    self.written += n;
                }
                T::Symlink => {
                    let target = entry
                        .link_name_bytes()
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default();
                    let resolved = resolve_link(&comps[..comps.len() - 1], &target)
                        .ok_or_else(|| unsafe_entry("symbolic link leaves the image root"))?;
                    // Relative to the link's directory, so it can only point inside `root`.
                    let depth = comps.len() - 1;
                    let mut rel_target: Vec<String> = vec!["..".into(); depth];
                    rel_target.extend(resolved);
                    let rel_target = if rel_target.is_empty() {
                        ".".to_string()
                    } else {
                        rel_target.join("/")
                    };
                    let path = self.prepare(&comps, false)?;
                    std::os::unix::fs::symlink(rel_target, &path)?;
                }
                T::Link => {
                    let target = entry
                        .link_name_bytes()
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default();
                    let tcomps = normalize(&target)
                        .map_err(|_| unsafe_entry("hard link leaves the image root"))?;
                    let Some(src) = self.existing(&tcomps)? else {
                        tracing::debug!(entry = %raw, target = %target, "hard link to a file not extracted; skipped");
                        continue;
                    };
                    if !std::fs::symlink_metadata(&src)?.is_file() {
                        return Err(unsafe_entry(
                            "hard link to something other than a regular file",
                        ));
                    }
                    let size = std::fs::metadata(&src)?.len();
                    if self.written.saturating_add(size) > self.max_bytes {
                        return Err(LayerError::TooLarge(self.max_bytes));
                    }
                    let path = self.prepare(&comps, false)?;
                    std::fs::copy(&src, &path)?;
                    self.written += size;
                }
                T::Char | T::Block => return Err(unsafe_entry("device file")),
                T::Fifo => return Err(unsafe_entry("FIFO")),
                _ => {
                    tracing::debug!(entry = %raw, "layer entry of an unsupported type skipped");
                }
            }
        }
        Ok(())
    }

    /// The on-disk path of `comps`, after checking that every parent is a real directory
    /// (creating missing ones) and removing whatever the path held before (unless `keep_dir`
    /// and it is a directory).
    fn prepare(&self, comps: &[String], keep_dir: bool) -> Result<PathBuf, LayerError> {
        let mut p = self.root.clone();
        for c in &comps[..comps.len() - 1] {
            p.push(c);
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    // A lower layer's file or link where this layer has a directory.
                    std::fs::remove_file(&p)?;
                    std::fs::create_dir(&p)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&p)?,
                Err(e) => return Err(e.into()),
            }
        }
        p.push(&comps[comps.len() - 1]);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() && keep_dir => {}
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p)?,
            Ok(_) => std::fs::remove_file(&p)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        Ok(p)
    }

    /// The on-disk path of `comps` if it exists, reached through real directories only.
    fn existing(&self, comps: &[String]) -> Result<Option<PathBuf>, LayerError> {
        let mut p = self.root.clone();
        for (i, c) in comps.iter().enumerate() {
            p.push(c);
            match std::fs::symlink_metadata(&p) {
                Ok(m) if i + 1 == comps.len() || m.is_dir() => {}
                Ok(_) => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Some(p))
    }

    /// A whiteout: removes `rel` as lower layers left it.
    fn remove(&self, rel: &str) -> Result<(), LayerError> {
        let comps: Vec<String> = rel.split('/').map(str::to_string).collect();
        if let Some(p) = self.existing(&comps)? {
            if std::fs::symlink_metadata(&p)?.is_dir() {
                std::fs::remove_dir_all(&p)?;
            } else {
                std::fs::remove_file(&p)?;
            }
        }
        Ok(())
    }

    /// An opaque whiteout: empties `dir` of everything this layer did not write.
    fn opaque(&self, dir: &str, this_layer: &HashSet<String>) -> Result<(), LayerError> {
        let comps: Vec<String> = dir
            .split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        let path = if comps.is_empty() {
            Some(self.root.clone())
        } else {
            self.existing(&comps)?
        };
        let Some(path) = path.filter(|p| p.is_dir() && !p.is_symlink()) else {
            return Ok(());
        };
        for e in std::fs::read_dir(&path)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            if this_layer.contains(&rel) {
                continue;
            }
            if e.file_type()?.is_dir() {
                std::fs::remove_dir_all(e.path())?;
            } else {
                std::fs::remove_file(e.path())?;
            }
        }
        Ok(())
    }
}

/// Resolves a symbolic link's target against the image root, lexically: absolute targets
/// start at the root, relative ones at the link's directory. `None` when `..` climbs above
/// the root.
pub fn resolve_link(link_dir: &[String], target: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = if target.starts_with('/') {
        Vec::new()
    } else {
        link_dir.to_vec()
    };
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c.to_string()),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, data, link) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            if let Some(l) = link {
                h.set_link_name(l).unwrap();
            }
            // Bypass the builder's own path checks: the reader must refuse bad paths itself.
            let name = path.as_bytes();
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn whiteouts_and_filtering() {
        let dir = tempfile::tempdir().unwrap();
        let mut x = Extractor::new(dir.path(), &["/configs".into()], 1 << 20).unwrap();
        use tar::EntryType as T;
        x.apply(
            &layer(&[
                ("configs/a/index.json", T::Regular, b"a", None),
                ("configs/b/index.json", T::Regular, b"b", None),
                ("etc/passwd", T::Regular, b"x", None),
            ])[..],
        )
        .unwrap();
        x.apply(
            &layer(&[
                ("configs/.wh.a", T::Regular, b"", None),
                ("configs/b/.wh..wh..opq", T::Regular, b"", None),
                ("configs/b/new.json", T::Regular, b"n", None),
            ])[..],
        )
        .unwrap();
        let c = dir.path().join("configs");
        assert!(!c.join("a").exists());
        assert!(!c.join("b/index.json").exists());
        assert_eq!(std::fs::read(c.join("b/new.json")).unwrap(), b"n");
        assert!(!dir.path().join("etc").exists());
    }

    #[test]
    fn refuses_unsafe_entries() {
        use tar::EntryType as T;
        let cases: Vec<Vec<u8>> = vec![
            layer(&[("../evil", T::Regular, b"x", None)]),
            layer(&[("/abs", T::Regular, b"x", None)]),
            layer(&[("configs/l", T::Symlink, b"", Some("../../etc"))]),
            layer(&[("configs/h", T::Link, b"", Some("../x"))]),
            layer(&[("configs/dev", T::Char, b"", None)]),
        ];
        for (i, l) in cases.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let mut x = Extractor::new(dir.path(), &["configs".into()], 1 << 20).unwrap();
            let e = x.apply(&l[..]).unwrap_err();
            assert!(matches!(e, LayerError::Unsafe { .. }), "case {i}: {e}");
        }
    }

    #[test]
    fn links_stay_inside_and_size_is_limited() {
        use tar::EntryType as T;
        let dir = tempfile::tempdir().unwrap();
        let mut x = Extractor::new(dir.path(), &["configs".into()], 4).unwrap();
        x.apply(
            &layer(&[
                ("configs/f", T::Regular, b"abc", None),
                ("configs/s", T::Symlink, b"", Some("/configs/f")),
            ])[..],
        )
        .unwrap();
        let s = dir.path().join("configs/s");
        assert_eq!(std::fs::read_link(&s).unwrap(), Path::new("../configs/f"));
        assert_eq!(std::fs::read(&s).unwrap(), b"abc");
        let e = x
            .apply(&layer(&[("configs/g", T::Regular, b"toolong", None)])[..])
            .unwrap_err();
        assert!(matches!(e, LayerError::TooLarge(4)));
    }
}
