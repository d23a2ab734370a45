//! Stand-in images for the mirror-delete measurements (`mirror_delete.rs`): small images, each
//! its own manifest digest over one shared config and one small gzip layer, pushed to a
//! `docker-registry` on loopback; and a catalog rewritten so that every bundle image and
//! related image it names is such a stand-in (a by-digest reference carries its stand-in's
//! digest, a tag stays the tag), of which only those a plan names need pushing.

use crate::image_checks::{blob, manifest, sha, MANIFEST};
use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

/// One stand-in image: its repository at the registry, the tag or digest it is pushed under,
/// and its manifest.
pub struct StandIn {
    pub repo: String,
    pub name: String,
    pub body: Vec<u8>,
}

/// The config and layer every stand-in shares.
pub struct Parts {
    config: Vec<u8>,
    layer: Vec<u8>,
}

impl Parts {
    pub fn new() -> Result<Parts, String> {
        let data = b"stand-in\n";
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "stand-in.txt", &data[..])
            .map_err(e)?;
        let tar = b.into_inner().map_err(e)?;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).map_err(e)?;
        let layer = gz.finish().map_err(e)?;
        let config = serde_json::json!({"architecture": "amd64", "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [sha(&tar)]}})
        .to_string()
        .into_bytes();
        Ok(Parts { config, layer })
    }

    /// Stand-in number `n` in `repo`, pushed under `tag`, else by its digest.
    pub fn stand_in(&self, repo: &str, tag: Option<&str>, n: usize) -> StandIn {
        let c = (sha(&self.config), self.config.len());
        let l = (sha(&self.layer), self.layer.len());
        let body = manifest(&c, &l, Some(n));
        StandIn {
            repo: repo.to_string(),
            name: tag.map_or_else(|| sha(&body), str::to_string),
            body,
        }
    }

    /// Pushes `images` to the registry at `base`: the two blobs once per repository (mounted
    /// from the first), then the manifests, 8 at a time.
    pub fn push(&self, base: &str, images: &[&StandIn]) -> Result<(), String> {
        let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
        let repos: BTreeSet<&str> = images.iter().map(|i| i.repo.as_str()).collect();
        let first = repos.first().copied();
        for r in &repos {
            let from = first.filter(|f| f != r);
            blob(&agent, base, r, &self.layer, from)?;
            blob(&agent, base, r, &self.config, from)?;
        }
        let next = AtomicUsize::new(0);
        let failed = std::sync::Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    while let Some(i) = images.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let url = format!("{base}/v2/{}/manifests/{}", i.repo, i.name);
                        if let Err(x) = agent
                            .put(&url)
                            .header("Content-Type", MANIFEST)
                            .send(&i.body[..])
                        {
                            *failed.lock().unwrap() = Some(format!("PUT {url}: {x}"));
                            break;
                        }
                    }
                });
            }
        });
        match failed.into_inner().unwrap() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }
}

/// A reference's repository, and its tag when it has one and no digest.
fn split(r: &str) -> (&str, Option<&str>) {
    let (name, digest) = match r.split_once('@') {
        Some((n, _)) => (n, true),
        None => (r, false),
    };
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    match name[slash..].rfind(':') {
        Some(i) => (
            &name[..slash + i],
            (!digest).then(|| &name[slash + i + 1..]),
        ),
        None => (name, None),
    }
}

/// Whether `t` may be a tag at the registry.
fn valid_tag(t: &str) -> bool {
    t.len() <= 128
        && t.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// The references of a rewritten catalog: each stand-in reference (`host/src/rK:TAG` or
/// `host/src/rK@DIGEST`, one repository per repository of the original) → its stand-in.
pub type Rewritten = HashMap<String, StandIn>;

/// Writes `src` (FBC, JSON documents) to `dst` with every bundle's `image` and each
/// `relatedImages[].image` replaced by a stand-in reference at `host`; returns them all.
pub fn rewrite_catalog(
    src: &Path,
    dst: &Path,
    host: &str,
    parts: &Parts,
) -> Result<Rewritten, String> {
    let mut repos: HashMap<String, String> = HashMap::new();
    let mut by_original: HashMap<String, String> = HashMap::new();
    let mut out = Rewritten::new();
    let mut map = |r: &str| -> String {
        if let Some(new) = by_original.get(r) {
            return new.clone();
        }
        let (repo, tag) = split(r);
        let k = repos.len();
        let repo = repos
            .entry(repo.to_string())
            .or_insert_with(|| format!("src/r{k}"))
            .clone();
        let n = by_original.len();
        let tag = match tag {
            Some(t) if valid_tag(t) => Some(t.to_string()),
            Some(_) => Some(format!("t{n}")),
            None if !r.contains('@') => Some("latest".to_string()),
            None => None,
        };
        let s = parts.stand_in(&repo, tag.as_deref(), n);
        let new = match &tag {
            Some(t) => format!("{host}/{repo}:{t}"),
            None => format!("{host}/{repo}@{}", s.name),
        };
        by_original.insert(r.to_string(), new.clone());
        out.insert(new.clone(), s);
        new
    };
    let reader = BufReader::with_capacity(1 << 20, std::fs::File::open(src).map_err(e)?);
    let mut w = BufWriter::new(std::fs::File::create(dst).map_err(e)?);
    for v in serde_json::Deserializer::from_reader(reader).into_iter::<serde_json::Value>() {
        let mut v = v.map_err(e)?;
        if v["schema"] == "olm.bundle" {
            if let Some(i) = v["image"].as_str().filter(|i| !i.is_empty()) {
                v["image"] = map(i).into();
            }
            if let Some(related) = v["relatedImages"].as_array_mut() {
                for r in related {
                    if let Some(i) = r["image"].as_str().filter(|i| !i.is_empty()) {
                        r["image"] = map(i).into();
                    }
                }
            }
        }
        serde_json::to_writer(&mut w, &v).map_err(e)?;
        w.write_all(b"\n").map_err(e)?;
    }
    w.flush().map_err(e)?;
    Ok(out)
}
