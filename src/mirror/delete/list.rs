//! oc-mirror's `DeleteImageList` (`WORKSPACE/delete/delete-images[-ID].yaml`): what phase 1
//! lists and phase 2 deletes, one item per image (`imageName`, the source reference;
//! `imageReference`, the `docker://` destination reference; `type`). Written in the shape
//! oc-mirror's `WriteDeleteMetaData` writes (keys in order, items sorted by `imageReference`),
//! read whether oc-mirror or opreg wrote it. Before anything is deleted, every item is
//! checked ([`check`]): a list with an item that does not parse, lies outside the destination
//! or has a type opreg does not mirror is refused whole.

use crate::image::reference::{self, Reference};
use crate::mirror::destination::Destination;
use crate::mirror::MirrorError;
use serde::{Deserialize, Serialize};

pub const KIND: &str = "DeleteImageList";
pub const API_VERSION: &str = "mirror.openshift.io/v2alpha1";
/// The version oc-mirror's own documentation shows.
const OLDER_API_VERSION: &str = "mirror.openshift.io/v1alpha2";

/// What kind of image an item is, as oc-mirror names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ItemType {
    OperatorCatalog,
    OperatorBundle,
    OperatorRelatedImage,
    Generic,
    // oc-mirror's, which opreg does not mirror: a list naming them is refused.
    OcpRelease,
    OcpReleaseContent,
    CincinnatiGraph,
    HelmImage,
}

impl ItemType {
    /// oc-mirror's name.
    pub fn name(self) -> &'static str {
        match self {
            ItemType::OperatorCatalog => "operatorCatalog",
            ItemType::OperatorBundle => "operatorBundle",
            ItemType::OperatorRelatedImage => "operatorRelatedImage",
            ItemType::Generic => "generic",
            ItemType::OcpRelease => "ocpRelease",
            ItemType::OcpReleaseContent => "ocpReleaseContent",
            ItemType::CincinnatiGraph => "cincinnatiGraph",
            ItemType::HelmImage => "helmImage",
        }
    }

    /// Whether opreg mirrors images of this type.
    pub fn mirrored(self) -> bool {
        matches!(
            self,
            ItemType::OperatorCatalog
                | ItemType::OperatorBundle
                | ItemType::OperatorRelatedImage
                | ItemType::Generic
        )
    }
}

/// One image to delete. (Fields in the order oc-mirror writes them: alphabetical.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub image_name: String,
    pub image_reference: String,
    #[serde(rename = "type")]
    pub kind: ItemType,
}

/// A whole list. (Fields in the order oc-mirror writes them.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteImageList {
    pub api_version: String,
    #[serde(default)]
    pub items: Vec<Item>,
    pub kind: String,
}

/// The list's text as oc-mirror writes it: items sorted by `imageReference`, each once.
pub fn write(items: &[Item]) -> String {
    let mut items = items.to_vec();
    items.sort_by(|a, b| a.image_reference.cmp(&b.image_reference));
    items.dedup_by(|a, b| a.image_reference == b.image_reference);
    let list = DeleteImageList {
        api_version: API_VERSION.into(),
        items,
        kind: KIND.into(),
    };
    yaml_serde::to_string(&list).unwrap_or_default()
}

/// Reads a list (`name` is how errors name the file). Fields opreg does not know (the
/// `relatedBlobs` of oc-mirror's older documentation) are ignored, as oc-mirror ignores them;
/// an item whose type is not one of oc-mirror's is an error naming the item.
pub fn read(text: &str, name: &str) -> Result<DeleteImageList, MirrorError> {
    let doc: serde_json::Value = yaml_serde::from_str(text)
        .map_err(|e| MirrorError::from(format!("{name}: not a YAML document: {e}")))?;
    let kind = doc.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    let api = doc.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    if kind != KIND || (api != API_VERSION && api != OLDER_API_VERSION) {
        return Err(MirrorError::from(format!(
            "{name}: not a DeleteImageList of {API_VERSION} (apiVersion {api:?}, kind {kind:?})"
        )));
    }
    let items = doc.get("items").and_then(|v| v.as_array());
    for (i, item) in items.into_iter().flatten().enumerate() {
        let t = item.get("type").and_then(|v| v.as_str()).unwrap_or("");
        if serde_json::from_value::<ItemType>(serde_json::json!(t)).is_err() {
            return Err(MirrorError::from(format!(
                "{name}: item {} has the type {t:?}, not one of oc-mirror's",
                i + 1
            )));
        }
    }
    serde_json::from_value(doc).map_err(|e| MirrorError::from(format!("{name}: {e}")))
}

/// An item checked: its name in the destination's record, and that name parsed.
#[derive(Clone, Debug)]
pub struct Checked {
    pub item: Item,
    /// The record's name (the reference without `docker://`; in a layout, the image's name).
    pub name: String,
    pub reference: Reference,
}

