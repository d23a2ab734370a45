//! opreg's own archive format for mirror to disk (not oc-mirror's): plain tar files
//! `mirror_000001.tar`, `mirror_000002.tar`, … holding files of the workspace by their paths
//! relative to it, each archive at most `archiveSize`. Packing is deterministic (sorted
//! entries, mtime 0, owner 0:0, mode 0644), so the same files give the same bytes.
//!
//! Unpacking trusts nothing: every path must be relative and plain (no `..`, no absolute
//! path), only regular files and directories are accepted (no links or devices), and every
//! blob under `blobs/<algorithm>/<hex>` is hashed as it is written and refused when it does
//! not match its name. Blobs land one by one (each renamed into place once verified; a blob
//! already present with the entry's size is skipped); the other files (`index.json`, the plan, …) are held as
//! temporary files and renamed into place only after every archive unpacked, so a layout
//! never names blobs that are not there.

use super::MirrorError;
use crate::digest::{Algorithm, Hasher};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};

const BLOCK: u64 = 512;
/// The two zero blocks that end a tar file.
const TRAILER: u64 = 2 * BLOCK;
/// The longest name a tar header holds without a GNU long-name entry.
const SHORT_NAME: usize = 100;

/// The name of the `n`th archive (from 1).
pub fn archive_name(n: usize) -> String {
    format!("mirror_{n:06}.tar")
}

/// What [`unpack`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Blobs written (each verified).
    pub blobs: u64,
    /// Blobs already present, not written again.
    pub blobs_skipped: u64,
    /// Other files written.
    pub files: u64,
    /// Bytes written, blobs and files.
    pub bytes: u64,
}

/// Packs `files` (paths relative to `dir`) into `out_dir/mirror_000001.tar`, … each at most
/// `max_bytes` (a file larger than that gets an archive of its own), each written atomically
/// (a temporary file renamed). Archives of an earlier pack numbered past the last one written
/// are removed, so `out_dir` holds exactly this set. Returns the archives' paths.
pub fn pack(
    dir: &Path,
    files: &[PathBuf],
    out_dir: &Path,
    max_bytes: u64,
) -> Result<Vec<PathBuf>, MirrorError> {
    let mut sized = Vec::with_capacity(files.len());
    for f in files {
        let rel = plain(f).ok_or_else(|| {
            format!(
                "{}: not a plain relative path inside the workspace",
                f.display()
            )
        })?;
        let full = dir.join(&rel);
        let meta = std::fs::symlink_metadata(&full)
            .map_err(|e| MirrorError::from(format!("{}: {e}", full.display())))?;
        if !meta.is_file() {
            return Err(MirrorError::from(format!(
                "{}: not a regular file",
                full.display()
            )));
        }
        sized.push((rel, meta.len()));
    }
    sized.sort();
    sized.dedup_by(|a, b| a.0 == b.0);
    std::fs::create_dir_all(out_dir)
        .map_err(|e| MirrorError::from(format!("{}: {e}", out_dir.display())))?;
    let mut written = Vec::new();
    for (i, group) in split(&sized, max_bytes).iter().enumerate() {
        let path = out_dir.join(archive_name(i + 1));
        write_archive(dir, group, &path)?;
        written.push(path);
    }
    remove_stale(out_dir, written.len())?;
    Ok(written)
}

/// The bytes a file's entry takes: its header (and a GNU long-name entry when the path is
/// long), then its data padded to whole blocks.
fn entry_size(path: &Path, len: u64) -> u64 {
    let name = path.as_os_str().len() as u64;
    let long = if name as usize > SHORT_NAME {
        BLOCK + (name + 1).div_ceil(BLOCK) * BLOCK
    } else {
        0
    };
    long + BLOCK + len.div_ceil(BLOCK) * BLOCK
}

