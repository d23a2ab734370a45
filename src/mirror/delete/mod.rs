//! `opreg mirror delete`: oc-mirror's two-phase delete, made safe. Phase 1 ([`generate`])
//! turns a `DeleteImageSetConfiguration` and the workspace's record of what stands into
//! oc-mirror's `DeleteImageList` and opreg's plan beside it (every image deleted or kept, and
//! why; the catalogs to rebuild). Phase 2 ([`execute`]) checks the list again, rebuilds the
//! catalogs first, then deletes each image (by digest at a registry, by name in a mirror on
//! disk), then its signatures, updating the records as it goes.
//!
//! | module | owns |
//! |---|---|
//! | [`catalogs`] | a catalog rebuilt without the removed bundles, pushed before any image goes |
//! | [`list`] | oc-mirror's `DeleteImageList`: read, written, checked against the destination |
//! | [`generate`] | phase 1: what a delete configuration deletes and keeps, per (repository, digest) |
//! | [`execute`] | phase 2: the probe, catalogs rebuilt, images and signatures deleted, records updated, in that order, on a [`execute::Target`] |
//! | [`registry`] | phase 2's target at a registry: DELETE by digest, catalogs pushed, the workspace's records |
//! | [`disk`] | a mirror on disk (`file://DIR`) as a record and as phase 2's target: names leave the layout, unused blobs go, listing and history follow |

pub mod catalogs;
pub mod disk;
pub mod execute;
pub mod generate;
pub mod list;
pub mod registry;

use crate::mirror::destination::Destination;
use crate::mirror::MirrorError;
use list::ItemType;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A catalog the deletion changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub destination: String,
    pub source: String,
    /// The digest the destination holds now (superseded by the rebuild).
    pub digest: String,
    /// The configuration names the catalog with no packages: the catalog image goes too.
    pub whole: bool,
    /// Package -> the bundles that leave it.
    pub removed: BTreeMap<String, BTreeSet<String>>,
}

/// An image to delete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Planned {
    pub destination: String,
    pub digest: String,
    pub source: String,
    #[serde(rename = "type")]
    pub kind: ItemType,
}

/// An image the configuration selects that something else still needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    pub destination: String,
    pub digest: String,
    pub source: String,
    pub needed_by: Vec<String>,
}

/// opreg's plan of a deletion (`delete/delete-plan[-ID].json`, beside the list).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletePlan {
    /// `REGISTRY[/PREFIX]`.
    pub destination: String,
    pub catalogs: Vec<Change>,
    pub delete: Vec<Planned>,
    pub kept: Vec<Kept>,
}

/// The list's path in `workspace` (`delete/delete-images[-ID].yaml`, as oc-mirror names it).
pub fn list_path(workspace: &Path, id: Option<&str>) -> PathBuf {
    let name = match id {
        Some(id) => format!("delete-images-{id}.yaml"),
        None => "delete-images.yaml".into(),
    };
    workspace.join("delete").join(name)
}

/// The plan beside a list: `delete-images[-ID].yaml` -> `delete-plan[-ID].json`.
pub fn plan_path(list: &Path) -> PathBuf {
    let name = list
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".yaml").unwrap_or(&name);
    let id = stem.strip_prefix("delete-images").unwrap_or("");
    list.with_file_name(format!("delete-plan{id}.json"))
}

/// Writes the list and the plan into `workspace`, each whole or not at all; returns the
/// list's path.
pub fn write(
    workspace: &Path,
    id: Option<&str>,
    plan: &DeletePlan,
    destination: &Destination,
) -> Result<PathBuf, MirrorError> {
    let list = list_path(workspace, id);
    let text = list::write(&generate::items(plan, destination));
    crate::mirror::workspace::write_named(&list, text.as_bytes())?;
    let json = serde_json::to_vec_pretty(plan).unwrap_or_default();
    crate::mirror::workspace::write_named(&plan_path(&list), &json)?;
    Ok(list)
}

/// Phase 1: reads the `DeleteImageSetConfiguration` at `config` and the workspace's record,
/// plans the deletion from `destination`, and writes the list and the plan into `workspace`
/// (nothing else: the registry or layout is only read, `cluster-resources` is left alone).
/// A mirror on disk is its own workspace. Returns the list's path and the plan.
pub fn generate(
    config: &Path,
    workspace: &Path,
    id: Option<&str>,
    destination: &Destination,
    image: &crate::image::ImageOptions,
) -> Result<(PathBuf, DeletePlan), crate::error::Error> {
    use crate::error::Error;
    let name = config.display();
    let text = std::fs::read_to_string(config).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let cfg = crate::mirror::config::parse_delete(&text)
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let standing = record_of(destination, workspace)?;
    let plan = generate::plan(&cfg, &standing, destination, image)?;
    let list =
        write(workspace, id, &plan, destination).map_err(|e| Error::failed(e.to_string()))?;
    Ok((list, plan))
}

/// What stands at `destination` by the record: a registry's in `workspace`'s
/// `standing.json`, a mirror on disk's in its listing and layout.
pub fn record_of(
    destination: &Destination,
    workspace: &Path,
) -> Result<crate::mirror::standing::Standing, crate::error::Error> {
    let usage = |e: MirrorError| crate::error::Error::Usage(e.to_string());
    match destination {
        Destination::Registry(_) => {
            crate::mirror::standing::Standing::read(workspace).map_err(usage)
        }
        Destination::Disk(dir) => disk::standing(dir),
    }
}

/// Phase 2: executes the list as `opts` say, at a registry or in a mirror on disk.
pub fn execute(
    opts: &execute::ExecuteOptions,
    progress: &dyn crate::progress::Progress,
) -> Result<execute::Report, crate::error::Error> {
    let image = opts.image.clone();
    let open = |workspace: &Path| -> Result<Box<dyn execute::Target>, crate::error::Error> {
        Ok(match &opts.destination {
            Destination::Registry(_) => {
                Box::new(registry::AtRegistry::new(workspace, image.clone()))
            }
            Destination::Disk(dir) => Box::new(disk::OnDisk::open(dir, image.clone())?),
        })
    };
    execute::execute(opts, &open, progress)
}

/// The plan beside `list`, if there is one.
pub fn read_plan(list: &Path) -> Result<Option<DeletePlan>, MirrorError> {
    let path = plan_path(list);
    match std::fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| MirrorError::from(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(MirrorError::from(format!("{}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_sits_beside_its_list_with_the_same_id() {
        let ws = Path::new("/w");
        assert_eq!(
            list_path(ws, None),
            Path::new("/w/delete/delete-images.yaml")
        );
        let with = list_path(ws, Some("june"));
        assert_eq!(with, Path::new("/w/delete/delete-images-june.yaml"));
        assert_eq!(
            plan_path(&with),
            Path::new("/w/delete/delete-plan-june.json")
        );
        assert_eq!(
            plan_path(&list_path(ws, None)),
            Path::new("/w/delete/delete-plan.json")
        );
    }
}
