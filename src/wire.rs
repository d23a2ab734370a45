//! Model → wire: how a catalog bundle becomes an `api.Bundle`.
//!
//! This is upstream's FBC conversion: providedApis from `olm.gvk`, requiredApis and
//! dependencies from `olm.gvk.required`/`olm.package.required`, properties without the
//! manifest-carrying types, `object` from `olm.bundle.object`, and `csvJson` from the CSV
//! object or, when there is none, synthesized from a single `olm.csv.metadata`. The store runs
//! it once per bundle at ingest and keeps the encoded result, so serving never repeats it.
//! A synthesized CSV is the exception: it repeats the package icon in every bundle, so storing
//! it would multiply the database several times over; the store keeps only the fact that one is
//! due and calls [`synthesize_csv`] when a bundle is read.
//! Channel-specific fields (channelName, replaces, skips, skipRange) are filled at query time.

use crate::api;
use crate::json;
use crate::model::*;
use serde_json::{Map, Value};

/// The channel-independent part of a bundle's wire form, and its manifests, kept apart so that
/// ListBundles can skip the manifests of image bundles without decoding them.
pub struct WireBundle {
    pub core: api::Bundle,
    /// csvJson and object from `olm.bundle.object`s.
    pub manifests: api::Bundle,
    /// csvJson is to be synthesized from the bundle's one `olm.csv.metadata` property
    /// ([`complete_manifests`]).
    pub csv_synth: bool,
}

/// What a synthesized ClusterServiceVersion is made of.
pub struct CsvInputs<'a> {
    pub bundle_name: &'a str,
    pub version: &'a str,
    pub related_images: &'a [RelatedImage],
    pub package_description: &'a str,
    pub package_icon: Option<&'a Icon>,
    /// The `olm.csv.metadata` property value.
    pub metadata: &'a str,
}

/// Fills in a synthesized csvJson (and `object`, when the bundle has no objects) if `csv_synth`.
pub fn complete_manifests(
    manifests: &mut api::Bundle,
    csv_synth: bool,
    inputs: impl FnOnce() -> String,
) {
    if csv_synth && manifests.csv_json.is_empty() {
        manifests.csv_json = inputs();
        if manifests.object.is_empty() {
            manifests.object.push(manifests.csv_json.clone());
        }
    }
}

/// `deprecation` is the bundle's deprecation message, if its package deprecates it.
pub fn to_wire(b: &Bundle, deprecation: Option<&str>) -> WireBundle {
    let mut core = api::Bundle {
        csv_name: b.name.clone(),
        package_name: b.package.clone(),
        bundle_path: b.image.clone(),
        version: b.version(),
        deprecation: deprecation.map(|m| api::Deprecation {
            message: m.to_string(),
        }),
        ..Default::default()
    };
    let gvk = |p: &Property| -> api::GroupVersionKind {
        let v: Value = serde_json::from_str(&p.value).unwrap_or(Value::Null);
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        api::GroupVersionKind {
            group: s("group"),
            version: s("version"),
            kind: s("kind"),
            plural: String::new(),
        }
    };
    let mut objects = Vec::new();
    let mut csv_metadata = Vec::new();
    for p in &b.properties {
        match p.r#type.as_str() {
            prop::BUNDLE_OBJECT => {
                if let Some(o) = crate::model::decode_bundle_object(&p.value) {
                    objects.push(o);
                }
                continue;
            }
            prop::CSV_METADATA => {
                csv_metadata.push(p);
                continue;
            }
            prop::GVK => core.provided_apis.push(gvk(p)),
            prop::GVK_REQUIRED => {
                core.required_apis.push(gvk(p));
                core.dependencies.push(api::Dependency {
                    r#type: "olm.gvk".into(),
                    value: p.value.clone(),
                });
            }
            prop::PACKAGE_REQUIRED => {
                let v: Value = serde_json::from_str(&p.value).unwrap_or(Value::Null);
                let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let mut text = String::from("{\"packageName\":");
                json::write_string(&mut text, &s("packageName"));
                text.push_str(",\"version\":");
                json::write_string(&mut text, &s("versionRange"));
                text.push('}');
                core.dependencies.push(api::Dependency {
                    r#type: "olm.package".into(),
                    value: text,
                });
            }
            _ => {}
        }
        core.properties.push(api::Property {
            r#type: p.r#type.clone(),
            value: p.value.clone(),
        });
    }
    let csv_json = objects
        .iter()
        .find(|(kind, _)| kind == "ClusterServiceVersion")
        .map(|(_, text)| text.clone())
        .unwrap_or_default();
    let csv_synth = csv_json.is_empty() && csv_metadata.len() == 1;
    let object: Vec<String> = objects.into_iter().map(|(_, t)| t).collect();
    WireBundle {
        core,
        manifests: api::Bundle {
            csv_json,
            object,
            ..Default::default()
        },
        csv_synth,
    }
}

