//! Positive answers of earlier image checks, per (registry, repository, digest), kept in the
//! image cache directory as `image-checks.json`: what is named by digest cannot change, so a
//! rerun asks a registry only about tags and about what failed before. The platform an image
//! config names is kept too, per config digest: a tag's manifest that names a known config
//! needs no second request. A file that cannot be read is an empty cache; the file is replaced
//! whole (a temporary file renamed), never half-written.
//!
//! A tag is never answered from here alone: what a tag named when it was read (within
//! [`TAG_MAX_AGE`]) is used only once the tag is found again in its repository's tag list
//! (one request for all of a repository's tags, [`super::lookup`]); otherwise it is read again.

use super::refs::Platform;
use super::remote::{Configs, Served};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long what a tag named is trusted once its repository lists the tag again.
pub const TAG_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// What a tag named when it was read, and when (seconds since the epoch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct TagSeen {
    digest: String,
    at: u64,
}

/// The cache file's name in the image cache directory.
pub const FILE: &str = "image-checks.json";

/// The file as read.
#[derive(Default, Deserialize)]
struct Doc {
    version: u32,
    found: BTreeMap<String, Served>,
    /// Image config digest: the OS and architecture it names.
    #[serde(default)]
    configs: BTreeMap<String, Platform>,
    /// `registry/repository:tag`: the digest it named.
    #[serde(default)]
    tags: BTreeMap<String, TagSeen>,
}

/// The file as written, from the maps in place.
#[derive(Serialize)]
struct DocRef<'a> {
    version: u32,
    found: &'a BTreeMap<String, Served>,
    configs: &'a BTreeMap<String, Platform>,
    tags: &'a BTreeMap<String, TagSeen>,
}

/// What is known: the answers, the configs' platforms, and whether any was added this run.
#[derive(Default)]
struct Known {
    found: BTreeMap<String, Served>,
    configs: BTreeMap<String, Platform>,
    tags: BTreeMap<String, TagSeen>,
    /// The configs read this run (all that is asked with `--no-cache`).
    learned: BTreeMap<String, Platform>,
    added: bool,
}

const VERSION: u32 = 1;

/// The answers known, kept in `path` when there is one.
pub struct Cache {
    path: Option<PathBuf>,
    known: Mutex<Known>,
    /// Earlier runs' configs are not used (`--no-cache`); answers are still kept.
    fresh: bool,
}

/// `registry/repository@digest` for a reference by digest; `None` for a tag.
pub fn key(reference: &str) -> Option<String> {
    let r = crate::imageref::parse(reference).ok()?;
    Some(format!("{}/{}@{}", r.domain, r.path, r.digest?))
}

/// `registry/repository` and the tag of a reference by tag alone (the one spelling of a
/// repository the cache and the tag lists share).
pub fn repo_tag(reference: &str) -> Option<(String, String)> {
    let r = crate::imageref::parse(reference).ok()?;
    if r.digest.is_some() {
        return None;
    }
    Some((format!("{}/{}", r.domain, r.path), r.tag?))
}

