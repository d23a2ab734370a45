//! Catalogs stay true: a catalog that loses bundles is rebuilt without them (on its own image
//! at the destination, the same rebuild `mirror` does: valid, cache rebuilt) and pushed to the
//! same tag before any of its images is deleted; the superseded manifest is deleted after.

use super::Change;
use crate::error::Error;
use crate::mirror::plan::PlannedCatalog;
use crate::mirror::rebuild::{self, RebuildOptions};
use crate::mirror::standing::repository_of;
use crate::model::Catalog;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The catalog image at `pinned` (`REPOSITORY@DIGEST`), read whole, and where its image keeps
/// its configs.
pub fn pull(pinned: &str, image: &crate::image::ImageOptions) -> Result<(Catalog, String), Error> {
    let resolved = crate::load::resolve(&[PathBuf::from(pinned)], image, &Default::default())?;
    let configs = match resolved.images.first().and_then(|i| i.as_ref()) {
        Some(i) => match &i.kind {
            crate::image::kind::ImageKind::Catalog { configs } => configs.clone(),
            _ => "/configs".to_string(),
        },
        None => "/configs".to_string(),
    };
    let checked = crate::load::check(&resolved, &Default::default(), &mut |b, _| b);
    let catalog = checked.result.map(|c| c.into_inner()).map_err(|_| {
        let first = checked.errors.first().map(crate::error::diagnostic_line);
        Error::failed(format!(
            "the mirrored catalog {pinned} cannot be read: {}",
            first.unwrap_or_default()
        ))
    })?;
    Ok((catalog, configs))
}

/// `catalog` without the `removed` bundles: their channel entries go, channels left empty go,
/// and a package left with no bundle goes with its metas and deprecations.
pub fn without(catalog: &Catalog, removed: &BTreeMap<String, BTreeSet<String>>) -> Catalog {
    let mut out = catalog.clone();
    for (package, bundles) in removed {
        let Some(p) = out.packages.get_mut(package) else {
            continue;
        };
        p.bundles.retain(|name, _| !bundles.contains(name));
        for ch in p.channels.values_mut() {
            ch.entries.retain(|e| !bundles.contains(&e.name));
        }
        p.channels.retain(|_, ch| !ch.entries.is_empty());
        if let Some(d) = p.deprecations.as_mut() {
            let channels: BTreeSet<String> = p.channels.keys().cloned().collect();
            d.entries.retain(|e| match e.schema.as_str() {
                "olm.bundle" => !bundles.contains(&e.name),
                "olm.channel" => channels.contains(&e.name),
                _ => true,
            });
        }
        if p.bundles.is_empty() {
            out.packages.remove(package);
            out.others.retain(|m| &m.package != package);
        }
    }
    out
}

/// Whether the catalog still holds any of `removed`.
fn holds_any(catalog: &Catalog, removed: &BTreeMap<String, BTreeSet<String>>) -> bool {
    removed.iter().any(|(p, bundles)| {
        catalog
            .packages
            .get(p)
            .is_some_and(|pkg| bundles.iter().any(|b| pkg.bundles.contains_key(b)))
    })
}

/// What happened to one catalog.
#[derive(Clone, Debug)]
pub struct Rebuilt {
    pub destination: String,
    /// The digest pushed; `None` when the destination's catalog had none of the bundles any
    /// more (an earlier run of the same list rebuilt it).
    pub digest: Option<String>,
}

