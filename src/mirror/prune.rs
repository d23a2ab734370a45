//! `opreg mirror --prune`: once a run has completed, what earlier runs of this workspace
//! mirrored to the same destination and this run's plan no longer selects (a package dropped, bundles
//! that fell out of a version window, a catalog removed, an additional image dropped) is
//! deleted with `mirror delete`'s rules ([`super::delete`]): nothing is deleted that anything
//! still standing names, per (repository, digest). The run itself has already pushed each
//! catalog without what it no longer keeps, so only a removed catalog changes, and it goes
//! whole. The deletion is written as `delete/delete-images-prune.yaml` (oc-mirror's
//! `DeleteImageList`) and opreg's plan beside it, then executed; a killed prune is finished by
//! `mirror delete --delete-yaml-file` on that list, or by the next `--prune`.

use super::delete::execute::{self, ExecuteOptions};
use super::delete::generate::Bundles;
use super::delete::{Change, DeletePlan};
use super::destination::Destination;
use super::plan::Plan;
use super::standing::{Owner, Standing};
use crate::error::Error;
use crate::progress::Progress;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The list's id: `delete/delete-images-prune.yaml`.
pub const ID: &str = "prune";

/// What pruning found and did.
#[derive(Clone, Debug, Default)]
pub struct Pruned {
    /// Every image deleted or kept, and why.
    pub plan: DeletePlan,
    /// The list written (with `--prune`).
    pub list: Option<PathBuf>,
    /// The deletion executed (with `--prune`, not a dry run).
    pub executed: Option<execute::Report>,
    /// Why the deletion could not start (a registry that refuses deletes): one line.
    pub error: Option<String>,
}

/// What `standing` holds at `destination` (`REGISTRY[/PREFIX]`) that `run` no longer selects.
/// An image `run` copies is never pruned, whatever named it before.
pub fn plan(standing: &Standing, run: &Plan, destination: &str) -> DeletePlan {
    let destination = destination.trim_end_matches('/');
    let at = Destination::Registry(destination.to_string());
    let kept: BTreeMap<&str, &Bundles> = run
        .catalogs
        .iter()
        .map(|c| (c.destination.as_str(), &c.kept))
        .collect();
    let wanted: BTreeSet<&str> = run.images.iter().map(|i| i.destination.as_str()).collect();
    let mut out = DeletePlan {
        destination: at.given(),
        ..Default::default()
    };
    for (dest, c) in &standing.catalogs {
        if at.holds(dest) && !kept.contains_key(dest.as_str()) {
            out.catalogs.push(Change {
                destination: dest.clone(),
                source: c.source.clone(),
                digest: c.digest.clone(),
                whole: true,
                removed: c.bundles.clone(),
            });
        }
    }
    let stale = |dest: &str, owner: &Owner, _: &super::standing::Image| {
        !wanted.contains(dest)
            && match owner {
                Owner::Additional => true,
                Owner::Bundle {
                    catalog,
                    package,
                    bundle,
                    ..
                } => !kept
                    .get(catalog.as_str())
                    .and_then(|k| k.get(package))
                    .is_some_and(|b| b.contains(bundle)),
            }
    };
    super::delete::generate::decide(standing, &mut out, &at, &stale);
    out
}

/// How a run prunes.
#[derive(Clone, Debug)]
pub struct PruneOptions {
    /// `--prune`: write the list and (unless a dry run) execute it; without it, only count.
    pub prune: bool,
    pub dry_run: bool,
    pub keep_going: bool,
    /// How catalogs are pulled, and the destination reached.
    pub image: crate::image::ImageOptions,
}