/// Sorted files cut into archives of at most `max_bytes` each (trailer included).
fn split(files: &[(PathBuf, u64)], max_bytes: u64) -> Vec<&[(PathBuf, u64)]> {
    let mut groups = Vec::new();
    let (mut start, mut size) = (0, TRAILER);
    for (i, (path, len)) in files.iter().enumerate() {
        let e = entry_size(path, *len);
        if i > start && size.saturating_add(e) > max_bytes {
            groups.push(&files[start..i]);
            (start, size) = (i, TRAILER);
        }
        size = size.saturating_add(e);
    }
    if start < files.len() {
        groups.push(&files[start..]);
    }
    groups
}

fn write_archive(dir: &Path, group: &[(PathBuf, u64)], path: &Path) -> Result<(), MirrorError> {
    use crate::atomic::{Mode, Options};
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let tmp = crate::atomic::File::create(path, &Options::mode(Mode::Exact(0o644)))
        .map_err(|e| at(&e))?;
    let mut tar = tar::Builder::new(BufWriter::new(tmp));
    for (rel, len) in group {
        let full = dir.join(rel);
        let file =
            File::open(&full).map_err(|e| MirrorError::from(format!("{}: {e}", full.display())))?;
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(*len);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let exact = Exact {
            inner: file.take(*len),
            left: *len,
        };
        tar.append_data(&mut header, rel, exact)
            .map_err(|e| MirrorError::from(format!("{}: {e}", full.display())))?;
    }
    let tmp = tar
        .into_inner()
        .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
        .map_err(|e| at(&e))?;
    Ok(tmp.commit().map_err(|e| at(&e))?)
}

/// A reader of exactly `left` more bytes: a file that shrank while packing is an error, not a
/// short entry.
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file changed while it was packed",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Removes `mirror_NNNNNN.tar` files numbered past `kept`.
fn remove_stale(out_dir: &Path, kept: usize) -> Result<(), MirrorError> {
    let listing = std::fs::read_dir(out_dir)
        .map_err(|e| MirrorError::from(format!("{}: {e}", out_dir.display())))?;
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let number = name
            .strip_prefix("mirror_")
            .and_then(|n| n.strip_suffix(".tar"))
            .filter(|n| n.len() == 6 && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<usize>().ok());
        if number.is_some_and(|n| n > kept) {
            std::fs::remove_file(entry.path())
                .map_err(|e| MirrorError::from(format!("{}: {e}", entry.path().display())))?;
        }
    }
    Ok(())
}

/// `p` as plain components (`.` dropped), or None when it is absolute, climbs (`..`) or is
/// empty.
fn plain(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Unpacks `archives`, in order, into `dir` (created if missing); see the module's text for
/// the checks. The error names the archive and the entry.
pub fn unpack(archives: &[PathBuf], dir: &Path) -> Result<UnpackStats, MirrorError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| MirrorError::from(format!("{}: {e}", dir.display())))?;
    let mut stats = UnpackStats::default();
    let mut held: BTreeMap<PathBuf, crate::atomic::File> = BTreeMap::new();
    for archive in archives {
        let file = File::open(archive)
            .map_err(|e| MirrorError::from(format!("{}: {e}", archive.display())))?;
        unpack_one(BufReader::new(file), dir, &mut stats, &mut held)
            .map_err(|e| MirrorError::from(format!("{}: {e}", archive.display())))?;
    }
    for (rel, tmp) in held {
        let dest = dir.join(&rel);
        tmp.commit()
            .map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    Ok(stats)
}

