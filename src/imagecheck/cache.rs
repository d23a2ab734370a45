//! Positive answers of earlier image checks, per (registry, repository, digest), kept in the
//! image cache directory as `image-checks.json`: what is named by digest cannot change, so a
//! rerun asks a registry only about tags and about what failed before. A file that cannot be
//! read is an empty cache; the file is replaced whole (a temporary file renamed), never
//! half-written.

use super::remote::Served;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The cache file's name in the image cache directory.
pub const FILE: &str = "image-checks.json";

#[derive(Default, Serialize, Deserialize)]
struct Doc {
    version: u32,
    found: BTreeMap<String, Served>,
}

const VERSION: u32 = 1;

/// The answers known, and whether any was added this run.
pub struct Cache {
    path: Option<PathBuf>,
    known: Mutex<(BTreeMap<String, Served>, bool)>,
}

/// `registry/repository@digest` for a reference by digest; `None` for a tag.
pub fn key(reference: &str) -> Option<String> {
    let r = crate::imageref::parse(reference).ok()?;
    Some(format!("{}/{}@{}", r.domain, r.path, r.digest?))
}

impl Cache {
    /// The cache of `dir` (`None`: a cache that keeps nothing).
    pub fn open(dir: Option<&Path>) -> Cache {
        let path = dir.map(|d| d.join(FILE));
        let found = path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice::<Doc>(&b).ok())
            .filter(|d| d.version == VERSION)
            .map(|d| d.found)
            .unwrap_or_default();
        Cache {
            path,
            known: Mutex::new((found, false)),
        }
    }

    pub fn get(&self, reference: &str) -> Option<Served> {
        let k = key(reference)?;
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.0.get(&k).cloned()
    }

    /// Keeps a positive answer for a reference by digest (a tag's answer is not kept).
    pub fn put(&self, reference: &str, served: &Served) {
        let Some(k) = key(reference) else { return };
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.0.get(&k) != Some(served) {
            known.0.insert(k, served.clone());
            known.1 = true;
        }
    }

    /// Writes the answers back when any was added, whole or not at all.
    pub fn save(&self) -> anyhow::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if !known.1 {
            return Ok(());
        }
        let doc = Doc {
            version: VERSION,
            found: known.0.clone(),
        };
        let bytes = serde_json::to_vec(&doc)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)
            .and_then(|()| crate::atomic::write(path, &bytes, &crate::atomic::Options::default()))
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_kept_across_runs_and_tags_never() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("q.io/a/b@sha256:{}", "1".repeat(64));
        let c = Cache::open(Some(dir.path()));
        assert_eq!(c.get(&d), None);
        c.put(&d, &Served::Index(vec![("linux".into(), "amd64".into())]));
        c.put("q.io/a/b:1", &Served::Image(None));
        c.save().unwrap();
        let c = Cache::open(Some(dir.path()));
        assert!(matches!(c.get(&d), Some(Served::Index(_))));
        assert_eq!(c.get("q.io/a/b:1"), None);
        // A tag with the digest is the same image.
        assert!(c.get(&d.replace("@", ":v1@")).is_some());
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        assert_eq!(Cache::open(Some(dir.path())).get(&d), None);
        Cache::open(None).save().unwrap();
    }
}
