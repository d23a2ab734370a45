//! The images a mirror copies and where each goes: every kept bundle's `image` and
//! `relatedImages`, then `additionalImages`, less those a `blockedImages` pattern matches, each
//! once per target (an additional image listed twice with different `targetRepo`/`targetTag` is
//! copied to both); and each one's name at the destination, `DEST/PREFIX/<source path>` with the tag or
//! digest the catalog or the configuration wrote (`--max-nested-paths` folds deeper paths as
//! oc-mirror folds them).

use super::config::ImageSetConfiguration;
use super::MirrorError;
use crate::model::Catalog;
use std::collections::BTreeMap;

/// Why an image is copied.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    /// A bundle's image (`related` false) or one of its related images.
    Bundle {
        package: String,
        bundle: String,
        related: bool,
    },
    Additional,
}

/// One image to copy, as the catalog or the configuration names it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wanted {
    pub source: String,
    /// `targetRepo` and `targetTag` of an additional image.
    pub target_repo: Option<String>,
    pub target_tag: Option<String>,
    /// Every place that names it, first first.
    pub origins: Vec<Origin>,
}

/// The images of `catalogs` (filtered) and `cfg`'s additional images, less the blocked ones,
/// each once per (source, target repository, target tag), in a stable order (as first named).
/// Returns them and the blocked ones.
pub fn wanted(catalogs: &[&Catalog], cfg: &ImageSetConfiguration) -> (Vec<Wanted>, Vec<String>) {
    let blocked: Vec<regex::Regex> = cfg
        .mirror
        .blocked_images
        .iter()
        .filter_map(|b| regex::Regex::new(&b.name).ok())
        .collect();
    type Key = (String, Option<String>, Option<String>);
    let mut order: Vec<Key> = Vec::new();
    let mut by_key: BTreeMap<Key, Wanted> = BTreeMap::new();
    let mut refused = Vec::new();
    let mut add = |source: &str, origin: Origin, repo: Option<&str>, tag: Option<&str>| {
        if source.is_empty() {
            return;
        }
        if blocked.iter().any(|r| r.is_match(source)) {
            if !refused.iter().any(|s| s == source) {
                refused.push(source.to_string());
            }
            return;
        }
        let key: Key = (
            source.to_string(),
            repo.filter(|r| !r.is_empty()).map(str::to_string),
            tag.filter(|t| !t.is_empty()).map(str::to_string),
        );
        let w = by_key.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Wanted {
                source: key.0,
                target_repo: key.1,
                target_tag: key.2,
                origins: Vec::new(),
            }
        });
        w.origins.push(origin);
    };
    for p in catalogs.iter().flat_map(|c| c.packages.values()) {
        for b in p.bundles.values() {
            let origin = |related| Origin::Bundle {
                package: p.name.clone(),
                bundle: b.name.clone(),
                related,
            };
            add(&b.image, origin(false), None, None);
            for r in &b.related_images {
                add(&r.image, origin(true), None, None);
            }
        }
    }
    for a in &cfg.mirror.additional_images {
        add(
            &a.name,
            Origin::Additional,
            Some(&a.target_repo),
            Some(&a.target_tag),
        );
    }
    let list = order
        .into_iter()
        .filter_map(|k| by_key.remove(&k))
        .collect();
    (list, refused)
}

/// Where an image goes: `dest` (`REGISTRY[/PREFIX]`), then the source's path without its
/// registry (or `target_repo`), folded to `max_nested` components when that is not 0, then
/// the tag (or `target_tag`) or digest as written. The error names the reference.
pub fn destination(w: &Wanted, dest: &str, max_nested: usize) -> Result<String, MirrorError> {
    let n = crate::imageref::parse(&w.source)
        .map_err(|e| MirrorError::from(format!("image {:?}: {e}", w.source)))?;
    let path = w.target_repo.clone().unwrap_or(n.path);
    let full = format!("{}/{}", dest.trim_end_matches('/'), path);
    let (host, repo) = full.split_once('/').unwrap_or((&full, ""));
    let repo = fold(repo, max_nested);
    let suffix = match (&w.target_tag, &n.tag, &n.digest) {
        (Some(t), _, _) => format!(":{t}"),
        (None, _, Some(d)) => format!("@{d}"),
        (None, Some(t), None) => format!(":{t}"),
        (None, None, None) => ":latest".to_string(),
    };
    Ok(format!("{host}/{repo}{suffix}"))
}

