//! The one image reader's media types: every type either of the two former layout readers
//! kept (the document's own, the type a layout entry or a referring index gives, the shape's),
//! each read back from a real layout.

use super::*;
use crate::oci::layout_reader::Layout;
use crate::oci::layout_writer::LayoutWriter;
use crate::oci::manifest::{DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST};
use serde_json::json;

const ARTIFACT: &str = "application/vnd.example.artifact.manifest.v1+json";

/// A layout with one config and one layer blob.
fn layout() -> (tempfile::TempDir, LayoutWriter, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let w = LayoutWriter::create(&dir.path().join("l")).unwrap();
    let config = w.put(b"{}").unwrap();
    let layer = w.put(b"layer").unwrap();
    (dir, w, config, layer)
}

/// An image manifest's bytes, with `media_type` as its `mediaType` (none when `None`).
fn image_bytes(media_type: Option<&str>, config: &str, layer: &str) -> Vec<u8> {
    let mut m = json!({
        "schemaVersion": 2,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": 2},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": 5}],
    });
    if let Some(t) = media_type {
        m["mediaType"] = json!(t);
    }
    serde_json::to_vec(&m).unwrap()
}

/// Puts `bytes` and lists them as `name`, the entry typed `entry_type`.
fn list(w: &LayoutWriter, bytes: &[u8], entry_type: &str, name: &str) -> String {
    let digest = w.put(bytes).unwrap();
    let top = Top {
        media_type: entry_type.into(),
        digest: digest.clone(),
        size: bytes.len() as u64,
    };
    w.tag(&top, Some(name)).unwrap();
    digest
}

fn read_named(w: &LayoutWriter, name: &str) -> Image {
    read(&mut Layout::open(w.dir()).unwrap(), name, 1 << 20).unwrap()
}

#[test]
fn an_image_keeps_the_type_it_declares_whatever_its_entry_says() {
    for declared in [OCI_MANIFEST, DOCKER_MANIFEST, ARTIFACT] {
        let (_d, w, config, layer) = layout();
        let bytes = image_bytes(Some(declared), &config, &layer);
        let digest = list(&w, &bytes, OCI_MANIFEST, "v1");
        let img = read_named(&w, "v1");
        assert_eq!(img.top.desc.media_type, declared);
        assert_eq!(img.digest(), digest);
        assert_eq!(img.top.bytes, bytes, "byte for byte");
        assert!(img.children.is_empty());
        let mut want = vec![(config.clone(), 2), (layer.clone(), 5)];
        want.sort();
        assert_eq!(img.blobs, want);
    }
}

#[test]
fn an_image_without_a_type_takes_its_entrys_manifest_type_else_the_oci_one() {
    for (entry, want) in [
        (DOCKER_MANIFEST, DOCKER_MANIFEST),
        (OCI_MANIFEST, OCI_MANIFEST),
        ("", OCI_MANIFEST),
        ("application/json", OCI_MANIFEST),
    ] {
        let (_d, w, config, layer) = layout();
        let bytes = image_bytes(None, &config, &layer);
        list(&w, &bytes, entry, "v1");
        assert_eq!(read_named(&w, "v1").top.desc.media_type, want, "{entry:?}");
    }
}

/// An index of one child image; the child declares `child_type`, the index refers to it as
/// `referred`, and the index declares `index_type`.
fn index(
    w: &LayoutWriter,
    config: &str,
    layer: &str,
    index_type: Option<&str>,
    child_type: Option<&str>,
    referred: &str,
) -> (String, Vec<u8>) {
    let child = image_bytes(child_type, config, layer);
    let child_digest = w.put(&child).unwrap();
    let mut i = json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": referred, "digest": child_digest, "size": child.len(),
            "platform": {"os": "linux", "architecture": "amd64"},
        }],
    });
    if let Some(t) = index_type {
        i["mediaType"] = json!(t);
    }
    (child_digest, serde_json::to_vec(&i).unwrap())
}

#[test]
fn an_index_keeps_its_type_and_its_childrens() {
    for (index_type, child_type) in [(OCI_INDEX, OCI_MANIFEST), (DOCKER_LIST, DOCKER_MANIFEST)] {
        let (_d, w, config, layer) = layout();
        let (child, bytes) = index(
            &w,
            &config,
            &layer,
            Some(index_type),
            Some(child_type),
            child_type,
        );
        list(&w, &bytes, index_type, "v1");
        let img = read_named(&w, "v1");
        assert_eq!(img.top.desc.media_type, index_type);
        assert_eq!(img.children.len(), 1);
        assert_eq!(img.children[0].desc.digest, child);
        assert_eq!(img.children[0].desc.media_type, child_type);
        assert_eq!(img.blobs.len(), 2);
    }
}

#[test]
fn an_index_and_children_without_types_take_the_types_they_are_listed_with() {
    for (entry, referred, want_index, want_child) in [
        (DOCKER_LIST, DOCKER_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST),
        (OCI_INDEX, OCI_MANIFEST, OCI_INDEX, OCI_MANIFEST),
        ("", "", OCI_INDEX, OCI_MANIFEST),
    ] {
        let (_d, w, config, layer) = layout();
        let (_, bytes) = index(&w, &config, &layer, None, None, referred);
        list(&w, &bytes, entry, "v1");
        let img = read_named(&w, "v1");
        assert_eq!(img.top.desc.media_type, want_index, "{entry:?}");
        assert_eq!(img.children[0].desc.media_type, want_child, "{referred:?}");
    }
}

#[test]
fn a_manifest_read_by_digest_must_match_it_and_children_must_match_theirs() {
    let (_d, w, config, layer) = layout();
    let bytes = image_bytes(Some(OCI_MANIFEST), &config, &layer);
    let digest = list(&w, &bytes, OCI_MANIFEST, "v1");
    let mut src = Layout::open(w.dir()).unwrap();
    assert_eq!(read(&mut src, &digest, 1 << 20).unwrap().digest(), digest);

    // A child whose bytes are not what the index's digest says.
    let (child, index_bytes) = index(&w, &config, &layer, Some(OCI_INDEX), None, OCI_MANIFEST);
    let path = w.dir().join("blobs/sha256").join(&child[7..]);
    std::fs::write(&path, b"{\"schemaVersion\":2}").unwrap();
    list(&w, &index_bytes, OCI_INDEX, "bad");
    let err = read(&mut src, "bad", 1 << 20).unwrap_err().to_string();
    assert!(err.contains("does not match its digest"), "{err}");
}

#[test]
fn an_index_in_an_index_is_refused_by_name() {
    let (_d, w, config, layer) = layout();
    let (_, inner) = index(&w, &config, &layer, Some(OCI_INDEX), None, OCI_MANIFEST);
    let inner_digest = w.put(&inner).unwrap();
    let outer = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [{"mediaType": OCI_INDEX, "digest": inner_digest, "size": inner.len()}],
    }))
    .unwrap();
    list(&w, &outer, OCI_INDEX, "v1");
    let err = read(&mut Layout::open(w.dir()).unwrap(), "v1", 1 << 20)
        .unwrap_err()
        .to_string();
    assert!(err.contains("nested"), "{err}");
}