/// The whole wire form of a model bundle, synthesized CSV included.
pub fn full_wire(pkg: &Package, b: &Bundle) -> api::Bundle {
    let w = to_wire(b, pkg.bundle_deprecation(&b.name));
    let mut m = w.manifests;
    complete_manifests(&mut m, w.csv_synth, || {
        let md = b
            .properties
            .iter()
            .find(|p| p.r#type == prop::CSV_METADATA)
            .map_or("", |p| p.value.as_str());
        synthesize_csv(&CsvInputs {
            bundle_name: &b.name,
            version: &b.version(),
            related_images: &b.related_images,
            package_description: &pkg.description,
            package_icon: pkg.icon.as_ref(),
            metadata: md,
        })
    });
    let mut core = w.core;
    core.csv_json = m.csv_json;
    core.object = m.object;
    core
}

/// Builds a v1alpha1 ClusterServiceVersion from an `olm.csv.metadata` property, in the field
/// order and with the empty-field rules of the Go types, so clients that decode `csvJson`
/// (packageserver reads display name, description, provider, icon, labels) get what opm sends.
pub fn synthesize_csv(c: &CsvInputs) -> String {
    let md: Map<String, Value> = serde_json::from_str(c.metadata).unwrap_or_default();
    let get = |k: &str| md.get(k).filter(|v| !v.is_null());
    let nonempty = |v: &&Value| match v {
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    };
    let mut out = String::from("{\"kind\":\"ClusterServiceVersion\",\"apiVersion\":\"operators.coreos.com/v1alpha1\",\"metadata\":{\"name\":");
    json::write_string(&mut out, c.bundle_name);
    out.push_str(",\"creationTimestamp\":null");
    for key in ["labels", "annotations"] {
        if let Some(v) = get(key).filter(nonempty) {
            out.push_str(&format!(",\"{key}\":{}", json::canonical(v)));
        }
    }
    out.push_str(
        "},\"spec\":{\"install\":{\"strategy\":\"deployment\",\"spec\":{\"deployments\":null}}",
    );
    if !c.version.is_empty() {
        out.push_str(",\"version\":");
        json::write_string(&mut out, c.version);
    }
    let field = |out: &mut String, json_key: &str, v: Option<&Value>, always: bool| match v
        .filter(nonempty)
    {
        Some(v) => out.push_str(&format!(",\"{json_key}\":{}", json::canonical(v))),
        None if always => out.push_str(&format!(",\"{json_key}\":{{}}")),
        None => {}
    };
    field(&mut out, "maturity", get("maturity"), false);
    field(
        &mut out,
        "customresourcedefinitions",
        get("crdDescriptions"),
        true,
    );
    field(
        &mut out,
        "apiservicedefinitions",
        get("apiServiceDefinitions"),
        true,
    );
    field(&mut out, "nativeAPIs", get("nativeAPIs"), false);
    field(&mut out, "minKubeVersion", get("minKubeVersion"), false);
    out.push_str(",\"displayName\":");
    json::write_string(
        &mut out,
        get("displayName").and_then(Value::as_str).unwrap_or(""),
    );
    let description = get("description")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(c.package_description);
    if !description.is_empty() {
        out.push_str(",\"description\":");
        json::write_string(&mut out, description);
    }
    field(&mut out, "keywords", get("keywords"), false);
    field(&mut out, "maintainers", get("maintainers"), false);
    field(&mut out, "provider", get("provider"), true);
    field(&mut out, "links", get("links"), false);
    if let Some(icon) = c.package_icon {
        out.push_str(",\"icon\":[{\"base64data\":");
        json::write_string(&mut out, &icon.base64data);
        out.push_str(",\"mediatype\":");
        json::write_string(&mut out, &icon.mediatype);
        out.push_str("}]");
    }
    field(&mut out, "installModes", get("installModes"), false);
    out.push_str(",\"cleanup\":{\"enabled\":false}");
    if !c.related_images.is_empty() {
        let imgs: Vec<Value> = c
            .related_images
            .iter()
            .map(|r| serde_json::json!({"name": r.name, "image": r.image}))
            .collect();
        out.push_str(&format!(
            ",\"relatedImages\":{}",
            json::canonical(&Value::Array(imgs))
        ));
    }
    out.push_str("},\"status\":{\"cleanup\":{}}}");
    json::go_html_escape(&out)
}
