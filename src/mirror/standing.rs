//! What stands at a destination registry, by the workspace's record (`standing.json`): each
//! catalog mirror runs pushed (its destination, the configuration entry it came from, and the
//! bundles it keeps) and each image they copied (destination, digest, and what names it: a
//! bundle of one of those catalogs, or the configuration's additional images). Mirror runs add
//! to it ([`Standing::add_run`]); deletes take from it. It decides what may be deleted: an
//! image is deleted only when nothing still standing names it, and since a DELETE by digest
//! takes every tag on that digest in its repository, per (repository, digest).

use super::plan::Plan;
use super::transfer::Outcome;
use super::MirrorError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The record's file name in the workspace.
pub const FILE: &str = "standing.json";

/// A catalog pushed to the destination.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    /// The configuration entry's catalog, as written there.
    pub source: String,
    /// The entry's name in its configuration (`targetCatalog:targetTag`, else the catalog).
    pub entry: String,
    /// The digest pushed.
    pub digest: String,
    /// Package -> the bundles the catalog keeps.
    pub bundles: BTreeMap<String, BTreeSet<String>>,
}

/// What names an image.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Owner {
    /// A bundle of a standing catalog (by its destination): its image, or a related one.
    Bundle {
        catalog: String,
        package: String,
        bundle: String,
        related: bool,
    },
    /// An additional image of a configuration.
    Additional,
}

/// An image copied to the destination.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    pub source: String,
    pub digest: String,
    pub named_by: BTreeSet<Owner>,
}

/// The whole record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    /// Destination reference -> catalog.
    pub catalogs: BTreeMap<String, Catalog>,
    /// Destination reference -> image.
    pub images: BTreeMap<String, Image>,
    /// Destination reference -> digest, of what deletes took away (so that the same list run
    /// again counts them as already gone); a later run that copies one again takes it out.
    #[serde(default)]
    pub deleted: BTreeMap<String, String>,
}

impl Standing {
    /// The record in `workspace` (empty when there is none); a damaged one is an error naming
    /// it, since deleting on a wrong record could delete what stands.
    pub fn read(workspace: &Path) -> Result<Standing, MirrorError> {
        let path = workspace.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| MirrorError::from(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Standing::default()),
            Err(e) => Err(MirrorError::from(format!("{}: {e}", path.display()))),
        }
    }

    /// Writes the record into `workspace`, whole or not at all.
    pub fn write(&self, workspace: &Path) -> Result<(), MirrorError> {
        let bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        super::workspace::write_named(&workspace.join(FILE), &bytes)
    }

    /// Adds a run: its catalogs (`pushed`: destination -> digest, for those pushed) replace
    /// the earlier record of the same destination, and each image copied without error is
    /// added with what names it in this plan (an image named before keeps those names).
    pub fn add_run(&mut self, plan: &Plan, pushed: &BTreeMap<String, String>, done: &[Outcome]) {
        for c in &plan.catalogs {
            let Some(digest) = pushed.get(&c.destination) else {
                continue;
            };
            self.deleted.remove(&c.destination);
            self.catalogs.insert(
                c.destination.clone(),
                Catalog {
                    source: c.entry.catalog.clone(),
                    entry: super::config::unique_name(&c.entry),
                    digest: digest.clone(),
                    bundles: c.kept.clone(),
                },
            );
        }
        let ok: BTreeMap<&str, &Outcome> = done
            .iter()
            .filter(|o| o.error.is_none() && !o.digest.is_empty())
            .map(|o| (o.destination.as_str(), o))
            .collect();
        let catalogs: Vec<(&str, &Bundles)> = plan
            .catalogs
            .iter()
            .map(|c| (c.destination.as_str(), &c.kept))
            .collect();
        for img in &plan.images {
            let Some(o) = ok.get(img.destination.as_str()) else {
                continue;
            };
            self.deleted.remove(&img.destination);
            let entry = self.images.entry(img.destination.clone()).or_default();
            if entry.digest != o.digest {
                // The tag moved to another digest: what named the old one names this one.
                entry.named_by.clear();
            }
            entry.source = img.wanted.source.clone();
            entry.digest = o.digest.clone();
            entry
                .named_by
                .extend(owners(&catalogs, &img.wanted.origins));
        }
    }

    /// Takes the image or catalog at `destination` out of what stands, remembering it deleted.
    pub fn delete(&mut self, destination: &str, digest: &str) {
        self.images.remove(destination);
        self.catalogs.remove(destination);
        self.deleted
            .insert(destination.to_string(), digest.to_string());
    }

    /// A catalog or image standing in `destination`'s repository with `digest`, other than
    /// `destination` and those `going` says go: a DELETE of `digest` would take its tag too.
    pub fn sharing(
        &self,
        destination: &str,
        digest: &str,
        going: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        let repo = repository_of(destination);
        let catalogs = self.catalogs.iter().map(|(d, c)| (d, &c.digest, "catalog"));
        let images = self.images.iter().map(|(d, i)| (d, &i.digest, "image"));
        catalogs
            .chain(images)
            .find(|(d, dg, _)| {
                d.as_str() != destination
                    && dg.as_str() == digest
                    && repository_of(d) == repo
                    && !going(d)
            })
            .map(|(d, _, what)| format!("the {what} {d}, which has the same digest"))
    }

    /// The (repository, digest) of an image's destination reference.
    pub fn key(destination: &str, digest: &str) -> (String, String) {
        (repository_of(destination).to_string(), digest.to_string())
    }
}

/// Bundles by package.
pub type Bundles = BTreeMap<String, BTreeSet<String>>;

/// What names an image that `origins` brought, with `catalogs` (name, the bundles it keeps):
/// a bundle is named by every catalog that keeps it (two versions of one index keep the same
/// bundle), an additional image by the configuration.
pub fn owners(catalogs: &[(&str, &Bundles)], origins: &[super::images::Origin]) -> BTreeSet<Owner> {
    let mut out = BTreeSet::new();
    for origin in origins {
        match origin {
            super::images::Origin::Bundle {
                package,
                bundle,
                related,
            } => {
                for (catalog, kept) in catalogs {
                    if kept.get(package).is_some_and(|b| b.contains(bundle)) {
                        out.insert(Owner::Bundle {
                            catalog: catalog.to_string(),
                            package: package.clone(),
                            bundle: bundle.clone(),
                            related: *related,
                        });
                    }
                }
            }
            super::images::Origin::Additional => {
                out.insert(Owner::Additional);
            }
        }
    }
    out
}

/// Adds a complete run (its catalogs pushed, `rebuilt`) to the record in `workspace`.
pub fn record(
    workspace: &Path,
    plan: &Plan,
    rebuilt: &[super::rebuild::Rebuilt],
    done: &[Outcome],
) -> Result<(), MirrorError> {
    let mut standing = Standing::read(workspace)?;
    let pushed: BTreeMap<String, String> = rebuilt
        .iter()
        .map(|r| (r.destination.clone(), r.digest.clone()))
        .collect();
    standing.add_run(plan, &pushed, done);
    standing.write(workspace)
}

/// A destination reference without its tag or digest: `REGISTRY/PATH`.
pub fn repository_of(reference: &str) -> &str {
    let name = reference.split('@').next().unwrap_or(reference);
    match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    }
}
