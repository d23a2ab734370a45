//! The one place properties and package fields derived from a ClusterServiceVersion (CSV) are
//! computed. Package-manifest directories, bundle directories and legacy SQLite indexes all
//! hold CSVs; each reader finds its CSV and objects and asks this module what they mean.

use crate::json;
use crate::model::*;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The `kind` of a Kubernetes object ("" when absent).
pub fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// True for a ClusterServiceVersion object.
pub fn is_csv(v: &Value) -> bool {
    kind_of(v) == "ClusterServiceVersion"
}

/// The string at a JSON pointer of the CSV ("" when absent or not a string).
pub fn str_at<'a>(csv: &'a Value, pointer: &str) -> &'a str {
    csv.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `metadata.name`: the bundle's name.
pub fn name(csv: &Value) -> String {
    str_at(csv, "/metadata/name").to_string()
}

/// `spec.version`, as written (a YAML number is kept as its text).
pub fn version(csv: &Value) -> String {
    match csv.pointer("/spec/version") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// The `olm.skipRange` annotation.
pub fn skip_range(csv: &Value) -> String {
    str_at(csv, "/metadata/annotations/olm.skipRange").to_string()
}

/// `spec.skips`, the string items only.
pub fn skips(csv: &Value) -> Vec<String> {
    csv.pointer("/spec/skips")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The channel entry a CSV declares: its name, `spec.replaces`, `spec.skips`, `olm.skipRange`.
pub fn entry(csv: &Value) -> ChannelEntry {
    ChannelEntry {
        name: name(csv),
        replaces: str_at(csv, "/spec/replaces").to_string(),
        skips: skips(csv),
        skip_range: skip_range(csv),
    }
}

/// A property with a canonical JSON value.
pub fn property(ty: &str, value: &Value) -> Property {
    Property {
        r#type: ty.to_string(),
        value: json::canonical(value),
    }
}

/// An `olm.gvk`-shaped value.
pub fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// An `olm.gvk`-shaped value from any object with `group`, `version` and `kind` strings; other
/// keys are dropped.
pub fn gvk_of(v: &Value) -> Value {
    let f = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    gvk(f("group"), f("version"), f("kind"))
}

/// An `olm.package.required` value from a dependency's `olm.package` value (`packageName`,
/// `version` → `versionRange`).
pub fn package_required(v: &Value) -> Value {
    let f = |k: &str| v.get(k).cloned().unwrap_or(Value::String(String::new()));
    json!({"packageName": f("packageName"), "versionRange": f("version")})
}

/// The JSON upstream makes of a manifest read from YAML (see [`bundle_object`]).
pub fn manifest_json(o: &Value) -> String {
    json::go_html_escape(json::canonical(o))
}

/// One `olm.bundle.object` property: the object as upstream marshals a manifest (Go's
/// `json.Marshal` of an unstructured object: keys sorted, `<`, `>` and `&` escaped, integers
/// that fit in 64 bits exact), base64-encoded.
pub fn bundle_object(o: &Value) -> Property {
    let data = base64::engine::general_purpose::STANDARD.encode(manifest_json(o));
    property(prop::BUNDLE_OBJECT, &json!({ "data": data }))
}

/// APIs a bundle provides: every version of every CRD it ships, plus owned APIServices.
pub fn provided_apis(csv: &Value, objects: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for o in objects
        .iter()
        .filter(|o| kind_of(o) == "CustomResourceDefinition")
    {
        let group = str_at(o, "/spec/group");
        let kind = str_at(o, "/spec/names/kind");
        let mut versions: Vec<&str> = o
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(v) = o.pointer("/spec/version").and_then(Value::as_str) {
            versions.push(v);
        }
        for v in versions {
            out.push(gvk(group, v, kind));
        }
    }
    out.extend(items(csv, "/spec/apiservicedefinitions/owned").map(gvk_of));
    out
}

/// APIs a bundle requires: required CRDs (group taken from `<plural>.<group>`) and required
/// APIServices.
pub fn required_apis(csv: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = items(csv, "/spec/customresourcedefinitions/required")
        .map(|r| {
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            let group = name.split_once('.').map(|(_, g)| g).unwrap_or("");
            gvk(group, str_at(r, "/version"), str_at(r, "/kind"))
        })
        .collect();
    out.extend(items(csv, "/spec/apiservicedefinitions/required").map(gvk_of));
    out
}

fn items<'a>(v: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Package-level fields taken from a representative CSV (the default channel's head): the
/// first icon and the description.
pub fn package(name: &str, default_channel: &str, csv: Option<&Value>, origin: Origin) -> Package {
    let s = |p: &str| csv.map(|c| str_at(c, p)).unwrap_or("").to_string();
    let icon = Some(Icon {
        base64data: s("/spec/icon/0/base64data"),
        mediatype: s("/spec/icon/0/mediatype"),
    })
    .filter(|i| !i.base64data.is_empty());
    Package {
        name: name.to_string(),
        default_channel: default_channel.to_string(),
        icon,
        description: s("/spec/description"),
        origin,
        ..Default::default()
    }
}

/// A CSV plus the other objects shipped beside it (one bundle directory, read).
pub struct LoadedBundle {
    pub csv: Value,
    pub objects: Vec<Value>,
    pub annotations: BTreeMap<String, String>,
    pub dependencies: Vec<Value>,
    pub extra_properties: Vec<Value>,
    pub origin: Origin,
}

/// Builds the model bundle for a CSV and its objects: the one place manifest-derived
/// properties are computed.
pub fn bundle(package: &str, b: &LoadedBundle) -> Bundle {
    let csv = &b.csv;
    let mut props: Vec<Property> = Vec::new();
    let mut pkg = json!({"packageName": package, "version": version(csv)});
    match csv.pointer("/spec/release") {
        Some(Value::String(s)) if !s.is_empty() => pkg["release"] = json!(s),
        Some(Value::Number(n)) => pkg["release"] = json!(n.to_string()),
        _ => {}
    }
    let mut package_prop = property(prop::PACKAGE, &pkg);
    // A declared `olm.package` (the CSV's `olm.properties` annotation, then
    // metadata/properties.yaml) replaces the derived one; the last declaration wins.
    let mut declared = Vec::new();
    if let Some(ann) = csv
        .pointer("/metadata/annotations/olm.properties")
        .and_then(Value::as_str)
    {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(ann) {
            declared.extend(items);
        }
    }
    declared.extend(b.extra_properties.iter().cloned());
    for it in &declared {
        let Some(ty) = it.get("type").and_then(Value::as_str) else {
            continue;
        };
        let value = it.get("value").unwrap_or(&Value::Null);
        if ty == prop::PACKAGE {
            let mut v = json!({
                "packageName": value.get("packageName").cloned().unwrap_or(json!("")),
                "version": value.get("version").cloned().unwrap_or(json!("")),
            });
            if let Some(r) = value.get("release").filter(|r| !r.is_null() && *r != "") {
                v["release"] = r.clone();
            }
            package_prop = property(prop::PACKAGE, &v);
        } else {
            props.push(property(ty, value));
        }
    }
    props.push(package_prop);
    for g in provided_apis(csv, &b.objects) {
        props.push(property(prop::GVK, &g));
    }
    for g in required_apis(csv) {
        props.push(property(prop::GVK_REQUIRED, &g));
    }
    for d in &b.dependencies {
        let ty = d.get("type").and_then(Value::as_str).unwrap_or("");
        let value = d.get("value").cloned().unwrap_or(Value::Null);
        match ty {
            "olm.gvk" => props.push(property(prop::GVK_REQUIRED, &value)),
            "olm.package" => {
                props.push(property(prop::PACKAGE_REQUIRED, &package_required(&value)))
            }
            "" => {}
            other => props.push(property(other, &value)),
        }
    }
    props.extend(b.objects.iter().map(bundle_object));
    props.sort();
    props.dedup();
    let related = related_images(csv);
    Bundle {
        name: name(csv),
        package: package.to_string(),
        image: String::new(),
        properties: props,
        related_images: related,
        origin: b.origin.clone(),
        body: Body::Whole,
    }
}

/// Related images, as upstream lists them: `spec.relatedImages` as written (duplicates
/// kept), then each container and init container image of the install deployments that is
/// not listed yet, without a name.
fn related_images(csv: &Value) -> Vec<RelatedImage> {
    let mut related = Vec::new();
    let mut seen = BTreeSet::new();
    for r in items(csv, "/spec/relatedImages") {
        seen.insert(str_at(r, "/image").to_string());
        related.push(RelatedImage {
            name: str_at(r, "/name").to_string(),
            image: str_at(r, "/image").to_string(),
        });
    }
    let mut add = |name: &str, image: &str| {
        if !image.is_empty() && seen.insert(image.to_string()) {
            related.push(RelatedImage {
                name: name.to_string(),
                image: image.to_string(),
            });
        }
    };
    for d in items(csv, "/spec/install/spec/deployments") {
        for key in ["initContainers", "containers"] {
            for c in items(d, &format!("/spec/template/spec/{key}")) {
                add("", str_at(c, "/image"));
            }
        }
    }
    related
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gvk_values_drop_extra_keys() {
        let v = gvk_of(&json!({"type": "olm.gvk", "group": "g", "kind": "K", "version": "v1"}));
        assert_eq!(
            json::canonical(&v),
            r#"{"group":"g","kind":"K","version":"v1"}"#
        );
    }
}
