//! The catalog image's config and manifest: the base's config with the catalog's layers
//! appended to `rootfs.diff_ids`, its history entries dated from `SOURCE_DATE_EPOCH` (or the
//! epoch), the catalog labels, and `Entrypoint`/`Cmd` as opm's generated Dockerfile sets them.
//! Everything is written as JSON with sorted keys, so the same inputs give the same bytes.

use super::layer::Layer;
use crate::oci::manifest::{Descriptor, ImageIndex, ImageManifest};
use serde_json::{json, Value};

pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// What goes into every platform's config.
pub struct Settings<'a> {
    pub labels: &'a [(String, String)],
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub mtime: u64,
}

/// The base's config with the catalog layers and settings applied.
pub fn catalog_config(base: &Value, layers: &[(&Layer, &str)], s: &Settings<'_>) -> Value {
    let mut c = base.clone();
    if !c.is_object() {
        c = json!({});
    }
    let created = crate::text::rfc3339(s.mtime);
    c["created"] = created.clone().into();
    if !c.get("config").is_some_and(Value::is_object) {
        c["config"] = json!({});
    }
    let cfg = c["config"].as_object_mut().expect("an object, set above");
    let mut labels = cfg
        .get("Labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, v) in s.labels {
        labels.insert(k.clone(), v.clone().into());
    }
    cfg.insert("Labels".into(), Value::Object(labels));
    cfg.insert("Entrypoint".into(), json!(s.entrypoint));
    cfg.insert("Cmd".into(), json!(s.cmd));
    if !c.get("rootfs").is_some_and(Value::is_object) {
        c["rootfs"] = json!({"type": "layers", "diff_ids": []});
    }
    let mut ids = c["rootfs"]["diff_ids"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut history = c
        .get("history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (l, what) in layers {
        ids.push(l.diff_id.clone().into());
        history
            .push(json!({"created": created, "created_by": format!("opreg image build: {what}")}));
    }
    c["rootfs"]["diff_ids"] = Value::Array(ids);
    c["history"] = Value::Array(history);
    c
}

/// An OCI image manifest.
pub fn manifest(config_digest: &str, config_size: u64, layers: Vec<Descriptor>) -> ImageManifest {
    ImageManifest {
        config: Descriptor {
            digest: config_digest.to_string(),
            media_type: CONFIG_MEDIA_TYPE.to_string(),
            size: config_size,
            ..Default::default()
        },
        layers,
        media_type: crate::oci::manifest::OCI_MANIFEST.to_string(),
        schema_version: 2,
    }
}

/// A layer descriptor for the manifest; Docker's media types become their OCI equivalents
/// (the bytes are the same), so that the manifest holds OCI types only.
pub fn layer_descriptor(media_type: &str, digest: &str, size: u64) -> Descriptor {
    let mt = match media_type {
        "application/vnd.docker.image.rootfs.diff.tar.gzip" | "" => {
            "application/vnd.oci.image.layer.v1.tar+gzip"
        }
        "application/vnd.docker.image.rootfs.diff.tar" => "application/vnd.oci.image.layer.v1.tar",
        other => other,
    };
    Descriptor {
        digest: digest.to_string(),
        media_type: mt.to_string(),
        size,
        ..Default::default()
    }
}

/// An OCI index of platform manifests.
pub fn index(manifests: Vec<Descriptor>) -> ImageIndex {
    ImageIndex {
        manifests,
        media_type: crate::oci::manifest::OCI_INDEX.to_string(),
        schema_version: 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oci::manifest::Platform;

    /// The typed documents serialize to the bytes the builder wrote before (sorted keys), so
    /// that images built by earlier versions keep their digests.
    #[test]
    fn typed_manifests_and_indexes_keep_the_sorted_bytes() {
        let m = manifest("sha256:c", 10, vec![layer_descriptor("", "sha256:l", 5)]);
        let old = json!({
            "schemaVersion": 2,
            "mediaType": crate::oci::manifest::OCI_MANIFEST,
            "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": "sha256:c", "size": 10},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:l", "size": 5}],
        });
        assert_eq!(
            serde_json::to_vec(&m).unwrap(),
            serde_json::to_vec(&old).unwrap()
        );
        let platform = Platform {
            os: "linux".into(),
            architecture: "arm64".into(),
            variant: Some("v8".into()),
        };
        let i = index(vec![Descriptor {
            digest: "sha256:m".into(),
            media_type: crate::oci::manifest::OCI_MANIFEST.into(),
            platform: Some(platform),
            size: 7,
            ..Default::default()
        }]);
        let old = json!({"schemaVersion": 2, "mediaType": crate::oci::manifest::OCI_INDEX, "manifests": [
            {"mediaType": crate::oci::manifest::OCI_MANIFEST, "digest": "sha256:m", "size": 7,
             "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}}]});
        assert_eq!(
            serde_json::to_vec(&i).unwrap(),
            serde_json::to_vec(&old).unwrap()
        );
    }
}