/// Unpacks one archive read from `input`; other files are added to `held`.
fn unpack_one(
    input: impl Read,
    dir: &Path,
    stats: &mut UnpackStats,
    held: &mut BTreeMap<PathBuf, crate::atomic::File>,
) -> Result<(), MirrorError> {
    let mut ar = tar::Archive::new(input);
    let entries = ar.entries().map_err(|e| MirrorError::from(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| MirrorError::from(format!("not a tar archive: {e}")))?;
        let raw = entry
            .path()
            .map_err(|e| MirrorError::from(e.to_string()))?
            .into_owned();
        let name = raw.display().to_string();
        let rel = plain(&raw)
            .ok_or_else(|| MirrorError::from(format!("{name}: not a plain relative path")))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            if blob_name(&rel).is_some() {
                return Err(MirrorError::from(format!(
                    "{name}: a directory where a blob goes"
                )));
            }
            std::fs::create_dir_all(dir.join(&rel))
                .map_err(|e| MirrorError::from(format!("{name}: {e}")))?;
            continue;
        }
        if !kind.is_file() {
            return Err(MirrorError::from(format!(
                "{name}: not a regular file (links and special files are refused)"
            )));
        }
        let dest = dir.join(&rel);
        let parent = dest.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(|e| MirrorError::from(format!("{name}: {e}")))?;
        if rel.starts_with("blobs") {
            let (alg, hex) = blob_name(&rel).ok_or_else(|| {
                MirrorError::from(format!(
                    "{name}: not a blob (blobs/<algorithm>/<hex digest>)"
                ))
            })?;
            // One already there is kept when it has the entry's size (a blob is renamed into
            // place only once verified; the size check catches one a power loss truncated).
            let size = entry
                .header()
                .size()
                .map_err(|e| MirrorError::from(format!("{name}: {e}")))?;
            if std::fs::symlink_metadata(&dest).is_ok_and(|m| m.is_file() && m.len() == size) {
                stats.blobs_skipped += 1;
                continue;
            }
            let n = write_blob(&mut entry, &dest, alg, &hex).map_err(|e| format!("{name}: {e}"))?;
            stats.blobs += 1;
            stats.bytes += n;
        } else {
            let mut tmp = crate::atomic::File::create(&dest, &file_options())
                .map_err(|e| format!("{name}: {e}"))?;
            let n = std::io::copy(&mut entry, &mut tmp).map_err(|e| format!("{name}: {e}"))?;
            held.insert(rel, tmp);
            stats.files += 1;
            stats.bytes += n;
        }
    }
    Ok(())
}

/// Unpacked files: 0644, not synced (as before: an unpacked mirror is written again when a
/// run fails).
fn file_options() -> crate::atomic::Options<'static> {
    use crate::atomic::{Mode, Options};
    Options::mode(Mode::Exact(0o644)).sync(false)
}

/// The algorithm and hex of `blobs/<algorithm>/<hex>`, when the name is a digest opreg can
/// check.
fn blob_name(rel: &Path) -> Option<(Algorithm, String)> {
    let parts: Vec<&str> = rel.iter().map(|c| c.to_str()).collect::<Option<_>>()?;
    let [blobs, alg, hex] = parts.as_slice() else {
        return None;
    };
    if *blobs != "blobs" {
        return None;
    }
    let d = format!("{alg}:{hex}");
    let (alg, hex) = crate::digest::parse(&d).ok()?;
    Some((alg, hex.to_string()))
}

/// Streams a blob into a temporary file beside `dest`, hashing it, and renames it into place
/// only when the hash is its name. Returns its size.
fn write_blob(
    input: &mut impl Read,
    dest: &Path,
    alg: Algorithm,
    hex: &str,
) -> Result<u64, MirrorError> {
    let mut tmp = crate::atomic::File::create(dest, &file_options()).map_err(|e| e.to_string())?;
    let mut hasher = Hasher::new(alg);
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    {
        let mut out = BufWriter::new(tmp.file_mut());
        loop {
            let n = input
                .read(&mut buf)
                .map_err(|e| MirrorError::from(e.to_string()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|e| MirrorError::from(e.to_string()))?;
            total += n as u64;
        }
        out.flush().map_err(|e| MirrorError::from(e.to_string()))?;
    }
    let got = hasher.hex();
    if got != hex {
        return Err(MirrorError::from(format!(
            "content does not match its digest (it hashes to {got}); the archive is damaged or was altered"
        )));
    }
    tmp.commit().map_err(|e| e.to_string())?;
    Ok(total)
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
