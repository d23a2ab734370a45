//! Unpacked images kept in the image cache, so that a warm pull of an image already seen
//! neither inflates nor extracts its layers again.
//!
//! A catalog image's labelled content is unpacked into `DIR/tmp/` (every layer
//! verified against its digest on the way, as for any pull), then renamed whole to
//! `DIR/unpacked/HEX/`, named by the image manifest's digest: the manifest fixes the config
//! (and so the labels) and every layer. Next to the tree, `files` lists each regular file's
//! size and path. A kept tree is used only when its files still match that list (nothing
//! removed, added, truncated or grown; otherwise it is removed and the image unpacked again
//! from its blobs), and when what it holds fits under the pull's size limit. The list's
//! modification time is the tree's last use: the [`KEPT`] most recently used trees stay, and so
//! does any used in the last hour; older ones are removed when another is kept.
//!
//! The check is of sizes and paths, not contents: a file edited in place to the same size is
//! not noticed (the cache is the user's own, as with any cache). Only catalog images are kept:
//! an index image's database is served from where it was unpacked for as long as the server
//! runs, and a bundle image's tree is rearranged after the pull.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Unpacked trees kept at most, beyond those used in the last [`IN_USE`].
pub const KEPT: usize = 4;

/// A tree used this recently is never evicted: a pull's reader may still be reading it (a
/// command pulls all its SOURCEs before reading any).
const IN_USE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The kept trees of a cache directory.
pub struct Unpacked {
    dir: PathBuf,
    tmp: PathBuf,
}

/// A tree being unpacked (under the cache's `tmp/`), removed on drop unless kept.
pub struct Unpacking {
    dir: crate::atomic::Dir,
}

impl Unpacking {
    /// Where the image's root goes.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("rootfs")
    }
}

impl Unpacked {
    /// The trees of the cache at `cache_dir` (whose `tmp/` exists).
    pub fn open(cache_dir: &Path) -> Result<Unpacked> {
        let dir = cache_dir.join("unpacked");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Unpacked {
            dir,
            tmp: cache_dir.join("tmp"),
        })
    }

    fn tree(&self, digest: &str) -> PathBuf {
        self.dir
            .join(digest.strip_prefix("sha256:").unwrap_or(digest))
    }

    /// The root of the kept tree of image manifest `digest`, if it is whole and holds at most
    /// `max_bytes`; marked as used now. A tree that is not whole (its list missing, or its files
    /// no longer matching it) is removed; a whole one over `max_bytes` is left for others.
    pub fn get(&self, digest: &str, max_bytes: u64) -> Option<PathBuf> {
        let tree = self.tree(digest);
        if !tree.exists() {
            return None;
        }
        let root = tree.join("rootfs");
        let list = std::fs::read_to_string(tree.join("files")).ok();
        let now = listing(&root).ok();
        match (list, now) {
            (Some(list), Some((now, bytes))) if list == now => {
                if bytes > max_bytes {
                    return None;
                }
            }
            _ => {
                tracing::warn!(%digest, "an unpacked image in the image cache no longer matched its file list; it was removed");
                self.remove(&tree);
                return None;
            }
        }
        if let Ok(f) = std::fs::File::options()
            .append(true)
            .open(tree.join("files"))
        {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        Some(root)
    }

    /// A fresh directory to unpack an image into.
    pub fn start(&self) -> Result<Unpacking> {
        let dir = crate::atomic::Dir::create_in(&self.tmp, "unpack-")
            .with_context(|| format!("cannot create a directory in {}", self.tmp.display()))?;
        Ok(Unpacking { dir })
    }

    /// Keeps a finished unpacking as image manifest `digest`'s tree and returns its root. When
    /// another process kept the same image meanwhile, that tree is used and this one removed.
    /// Older trees are then evicted ([`Unpacked::evict_old`]).
    pub fn keep(&self, u: Unpacking, digest: &str) -> Result<PathBuf> {
        let (list, _) = listing(&u.root()).context("cannot list the unpacked image")?;
        std::fs::write(u.dir.path().join("files"), list)?;
        let tree = self.tree(digest);
        // Twice: a tree already there that is not whole is removed by `get`, and then this one
        // takes its place.
        let mut dir = u.dir;
        for _ in 0..2 {
            // Private (0700) as unpacked; not synced (a cache, checked against `files`).
            match dir.commit(&tree, None, false) {
                Ok(()) => {
                    self.evict_old(&tree);
                    return Ok(tree.join("rootfs"));
                }
                Err((back, _)) => dir = back,
            }
            // Kept by another process since this one looked (the rename refuses a non-empty
            // target); `dir` is removed on drop.
            if let Some(root) = self.get(digest, u64::MAX) {
                return Ok(root);
            }
        }
        anyhow::bail!("cannot keep the unpacked image in {}", tree.display())
    }

    /// Removes the trees beyond the [`KEPT`] most recently used, except `just_kept` and any
    /// used in the last [`IN_USE`] (which a reader may still be reading, in this process or
    /// another).
    fn evict_old(&self, just_kept: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut trees: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .map(|e| {
                let used = std::fs::metadata(e.path().join("files"))
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (used, e.path())
            })
            .collect();
        trees.sort_by_key(|t| std::cmp::Reverse(t.0));
        let recent = std::time::SystemTime::now() - IN_USE;
        for (used, t) in trees.into_iter().skip(KEPT) {
            if used < recent && t != just_kept {
                self.remove(&t);
            }
        }
    }

    /// Removes a tree: first renamed out of `unpacked/` (so it is never seen half removed),
    /// then deleted.
    fn remove(&self, tree: &Path) {
        let Ok(gone) = tempfile::Builder::new()
            .prefix("evicted-")
            .tempdir_in(&self.tmp)
        else {
            return;
        };
        let target = gone.path().join("tree");
        if crate::atomic::move_path(tree, &target, false).is_err() {
            let _ = std::fs::remove_dir_all(tree);
        }
        // `gone` and what was moved into it are removed on drop.
    }
}