/// `registry/repository:tag` and `registry/repository` for a reference by tag alone.
fn tag_key(reference: &str) -> Option<(String, String)> {
    let (repo, tag) = repo_tag(reference)?;
    Some((format!("{repo}:{tag}"), repo))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Cache {
    /// The cache of `dir` (`None`: a cache that keeps nothing); `fresh`: what earlier runs
    /// kept is not answered from, only added to.
    pub fn open(dir: Option<&Path>, fresh: bool) -> Cache {
        let path = dir.map(|d| d.join(FILE));
        let known = path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice::<Doc>(&b).ok())
            .filter(|d| d.version == VERSION)
            .map(|d| Known {
                found: d.found,
                configs: d.configs,
                tags: d.tags,
                learned: BTreeMap::new(),
                added: false,
            })
            .unwrap_or_default();
        Cache {
            path,
            known: Mutex::new(known),
            fresh,
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, reference: &str) -> Option<Served> {
        if self.fresh {
            return None;
        }
        let k = key(reference)?;
        self.known().found.get(&k).cloned()
    }

    /// Keeps a positive answer for a reference by digest (a tag's answer is not kept).
    pub fn put(&self, reference: &str, served: &Served) {
        let Some(k) = key(reference) else { return };
        let mut known = self.known();
        if known.found.get(&k) != Some(served) {
            known.found.insert(k, served.clone());
            known.added = true;
        }
    }

    /// For a reference by tag read within [`TAG_MAX_AGE`]: the digest it named and what that
    /// digest is. The caller must find the tag in its repository's list before using it.
    pub fn tagged(&self, reference: &str) -> Option<(String, Served)> {
        if self.fresh {
            return None;
        }
        let (k, repo) = tag_key(reference)?;
        let known = self.known();
        let seen = known.tags.get(&k)?;
        if now().saturating_sub(seen.at) > TAG_MAX_AGE.as_secs() {
            return None;
        }
        let served = known.found.get(&format!("{repo}@{}", seen.digest))?;
        Some((seen.digest.clone(), served.clone()))
    }

    /// Keeps what a reference by tag named when it was read: `digest`, which is `served`.
    pub fn put_tag(&self, reference: &str, digest: &str, served: &Served) {
        let Some((k, repo)) = tag_key(reference) else {
            return;
        };
        let mut known = self.known();
        known
            .found
            .insert(format!("{repo}@{digest}"), served.clone());
        let seen = TagSeen {
            digest: digest.to_string(),
            at: now(),
        };
        known.tags.insert(k, seen);
        known.added = true;
    }

    /// Writes the answers back when any was added, whole or not at all.
    pub fn save(&self) -> anyhow::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let known = self.known();
        if !known.added {
            return Ok(());
        }
        // Written from the maps in place, through a buffer: no copy of the answers, no whole
        // document in memory (a catalog-scale cache holds tens of thousands of entries).
        let doc = DocRef {
            version: VERSION,
            found: &known.found,
            configs: &known.configs,
            tags: &known.tags,
        };
        let write = || -> std::io::Result<()> {
            use std::io::Write as _;
            std::fs::create_dir_all(crate::atomic::parent(path))?;
            let mut f = crate::atomic::File::create(path, &crate::atomic::Options::default())?;
            let mut w = std::io::BufWriter::new(&mut f);
            serde_json::to_writer(&mut w, &doc)?;
            w.flush()?;
            drop(w);
            f.commit()
        };
        write().map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }
}

impl Configs for Cache {
    /// The platform the image config `digest` names, when it was read before.
    fn config(&self, digest: &str) -> Option<Platform> {
        let known = self.known();
        let from = if self.fresh {
            &known.learned
        } else {
            &known.configs
        };
        from.get(digest).cloned()
    }

    /// Keeps the platform image config `digest` names.
    fn put_config(&self, digest: &str, platform: &Platform) {
        let mut known = self.known();
        known.learned.insert(digest.to_string(), platform.clone());
        if known.configs.get(digest) != Some(platform) {
            known.configs.insert(digest.to_string(), platform.clone());
            known.added = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_kept_across_runs_and_tags_never() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("q.io/a/b@sha256:{}", "1".repeat(64));
        let c = Cache::open(Some(dir.path()), false);
        assert_eq!(c.get(&d), None);
        c.put(&d, &Served::Index(vec![("linux".into(), "amd64".into())]));
        c.put("q.io/a/b:1", &Served::Image(None));
        let config = format!("sha256:{}", "2".repeat(64));
        c.put_config(&config, &("linux".into(), "s390x".into()));
        c.save().unwrap();
        let c = Cache::open(Some(dir.path()), false);
        assert!(matches!(c.get(&d), Some(Served::Index(_))));
        assert_eq!(c.config(&config), Some(("linux".into(), "s390x".into())));
        assert_eq!(c.config(&format!("sha256:{}", "3".repeat(64))), None);
        // A tag: what it named, once read; an old reading is not used.
        let t = "q.io/a/b:v2";
        assert_eq!(c.tagged(t), None);
        c.put_tag(
            t,
            &format!("sha256:{}", "4".repeat(64)),
            &Served::Image(None),
        );
        assert_eq!(c.tagged(t).map(|x| x.1), Some(Served::Image(None)));
        assert_eq!(c.tagged("q.io/a/b:v3"), None);
        c.known()
            .tags
            .values_mut()
            .for_each(|s| s.at -= TAG_MAX_AGE.as_secs() + 1);
        assert_eq!(c.tagged(t), None);
        // --no-cache: nothing from earlier runs, what this run reads is used.
        let fresh = Cache::open(Some(dir.path()), true);
        assert_eq!((fresh.get(&d), fresh.config(&config)), (None, None));
        fresh.put_config(&config, &("linux".into(), "arm64".into()));
        assert_eq!(
            fresh.config(&config),
            Some(("linux".into(), "arm64".into()))
        );
        assert_eq!(c.get("q.io/a/b:1"), None);
        // A tag with the digest is the same image.
        assert!(c.get(&d.replace("@", ":v1@")).is_some());
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        assert_eq!(Cache::open(Some(dir.path()), false).get(&d), None);
        Cache::open(None, false).save().unwrap();
    }
}