/// `change`'s catalog as it stands at `pinned` (with `digest`), without its removed bundles,
/// ready to build on its own image; `None` when it holds none of them any more (an earlier
/// run of the same list rebuilt it). The catalog without them must validate.
pub fn planned(
    change: &Change,
    pinned: &str,
    digest: &str,
    image: &crate::image::ImageOptions,
) -> Result<Option<PlannedCatalog>, Error> {
    let (catalog, configs_path) = pull(pinned, image)?;
    if !holds_any(&catalog, &change.removed) {
        return Ok(None);
    }
    let remaining = without(&catalog, &change.removed);
    let problems: Vec<String> = crate::validate::validate(&remaining)
        .iter()
        .filter(|d| d.is_error())
        .map(crate::error::diagnostic_line)
        .collect();
    if !problems.is_empty() {
        return Err(Error::failed(format!(
            "catalog {}: without the bundles to delete it is invalid, nothing was deleted: {}",
            change.destination,
            problems.join("; ")
        )));
    }
    Ok(Some(PlannedCatalog {
        entry: crate::mirror::config::Operator {
            catalog: change.source.clone(),
            ..Default::default()
        },
        pinned: pinned.to_string(),
        digest: digest.to_string(),
        destination: change.destination.clone(),
        configs_path,
        catalog: remaining,
        bundles_in_source: 0,
        kept: Default::default(),
        added: Vec::new(),
        why: Default::default(),
        warnings: Vec::new(),
    }))
}

/// How a catalog is rebuilt: on its own image, as `image` reads it.
pub fn options(image: &crate::image::ImageOptions) -> RebuildOptions {
    RebuildOptions {
        image: image.clone(),
        catalog_base: None,
        chunk_size: 16 << 20,
    }
}

/// Rebuilds `change`'s catalog without its removed bundles and pushes it to the same tag;
/// `current` is the digest the tag names now.
pub fn rebuild(
    change: &Change,
    current: &str,
    image: &crate::image::ImageOptions,
) -> Result<Rebuilt, Error> {
    let pinned = format!("{}@{current}", repository_of(&change.destination));
    let Some(planned) = planned(change, &pinned, current, image)? else {
        return Ok(Rebuilt {
            destination: change.destination.clone(),
            digest: None,
        });
    };
    let opts = options(image);
    let r = rebuild::rebuild(&planned, &opts, &image.connection, &crate::progress::Silent)?;
    Ok(Rebuilt {
        destination: r.destination,
        digest: Some(r.digest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::{Bundle, Channel, ChannelEntry, Package};

    /// A package of `channels` (name, entries), each entry a bundle.
    fn package(name: &str, channels: &[(&str, &[&str])]) -> Package {
        let mut p = Package {
            name: name.into(),
            default_channel: channels[0].0.into(),
            ..Default::default()
        };
        for (ch, entries) in channels {
            p.channels.insert(
                ch.to_string(),
                Channel {
                    name: ch.to_string(),
                    entries: entries
                        .iter()
                        .map(|e| ChannelEntry {
                            name: e.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
            );
            for e in *entries {
                p.bundles.insert(
                    e.to_string(),
                    Bundle {
                        name: e.to_string(),
                        package: name.into(),
                        ..Default::default()
                    },
                );
            }
        }
        p
    }

    #[test]
    fn removed_bundles_leave_their_channels_and_an_emptied_package_goes() {
        let mut c = Catalog::default();
        c.packages.insert(
            "a".into(),
            package("a", &[("stable", &["a.v1", "a.v2"]), ("fast", &["a.v2"])]),
        );
        c.packages
            .insert("b".into(), package("b", &[("stable", &["b.v1"])]));
        let removed = |p: &str, b: &[&str]| {
            BTreeMap::from([(p.to_string(), b.iter().map(|s| s.to_string()).collect())])
        };
        let one = without(&c, &removed("a", &["a.v1"]));
        assert_eq!(one.packages["a"].bundles.len(), 1);
        assert_eq!(one.packages["a"].channels["stable"].entries.len(), 1);
        assert!(holds_any(&one, &removed("a", &["a.v2"])));
        assert!(!holds_any(&one, &removed("a", &["a.v1"])));
        let gone = without(&c, &removed("b", &["b.v1"]));
        assert!(!gone.packages.contains_key("b") && gone.packages.contains_key("a"));
        let head = without(&c, &removed("a", &["a.v2"]));
        assert!(!head.packages["a"].channels.contains_key("fast"));
    }
}
