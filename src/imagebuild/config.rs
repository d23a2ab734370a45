//! The catalog image's config and manifest: the base's config with the catalog's layers
//! appended to `rootfs.diff_ids`, its history entries dated from `SOURCE_DATE_EPOCH` (or the
//! epoch), the catalog labels, and `Entrypoint`/`Cmd` as opm's generated Dockerfile sets them.
//! Everything is written as JSON with sorted keys, so the same inputs give the same bytes.

use super::layer::Layer;
use serde_json::{json, Map, Value};

pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// `seconds` since the epoch as RFC 3339 (UTC, whole seconds).
pub fn rfc3339(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let rem = seconds % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

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
    let created = rfc3339(s.mtime);
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

#[cfg(test)]
mod tests {
    #[test]
    fn dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(super::rfc3339(951_825_600), "2000-02-29T12:00:00Z");
    }
}