/// Each regular file under `root` as `SIZE PATH` lines, sorted by path, and their total size.
/// Symbolic links and directories are not listed (the layer reader keeps links inside the
/// tree).
fn listing(root: &Path) -> Result<(String, u64)> {
    let mut files = Vec::new();
    let mut total = 0;
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e?;
        if e.file_type().is_file() {
            let len = e.metadata()?.len();
            total += len;
            let rel = e.path().strip_prefix(root).unwrap_or(e.path());
            files.push(format!("{len} {}\n", rel.display()));
        }
    }
    Ok((files.concat(), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unpack(u: &Unpacked, files: &[(&str, &str)]) -> Unpacking {
        let t = u.start().unwrap();
        for (path, text) in files {
            let p = t.root().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        t
    }

    /// A kept tree is found by its digest while whole and within the size limit; a changed
    /// one is removed; only the most recently used trees stay.
    #[test]
    fn trees_are_kept_checked_and_evicted() {
        let cache = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(cache.path().join("tmp")).unwrap();
        let u = Unpacked::open(cache.path()).unwrap();
        assert!(u.get("sha256:aa", u64::MAX).is_none());
        let t = unpack(
            &u,
            &[("configs/etcd/catalog.json", "{}"), ("configs/x", "12345")],
        );
        let root = u.keep(t, "sha256:aa").unwrap();
        assert_eq!(root, cache.path().join("unpacked/aa/rootfs"));
        assert_eq!(u.get("sha256:aa", u64::MAX), Some(root.clone()));
        // Over a smaller size limit: not used, and left whole for others.
        assert!(u.get("sha256:aa", 6).is_none());
        assert!(u.get("sha256:aa", 7).is_some());
        // Its list gone: not whole, removed (and a later keep takes its place).
        std::fs::remove_file(cache.path().join("unpacked/aa/files")).unwrap();
        assert!(u.get("sha256:aa", u64::MAX).is_none());
        assert!(!root.exists());

        let root = u
            .keep(unpack(&u, &[("configs/x", "12345")]), "sha256:aa")
            .unwrap();
        std::fs::write(root.join("configs/x"), "1234").unwrap();
        assert!(u.get("sha256:aa", u64::MAX).is_none(), "a truncated file");
        let root = u
            .keep(unpack(&u, &[("configs/x", "12345")]), "sha256:aa")
            .unwrap();
        std::fs::write(root.join("configs/y"), "").unwrap();
        assert!(u.get("sha256:aa", u64::MAX).is_none(), "an added file");

        // A tree there that is not whole is replaced by the one being kept.
        let root = u
            .keep(unpack(&u, &[("configs/x", "12345")]), "sha256:aa")
            .unwrap();
        std::fs::remove_file(root.join("configs/x")).unwrap();
        let again = u
            .keep(unpack(&u, &[("configs/x", "12345")]), "sha256:aa")
            .unwrap();
        assert_eq!(std::fs::read(again.join("configs/x")).unwrap(), b"12345");
        assert!(u.get("sha256:aa", u64::MAX).is_some());
        std::fs::remove_dir_all(cache.path().join("unpacked/aa")).unwrap();

        // The same image kept twice: the first tree stays.
        let first = u.keep(unpack(&u, &[("a", "1")]), "sha256:bb").unwrap();
        let second = u.keep(unpack(&u, &[("a", "1")]), "sha256:bb").unwrap();
        assert_eq!(first, second);

        // Used at these times (hours ago): bb 5, c0 4, c1 3, c2 2, c3 1.
        let used = |d: &str, hours_ago: u64| {
            let list = cache.path().join("unpacked").join(&d[7..]).join("files");
            let t = std::time::SystemTime::now() - std::time::Duration::from_secs(hours_ago * 3600);
            let f = std::fs::File::options().append(true).open(list).unwrap();
            f.set_modified(t).unwrap();
        };
        used("sha256:bb", 5);
        let mut digests = vec!["sha256:bb".to_string()];
        for i in 0..KEPT - 1 {
            let d = format!("sha256:c{i}");
            u.keep(unpack(&u, &[("a", "1")]), &d).unwrap();
            used(&d, 4 - i as u64);
            digests.push(d);
        }
        // KEPT trees: keeping one more evicts the least recently used (bb).
        let d = format!("sha256:c{}", KEPT - 1);
        u.keep(unpack(&u, &[("a", "1")]), &d).unwrap();
        used(&d, 1);
        digests.push(d);
        assert!(u.get(&digests[0], u64::MAX).is_none());
        for d in &digests[1..] {
            assert!(u.get(d, u64::MAX).is_some(), "{d}");
        }
        // All just used (by the gets above): keeping more evicts none of them.
        u.keep(unpack(&u, &[("a", "1")]), "sha256:dd").unwrap();
        for d in digests[1..].iter().chain([&"sha256:dd".to_string()]) {
            assert!(cache.path().join("unpacked").join(&d[7..]).exists(), "{d}");
        }
        // Nothing is left in tmp/.
        assert_eq!(
            std::fs::read_dir(cache.path().join("tmp")).unwrap().count(),
            0
        );
    }
}