/// Checks every item against `destination`: each `imageReference` must be of its form
/// (`docker://` a reference inside `REGISTRY[/PREFIX]`, or `oci:DIR:NAME` of a mirror on
/// disk), by tag or digest, and each type one opreg mirrors. Every problem is reported, one line each naming the item's number and
/// `imageReference`; any problem refuses the whole list.
pub fn check(
    list: &DeleteImageList,
    destination: &Destination,
) -> Result<Vec<Checked>, MirrorError> {
    let mut problems = Vec::new();
    let mut out = Vec::new();
    let unmirrored: Vec<&str> = list
        .items
        .iter()
        .filter(|i| !i.kind.mirrored())
        .map(|i| i.kind.name())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !unmirrored.is_empty() {
        return Err(MirrorError::from(format!(
            "the list has items of type {}, which opreg does not mirror: nothing was deleted",
            unmirrored.join(", ")
        )));
    }
    for (i, item) in list.items.iter().enumerate() {
        let at = format!("item {} (imageReference {:?})", i + 1, item.image_reference);
        let Some(r) = destination.name_of(&item.image_reference) else {
            problems.push(format!(
                "{at}: not of the form {}",
                destination.reference("NAME")
            ));
            continue;
        };
        let parsed = match reference::parse(r) {
            Ok(p) if p.tag.is_some() || p.digest.is_some() => p,
            Ok(_) => {
                problems.push(format!("{at}: names neither a tag nor a digest"));
                continue;
            }
            Err(e) => {
                problems.push(format!("{at}: {e}"));
                continue;
            }
        };
        let repository = format!("{}/{}", parsed.registry, parsed.repository);
        if !destination.holds(&repository) {
            problems.push(format!(
                "{at}: outside the destination {}",
                destination.given()
            ));
            continue;
        }
        out.push(Checked {
            item: item.clone(),
            name: r.to_string(),
            reference: parsed,
        });
    }
    match problems.is_empty() {
        true => Ok(out),
        false => Err(MirrorError::from(format!(
            "the delete list is refused, nothing was deleted:\n{}",
            problems.join("\n")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(d: &str) -> Destination {
        Destination::Registry(d.into())
    }

    /// oc-mirror's unit fixture (`tests/unit/testdata/delete/delete-images.yaml`), as it is,
    /// the space after `items:` included.
    const OC_MIRROR_FIXTURE: &str = "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageList\nitems: \n  - imageName: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:c32a883a6ca7b2e7a58b9dd99a5e8d056bdbbc9d79d8486b2e4c7e07c3dc4512\n    imageReference: docker://localhost:5000/myregistry/openshift/release:4.15.12-x86_64-agent-installer-api-server\n    type: ocpReleaseContent\n";

    #[test]
    fn oc_mirrors_fixture_is_read_and_its_release_item_refused() {
        let list = read(OC_MIRROR_FIXTURE, "delete-images.yaml").unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(
            list.items[0].image_reference,
            "docker://localhost:5000/myregistry/openshift/release:4.15.12-x86_64-agent-installer-api-server"
        );
        assert_eq!(list.items[0].kind, ItemType::OcpReleaseContent);
        let e = check(&list, &reg("localhost:5000/myregistry"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ocpReleaseContent") && e.contains("nothing was deleted"),
            "{e}"
        );
    }

    #[test]
    fn written_as_oc_mirror_writes_and_read_back() {
        let item = |r: &str, t| Item {
            image_name: format!("registry.redhat.io/{r}"),
            image_reference: format!("docker://localhost:5000/myregistry/{r}"),
            kind: t,
        };
        let items = vec![
            item("ubi8/ubi:latest", ItemType::Generic),
            item("testns/test:v1.0", ItemType::OperatorBundle),
            item("ubi8/ubi:latest", ItemType::Generic),
        ];
        let text = write(&items);
        assert!(text.starts_with("apiVersion: mirror.openshift.io/v2alpha1\nitems:\n- imageName: registry.redhat.io/testns/test:v1.0\n  imageReference: docker://localhost:5000/myregistry/testns/test:v1.0\n  type: operatorBundle\n"), "{text}");
        assert!(text.ends_with("kind: DeleteImageList\n"), "{text}");
        let back = read(&text, "x").unwrap();
        assert_eq!(back.items.len(), 2);
        assert_eq!(
            check(&back, &reg("localhost:5000/myregistry"))
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_bad_item_refuses_the_whole_list_naming_it() {
        let text = "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageList\nitems:\n- imageName: a/b:1\n  imageReference: docker://m:5000/p/a/b:1\n  type: generic\n- imageName: c/d:1\n  imageReference: docker://other:5000/p/c/d:1\n  type: generic\n- imageName: e:1\n  imageReference: m:5000/p/e:1\n  type: operatorBundle\n- imageName: f\n  imageReference: docker://m:5000/p/F:1\n  type: generic\n";
        let list = read(text, "x").unwrap();
        let e = check(&list, &reg("m:5000/p")).unwrap_err().to_string();
        assert!(e.contains("item 2 (imageReference \"docker://other:5000/p/c/d:1\"): outside the destination docker://m:5000/p"), "{e}");
        assert!(
            e.contains("item 3 (imageReference \"m:5000/p/e:1\"): not of the form docker://NAME"),
            "{e}"
        );
        assert!(e.contains("item 4 "), "{e}");
        assert!(!e.contains("item 1 "), "{e}");
        // A prefix is a whole path element: m:5000/pp is not inside m:5000/p.
        let t = text.replace("other:5000/p/", "m:5000/pp/");
        let e = check(&read(&t, "x").unwrap(), &reg("m:5000/p"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("item 2 ") && e.contains("outside"), "{e}");
        let e = read(
            &text.replace(
                "type: generic\n- imageName: c",
                "type: kubeVirt\n- imageName: c",
            ),
            "l.yaml",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("l.yaml: item 1 has the type \"kubeVirt\""),
            "{e}"
        );
        assert!(read("kind: ImageSetConfiguration\napiVersion: x\n", "l").is_err());
        // A mirror on disk's list names its layout.
        let disk = Destination::Disk("/m/d".into());
        let t = text
            .replace("docker://m:5000/p/a/b:1", "oci:/m/d:q.io/a/b:1")
            .replace("docker://other:5000/p/c/d:1", "oci:/m/e:q.io/c/d:1");
        let e = check(&read(&t, "x").unwrap(), &disk)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("item 1 ") && e.contains("item 2 "), "{e}");
        assert!(e.contains("not of the form oci:/m/d:NAME"), "{e}");
    }
}
