//! An image's signatures, attestations and SBOMs at its source, so that they travel with it:
//! the tags `sha256-<hex>.sig`, `.att` and `.sbom` of each digest (cosign's tag-based format,
//! which podman, CRI-O and OpenShift verify), the OCI 1.1 referrers fallback tag
//! `sha256-<hex>`, and what the referrers API lists where the registry offers it (cosign v3
//! stores its bundle format there).
//!
//! A repository's tags are listed once per run, not asked for one by one; a registry whose
//! referrers API answers "not offered" is not asked again.

use crate::image::reference::Reference;
use crate::image::tags;
use crate::registry::Registry;
use anyhow::{anyhow, Result};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

/// The suffixes of the tags that carry something about a digest.
pub const SUFFIXES: [&str; 4] = [".sig", ".att", ".sbom", ""];

/// Something about an image found at its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// A tag (`sha256-<hex>.sig`, ...) and the digest it points at.
    Tag { tag: String, digest: String },
    /// A manifest the referrers API lists.
    Referrer { digest: String },
}

/// The tags that may carry something about `digest`.
pub fn tags_of(digest: &str) -> Vec<String> {
    let base = crate::digest::tag_form(digest);
    SUFFIXES.iter().map(|s| format!("{base}{s}")).collect()
}

type Listed = Arc<OnceLock<Result<BTreeSet<String>, String>>>;

/// What a run has learned of its sources, shared by the copying threads.
#[derive(Default)]
pub struct Cache {
    tags: Mutex<HashMap<String, Listed>>,
    /// Registries whose referrers API is not offered.
    no_referrers: Mutex<BTreeSet<String>>,
}

impl Cache {
    /// The tags of `from`'s repository, listed once.
    fn tags(&self, reg: &mut Registry, from: &Reference) -> Result<BTreeSet<String>> {
        let key = format!("{}/{}", from.registry, from.repository);
        let cell = self
            .tags
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| {
            tags::list(reg)
                .map(|t| t.into_iter().collect())
                .map_err(|e| crate::text::one_line(&e))
        })
        .clone()
        .map_err(|e| anyhow!("listing the tags of {}: {e}", from.repository))
    }
}

/// What exists at the source about each of `digests` (an image's, an index's children
/// included): signature tags first, then referrers.
pub fn find(
    reg: &mut Registry,
    from: &Reference,
    digests: &[String],
    cache: &Cache,
) -> Result<Vec<Found>> {
    let listed = cache.tags(reg, from)?;
    let mut out = Vec::new();
    for d in digests {
        for tag in tags_of(d) {
            if !listed.contains(&tag) {
                continue;
            }
            if let Some(digest) = tags::head_manifest(reg, &tag)? {
                out.push(Found::Tag { tag, digest });
            }
        }
    }
    let offered = !cache
        .no_referrers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&from.registry);
    if offered {
        for d in digests {
            match tags::referrers(reg, d)? {
                None => {
                    cache
                        .no_referrers
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(from.registry.clone());
                    break;
                }
                Some(list) => {
                    for r in list {
                        let seen = out.iter().any(|f| match f {
                            Found::Tag { digest, .. } | Found::Referrer { digest } => {
                                *digest == r.digest
                            }
                        });
                        if !seen {
                            out.push(Found::Referrer { digest: r.digest });
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// What a layout written by a mirror to disk holds about each of `digests`: the signature tags
/// named `REGISTRY/REPOSITORY:TAG` of `from`'s repository, then the referrers named
/// `REGISTRY/REPOSITORY@DIGEST` whose `subject` is one of `digests`.
pub fn find_in_layout(
    layout: &mut crate::oci::layout_reader::Layout,
    from: &Reference,
    digests: &[String],
    limit: u64,
) -> Result<Vec<Found>> {
    use crate::registry::BlobSource;
    let entries = layout.entries(limit)?;
    let repo = format!("{}/{}", from.registry, from.repository);
    let mut out = Vec::new();
    for d in digests {
        for tag in tags_of(d) {
            let name = format!("{repo}:{tag}");
            if let Some(e) = entries.iter().find(|e| e.name == name) {
                out.push(Found::Tag {
                    tag,
                    digest: e.digest.clone(),
                });
            }
        }
    }
    let prefix = format!("{repo}@");
    for e in entries.iter().filter(|e| e.name.starts_with(&prefix)) {
        let bytes = layout.manifest(&e.digest, limit)?.bytes;
        let subject = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.pointer("/subject/digest")?.as_str().map(str::to_string));
        if subject.is_some_and(|s| digests.contains(&s)) {
            out.push(Found::Referrer {
                digest: e.digest.clone(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tags_of_a_digest() {
        assert_eq!(
            super::tags_of("sha256:ab"),
            [
                "sha256-ab.sig",
                "sha256-ab.att",
                "sha256-ab.sbom",
                "sha256-ab"
            ]
        );
    }
}