/// After a run of `run` to `destination` (`REGISTRY[/PREFIX]`)
/// whose record is in `workspace` (a dry run's is not recorded: its plan stands in for it):
/// what it leaves behind, listed and, with `--prune`, deleted. `None` when nothing is left
/// behind.
pub fn after_run(
    opts: &PruneOptions,
    workspace: &Path,
    run: &Plan,
    destination: &str,
    progress: &dyn Progress,
) -> Result<Option<Pruned>, Error> {
    let standing = Standing::read(workspace).map_err(|e| Error::failed(e.to_string()))?;
    let plan = plan(&standing, run, destination);
    if plan.delete.is_empty() {
        return Ok(None);
    }
    let mut out = Pruned {
        plan,
        ..Default::default()
    };
    if !opts.prune {
        return Ok(Some(out));
    }
    let at = Destination::Registry(destination.trim_end_matches('/').to_string());
    let list = super::delete::write(workspace, Some(ID), &out.plan, &at)
        .map_err(|e| Error::failed(e.to_string()))?;
    out.list = Some(list.clone());
    if opts.dry_run {
        return Ok(Some(out));
    }
    let exec = ExecuteOptions {
        list,
        workspace: Some(workspace.to_path_buf()),
        destination: at,
        keep_going: opts.keep_going,
        keep_signatures: false,
        dry_run: false,
        image: opts.image.clone(),
    };
    match super::delete::execute(&exec, progress) {
        Ok(r) => out.executed = Some(r),
        Err(e) => out.error = Some(e.detail()),
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::plan::PlannedCatalog;
    use crate::mirror::standing::{Catalog, Image};

    fn bundles(list: &[(&str, &str)]) -> Bundles {
        let mut out = Bundles::new();
        for (p, b) in list {
            out.entry(p.to_string()).or_default().insert(b.to_string());
        }
        out
    }

    fn catalog(destination: &str, kept: Bundles) -> PlannedCatalog {
        PlannedCatalog {
            entry: Default::default(),
            pinned: String::new(),
            digest: String::new(),
            destination: destination.into(),
            configs_path: String::new(),
            catalog: Default::default(),
            bundles_in_source: 0,
            kept,
            added: Vec::new(),
            why: Default::default(),
            warnings: Vec::new(),
        }
    }

    fn owner(catalog: &str, package: &str, bundle: &str) -> Owner {
        Owner::Bundle {
            catalog: catalog.into(),
            package: package.into(),
            bundle: bundle.into(),
            related: false,
        }
    }

    /// Two runs of one catalog: v1 kept a.1 and a.2; the next run, to the tag v2, keeps a.2.
    fn standing() -> Standing {
        let mut s = Standing::default();
        for tag in ["v1", "v2"] {
            s.catalogs.insert(
                format!("r/m/cat:{tag}"),
                Catalog {
                    digest: "sha256:c".into(),
                    bundles: bundles(&[("a", "a.1"), ("a", "a.2")]),
                    ..Default::default()
                },
            );
        }
        for (img, b) in [("r/m/a:1", "a.1"), ("r/m/a:2", "a.2")] {
            s.images.insert(
                img.into(),
                Image {
                    source: img.replace("r/m", "src"),
                    digest: format!("sha256:{b}"),
                    named_by: ["v1", "v2"]
                        .iter()
                        .map(|t| owner(&format!("r/m/cat:{t}"), "a", b))
                        .collect(),
                },
            );
        }
        s
    }

    #[test]
    fn a_bundle_out_of_the_window_goes_and_a_retagged_catalog_with_the_same_digest_stays() {
        let run = Plan {
            catalogs: vec![catalog("r/m/cat:v2", bundles(&[("a", "a.2")]))],
            ..Default::default()
        };
        let p = plan(&standing(), &run, "r/m/");
        let deleted: Vec<&str> = p.delete.iter().map(|d| d.destination.as_str()).collect();
        assert_eq!(deleted, ["r/m/a:1"]);
        // v1 left the configuration, but deleting its digest would take v2's tag; a.2 is
        // still v2's.
        assert_eq!(p.catalogs.len(), 1);
        let kept: Vec<(&str, &[String])> = p
            .kept
            .iter()
            .map(|k| (k.destination.as_str(), k.needed_by.as_slice()))
            .collect();
        assert_eq!(
            kept,
            [
                (
                    "r/m/a:2",
                    &["the bundle a.2 of the catalog r/m/cat:v2".to_string()][..]
                ),
                (
                    "r/m/cat:v1",
                    &["the catalog r/m/cat:v2, which has the same digest".to_string()][..]
                )
            ]
        );
    }

    #[test]
    fn an_image_this_run_copies_is_never_pruned_and_another_destination_is_left_alone() {
        let run = Plan {
            catalogs: vec![catalog("r/m/cat:v2", Bundles::new())],
            images: vec![crate::mirror::plan::PlannedImage {
                wanted: crate::mirror::images::Wanted {
                    source: "src/a:1".into(),
                    target_repo: None,
                    target_tag: None,
                    origins: Vec::new(),
                },
                destination: "r/m/a:1".into(),
            }],
            ..Default::default()
        };
        let mut s = standing();
        s.catalogs.remove("r/m/cat:v1");
        let p = plan(&s, &run, "r/m");
        let deleted: Vec<&str> = p.delete.iter().map(|d| d.destination.as_str()).collect();
        assert_eq!(deleted, ["r/m/a:2"]);
        assert!(plan(&s, &run, "r/other").delete.is_empty());
    }
}
