//! The catalog image's config and manifest: the base's config with the catalog's layers
//! appended to `rootfs.diff_ids`, its history entries dated from `SOURCE_DATE_EPOCH` (or the
//! epoch), the catalog labels, and `Entrypoint`/`Cmd` as opm's generated Dockerfile sets them.
//! Everything is written as JSON with sorted keys, so the same inputs give the same bytes.

use super::layer::Layer;
use serde_json::{json, Map, Value};

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
pub fn manifest(config_digest: &str, config_size: usize, layers: &[Value]) -> Value {
    json!({
        "schemaVersion": 2,
        "mediaType": crate::image::manifest::OCI_MANIFEST,
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": config_digest, "size": config_size},
        "layers": layers,
    })
}

/// A layer descriptor for the manifest; Docker's media types become their OCI equivalents
/// (the bytes are the same), so that the manifest holds OCI types only.
pub fn layer_descriptor(media_type: &str, digest: &str, size: u64) -> Value {
    let mt = match media_type {
        "application/vnd.docker.image.rootfs.diff.tar.gzip" | "" => {
            "application/vnd.oci.image.layer.v1.tar+gzip"
        }
        "application/vnd.docker.image.rootfs.diff.tar" => "application/vnd.oci.image.layer.v1.tar",
        other => other,
    };
    json!({"mediaType": mt, "digest": digest, "size": size})
}

/// An OCI index of platform manifests: `(digest, size, platform)`.
pub fn index(entries: &[(String, usize, Value)]) -> Value {
    let manifests: Vec<Value> = entries
        .iter()
        .map(|(d, s, p)| {
            json!({"mediaType": crate::image::manifest::OCI_MANIFEST, "digest": d, "size": s, "platform": p})
        })
        .collect();
    json!({"schemaVersion": 2, "mediaType": crate::image::manifest::OCI_INDEX, "manifests": manifests})
}

/// A platform as an index lists it.
pub fn platform_value(p: &crate::image::manifest::Platform) -> Value {
    let mut m = Map::new();
    m.insert("architecture".into(), p.architecture.clone().into());
    m.insert("os".into(), p.os.clone().into());
    if let Some(v) = &p.variant {
        m.insert("variant".into(), v.clone().into());
    }
    Value::Object(m)
}