/// oc-mirror's `WithMaxNestedPaths`: the first `max - 1` components as they are, the rest
/// joined with `-` as the last one.
fn fold(path: &str, max: usize) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    if max == 0 || parts.len() <= max {
        return path.to_string();
    }
    let mut out: Vec<String> = parts[..max - 1].iter().map(|s| s.to_string()).collect();
    out.push(parts[max - 1..].join("-"));
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::config::{AdditionalImage, BlockedImage};
    use crate::model::{Bundle, Package, RelatedImage};

    fn catalog() -> Catalog {
        let mut p = Package {
            name: "etcd".into(),
            ..Default::default()
        };
        for (name, image, related) in [
            (
                "etcd.v1",
                "quay.io/coreos/etcd-bundle:v1",
                vec![
                    "quay.io/coreos/etcd@sha256:aa",
                    "docker.io/library/alpine:3",
                ],
            ),
            (
                "etcd.v2",
                "quay.io/coreos/etcd-bundle:v2",
                vec!["quay.io/coreos/etcd@sha256:aa"],
            ),
        ] {
            p.bundles.insert(
                name.into(),
                Bundle {
                    name: name.into(),
                    package: "etcd".into(),
                    image: image.into(),
                    related_images: related
                        .into_iter()
                        .map(|i| RelatedImage {
                            name: String::new(),
                            image: i.into(),
                        })
                        .collect(),
                    ..Default::default()
                },
            );
        }
        let mut c = Catalog::default();
        c.packages.insert("etcd".into(), p);
        c
    }

    #[test]
    fn images_are_listed_once_less_the_blocked_ones() {
        let mut cfg = ImageSetConfiguration::default();
        cfg.mirror.additional_images.push(AdditionalImage {
            name: "registry.redhat.io/ubi8/ubi:latest".into(),
            target_repo: "base/ubi".into(),
            target_tag: "8".into(),
            ..Default::default()
        });
        cfg.mirror.blocked_images.push(BlockedImage {
            name: ".*/alpine.*".into(),
        });
        // The same source again, plain and under another target: one more copy, not two.
        for (repo, tag) in [("", ""), ("renamed/etcd", "v9"), ("", "")] {
            cfg.mirror.additional_images.push(AdditionalImage {
                name: "quay.io/coreos/etcd-bundle:v2".into(),
                target_repo: repo.into(),
                target_tag: tag.into(),
                ..Default::default()
            });
        }
        let (list, blocked) = wanted(&[&catalog()], &cfg);
        let sources: Vec<&str> = list.iter().map(|w| w.source.as_str()).collect();
        assert_eq!(
            sources,
            [
                "quay.io/coreos/etcd-bundle:v1",
                "quay.io/coreos/etcd@sha256:aa",
                "quay.io/coreos/etcd-bundle:v2",
                "registry.redhat.io/ubi8/ubi:latest",
                "quay.io/coreos/etcd-bundle:v2",
            ]
        );
        assert_eq!(
            list[2].origins.len(),
            3,
            "the bundle and two plain listings"
        );
        assert_eq!(
            destination(&list[4], "m:5000", 0).unwrap(),
            "m:5000/renamed/etcd:v9"
        );
        assert_eq!(
            list[1].origins.len(),
            2,
            "named by both bundles, copied once"
        );
        assert_eq!(blocked, ["docker.io/library/alpine:3"]);
        let ubi = &list[3];
        assert_eq!(
            destination(ubi, "mirror.local:5000/ocp", 0).unwrap(),
            "mirror.local:5000/ocp/base/ubi:8"
        );
    }

    #[test]
    fn destinations_keep_the_path_and_what_was_written() {
        let w = |s: &str| Wanted {
            source: s.into(),
            target_repo: None,
            target_tag: None,
            origins: vec![],
        };
        let digest = format!("sha256:{}", "a".repeat(64));
        for (src, dest, nested, want) in [
            (
                "quay.io/coreos/etcd:v1",
                "m:5000",
                0,
                "m:5000/coreos/etcd:v1".to_string(),
            ),
            (
                "quay.io/coreos/etcd:v1",
                "m:5000/a/b",
                0,
                "m:5000/a/b/coreos/etcd:v1".into(),
            ),
            ("alpine", "m:5000", 0, "m:5000/library/alpine:latest".into()),
            (
                &format!("registry.redhat.io/openshift4/ose-kube-rbac-proxy@{digest}"),
                "m:5000/prefix",
                2,
                format!("m:5000/prefix/openshift4-ose-kube-rbac-proxy@{digest}"),
            ),
        ] {
            assert_eq!(destination(&w(src), dest, nested).unwrap(), want, "{src}");
        }
        assert!(destination(&w("UPPER/Case"), "m", 0).is_err());
    }
}
