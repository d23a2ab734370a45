//! Phase 1: what a `DeleteImageSetConfiguration` deletes from what this workspace mirrored,
//! and what it keeps and why. It reads the workspace's record ([`Standing`]) and, for a
//! selection inside a catalog, the catalog as it stands at the destination; it writes nothing
//! to the registry.

use super::list::{Item, ItemType};
use super::{Change, DeletePlan, Kept, Planned};
use crate::error::Error;
use crate::mirror::config::{unique_name, ImageSetConfiguration};
use crate::mirror::destination::Destination;
use crate::mirror::standing::{Owner, Standing};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::mirror::standing::Bundles;

/// Makes the plan: `cfg` (the `delete:` section) against `standing`, the record of
/// `destination`, pulling the catalogs it selects inside with `image`.
pub fn plan(
    cfg: &ImageSetConfiguration,
    standing: &Standing,
    destination: &Destination,
    image: &crate::image::ImageOptions,
) -> Result<DeletePlan, Error> {
    let mut out = DeletePlan {
        destination: destination.given(),
        ..Default::default()
    };
    for op in &cfg.mirror.operators {
        let name = unique_name(op);
        let found: Vec<(&String, &crate::mirror::standing::Catalog)> = standing
            .catalogs
            .iter()
            .filter(|(d, c)| c.source == op.catalog && c.entry == name && destination.holds(d))
            .collect();
        if found.is_empty() {
            return Err(Error::Usage(format!(
                "catalog {name}: this workspace has not mirrored it to {}",
                destination.given()
            )));
        }
        for (dest, c) in found {
            let whole = op.packages.is_empty() && !op.full;
            let removed: Bundles = if whole {
                c.bundles.clone()
            } else {
                let pinned = destination.pinned(dest, &c.digest);
                let (fbc, _) = super::catalogs::pull(&pinned, image)?;
                let selected = crate::mirror::filter::filter(&fbc, op)
                    .map_err(|e| Error::Usage(format!("catalog {name}: {e}")))?;
                intersect(&selected.kept, &c.bundles)
            };
            out.catalogs.push(Change {
                destination: dest.clone(),
                source: c.source.clone(),
                digest: c.digest.clone(),
                whole,
                removed,
            });
        }
    }
    let additional: BTreeSet<&str> = cfg
        .mirror
        .additional_images
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    let changes = out.catalogs.clone();
    decide(standing, &mut out, destination, &|_, owner, img| {
        goes(owner, &changes, &img.source, &additional)
    });
    Ok(out)
}

/// The bundles of `a` that `b` has.
fn intersect(a: &Bundles, b: &Bundles) -> Bundles {
    a.iter()
        .filter_map(|(p, bundles)| {
            let have = b.get(p)?;
            let both: BTreeSet<String> = bundles.intersection(have).cloned().collect();
            (!both.is_empty()).then(|| (p.clone(), both))
        })
        .collect()
}

/// Whether `owner` goes with the catalog changes or the additional images.
fn goes(owner: &Owner, changes: &[Change], source: &str, additional: &BTreeSet<&str>) -> bool {
    match owner {
        Owner::Additional => additional.contains(source),
        Owner::Bundle {
            catalog,
            package,
            bundle,
            ..
        } => changes.iter().any(|c| {
            &c.destination == catalog && c.removed.get(package).is_some_and(|b| b.contains(bundle))
        }),
    }
}

/// What names an owner, in a sentence.
pub fn owner_line(o: &Owner) -> String {
    match o {
        Owner::Additional => "an additional image the workspace keeps".to_string(),
        Owner::Bundle {
            catalog,
            bundle,
            related,
            ..
        } => format!(
            "the bundle {bundle} of the catalog {catalog}{}",
            if *related { " (a related image)" } else { "" }
        ),
    }
}

/// Whether an owner of the image at a destination goes (`goes(destination, owner, image)`).
pub type Goes<'a> = dyn Fn(&str, &Owner, &crate::mirror::standing::Image) -> bool + 'a;

/// Sorts every image under `destination` an owner of which goes into deleted (nothing else names it,
/// nor its digest in its repository) and kept (with what still needs it); then the catalogs
/// the plan deletes whole, unless a catalog or image that stays has the same digest in the
/// same repository (a DELETE by digest would take its tag too).
pub fn decide(standing: &Standing, plan: &mut DeletePlan, destination: &Destination, goes: &Goes) {
    // (repository, digest) -> what still names any image of it.
    let mut needed: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut touched: Vec<(&String, &crate::mirror::standing::Image, ItemType)> = Vec::new();
    for (dest, img) in &standing.images {
        let (going, staying): (Vec<&Owner>, Vec<&Owner>) =
            img.named_by.iter().partition(|o| goes(dest, o, img));
        let key = Standing::key(dest, &img.digest);
        let still: Vec<String> = staying.iter().map(|o| owner_line(o)).collect();
        if !still.is_empty() || going.is_empty() || !destination.holds(dest) {
            needed.entry(key).or_default().extend(still);
        }
        if let Some(first) = going.first() {
            // An additional image's owner goes only with a `generic` item.
            let kind = match first {
                _ if going.contains(&&Owner::Additional) => ItemType::Generic,
                Owner::Bundle { related: true, .. } => ItemType::OperatorRelatedImage,
                _ => ItemType::OperatorBundle,
            };
            touched.push((dest, img, kind));
        }
    }
    for (dest, img, kind) in touched {
        let key = Standing::key(dest, &img.digest);
        match needed.get(&key) {
            Some(by) => plan.kept.push(Kept {
                destination: dest.clone(),
                digest: img.digest.clone(),
                source: img.source.clone(),
                needed_by: if by.is_empty() {
                    vec![format!(
                        "another tag of the same digest in {}, which the workspace keeps",
                        key.0
                    )]
                } else {
                    by.clone()
                },
            }),
            None => plan.delete.push(Planned {
                destination: dest.clone(),
                digest: img.digest.clone(),
                source: img.source.clone(),
                kind,
            }),
        }
    }
    let whole: BTreeSet<&str> = plan
        .catalogs
        .iter()
        .filter(|c| c.whole)
        .map(|c| c.destination.as_str())
        .collect();
    let mut catalogs = Vec::new();
    for c in plan.catalogs.iter().filter(|c| c.whole) {
        let going = |d: &str| whole.contains(d);
        match standing.sharing(&c.destination, &c.digest, &going) {
            Some(by) => plan.kept.push(Kept {
                destination: c.destination.clone(),
                digest: c.digest.clone(),
                source: c.source.clone(),
                needed_by: vec![by],
            }),
            None => catalogs.push(Planned {
                destination: c.destination.clone(),
                digest: c.digest.clone(),
                source: c.source.clone(),
                kind: ItemType::OperatorCatalog,
            }),
        }
    }
    plan.delete.extend(catalogs);
}

/// The list's items for `plan`, named as `destination` names them.
pub fn items(plan: &DeletePlan, destination: &Destination) -> Vec<Item> {
    plan.delete
        .iter()
        .map(|p| Item {
            image_name: p.source.clone(),
            image_reference: destination.reference(&p.destination),
            kind: p.kind,
        })
        .collect()
}
