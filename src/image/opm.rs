//! What `opm render` does to bundles beyond reading them, so opreg's output matches:
//! - a bundle from a bundle image names the image as given, lists it among its related images,
//!   and keeps its related images sorted by image and its manifest-carrying properties
//!   (`olm.bundle.object`, `olm.csv.metadata`) after all others;
//! - `--migrate-level bundle-object-to-csv-metadata` replaces a bundle's `olm.bundle.object`
//!   properties with one `olm.csv.metadata` built from its CSV (bundles with an image and a
//!   CSV object, and no `olm.csv.metadata` already);
//! - `--alpha-image-ref-template` names the image of a bundle read from a bundle directory.

use crate::model::{prop, Bundle, Catalog, Property, RelatedImage};
use base64::Engine;
use serde_json::{Map, Value};

/// The migrations `opm render --migrate-level` knows, in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MigrateLevel {
    /// No migration (opm's default).
    #[default]
    None,
    /// Move bundles' `olm.bundle.object` properties to one `olm.csv.metadata`.
    BundleObjectToCsvMetadata,
}

/// Makes a bundle read from a bundle image what `opm render IMAGE` writes.
pub fn finish_bundle_image(b: &mut Bundle, image: &str) {
    b.image = image.to_string();
    if !b.related_images.iter().any(|r| r.image == image) {
        b.related_images.push(RelatedImage {
            name: String::new(),
            image: image.to_string(),
        });
    }
    b.related_images.sort_by(|x, y| x.image.cmp(&y.image));
    let is_manifest =
        |p: &Property| p.r#type == prop::BUNDLE_OBJECT || p.r#type == prop::CSV_METADATA;
    let (mut rest, objects): (Vec<Property>, Vec<Property>) = std::mem::take(&mut b.properties)
        .into_iter()
        .partition(|p| !is_manifest(p));
    rest.extend(objects);
    b.properties = rest;
}

/// Runs the migrations up to `level` on every bundle.
pub fn migrate(cat: &mut Catalog, level: MigrateLevel) {
    if level == MigrateLevel::None {
        return;
    }
    for p in cat.packages.values_mut() {
        for b in p.bundles.values_mut() {
            bundle_object_to_csv_metadata(b);
        }
    }
}

/// opm's `bundle-object-to-csv-metadata` migration of one bundle.
pub fn bundle_object_to_csv_metadata(b: &mut Bundle) {
    if b.image.is_empty() || b.properties.iter().any(|p| p.r#type == prop::CSV_METADATA) {
        return;
    }
    let Some(csv) = b
        .properties
        .iter()
        .filter(|p| p.r#type == prop::BUNDLE_OBJECT)
        .filter_map(decode_object)
        .find(|o| o.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion"))
    else {
        return;
    };
    b.properties.retain(|p| p.r#type != prop::BUNDLE_OBJECT);
    b.properties.push(Property {
        r#type: prop::CSV_METADATA.into(),
        value: crate::json::canonical(&csv_metadata(&csv)),
    });
}

fn decode_object(p: &Property) -> Option<Value> {
    let v: Value = serde_json::from_str(&p.value).ok()?;
    let data = v.get("data")?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// A case-insensitive field lookup, as Go's JSON decoding into typed structs does it.
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    let m = v.as_object()?;
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

fn nonempty(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

/// The `olm.csv.metadata` value for a CSV: the CSV's annotations and labels and the
/// descriptive parts of its spec. Structs that Go does not omit when empty
/// (`apiServiceDefinitions`, `crdDescriptions`, `provider`) are written as `{}`.
pub fn csv_metadata(csv: &Value) -> Value {
    let meta = field(csv, "metadata").cloned().unwrap_or(Value::Null);
    let spec = field(csv, "spec").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    let mut put = |k: &str, v: Option<&Value>, always: bool| match v {
        Some(v) if nonempty(v) => {
            out.insert(k.to_string(), v.clone());
        }
        _ if always => {
            out.insert(k.to_string(), Value::Object(Map::new()));
        }
        _ => {}
    };
    put("annotations", field(&meta, "annotations"), false);
    put(
        "apiServiceDefinitions",
        field(&spec, "apiservicedefinitions"),
        true,
    );
    put(
        "crdDescriptions",
        field(&spec, "customresourcedefinitions"),
        true,
    );
    put("description", field(&spec, "description"), false);
    put("displayName", field(&spec, "displayName"), false);
    put("installModes", field(&spec, "installModes"), false);
    put("keywords", field(&spec, "keywords"), false);
    put("labels", field(&meta, "labels"), false);
    put("links", field(&spec, "links"), false);
    put("maintainers", field(&spec, "maintainers"), false);
    put("maturity", field(&spec, "maturity"), false);
    put("minKubeVersion", field(&spec, "minKubeVersion"), false);
    put("nativeAPIs", field(&spec, "nativeAPIs"), false);
    put("provider", field(&spec, "provider"), true);
    Value::Object(out)
}

/// `--alpha-image-ref-template`: a Go template naming a bundle directory's image from
/// `{{.Package}}`, `{{.Name}}` and `{{.Version}}` (the only fields upstream offers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRefTemplate(Vec<TemplatePart>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum TemplatePart {
    Text(String),
    Package,
    Name,
    Version,
}

/// An `--alpha-image-ref-template` that does not parse: the message quotes it and says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImageRefTemplateError(String);

impl std::str::FromStr for ImageRefTemplate {
    type Err = ImageRefTemplateError;
    fn from_str(s: &str) -> Result<Self, ImageRefTemplateError> {
        let mut parts = Vec::new();
        let mut rest = s;
        while let Some(open) = rest.find("{{") {
            parts.push(TemplatePart::Text(rest[..open].to_string()));
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| {
                ImageRefTemplateError(format!(
                    "invalid image reference template {s:?}: unclosed action"
                ))
            })?;
            parts.push(match after[..close].trim() {
                ".Package" => TemplatePart::Package,
                ".Name" => TemplatePart::Name,
                ".Version" => TemplatePart::Version,
                other => {
                    return Err(ImageRefTemplateError(format!(
                        "invalid image reference template {s:?}: {{{{{other}}}}} is not one of {{{{.Package}}}}, {{{{.Name}}}}, {{{{.Version}}}}"
                    )))
                }
            });
            rest = &after[close + 2..];
        }
        parts.push(TemplatePart::Text(rest.to_string()));
        Ok(ImageRefTemplate(parts))
    }
}

impl ImageRefTemplate {
    /// Names `b`'s image from the template.
    pub fn apply(&self, b: &mut Bundle) {
        let version = b.version();
        b.image = self
            .0
            .iter()
            .map(|p| match p {
                TemplatePart::Text(t) => t.as_str(),
                TemplatePart::Package => b.package.as_str(),
                TemplatePart::Name => b.name.as_str(),
                TemplatePart::Version => version.as_str(),
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: &Value) -> Property {
        let data = base64::engine::general_purpose::STANDARD.encode(v.to_string());
        Property {
            r#type: prop::BUNDLE_OBJECT.into(),
            value: crate::json::canonical(&json!({ "data": data })),
        }
    }

    #[test]
    fn bundle_image_finishing_and_migration() {
        let csv = json!({"kind": "ClusterServiceVersion", "metadata": {"name": "x.v1", "annotations": {"a": "b"}},
                          "spec": {"displayName": "X", "keywords": [], "provider": {"name": "me"}}});
        let crd = json!({"kind": "CustomResourceDefinition"});
        let mut b = Bundle {
            properties: vec![
                object(&crd),
                object(&csv),
                Property {
                    r#type: "olm.package".into(),
                    value: "{}".into(),
                },
            ],
            related_images: vec![RelatedImage {
                name: "op".into(),
                image: "z/op:1".into(),
            }],
            ..Default::default()
        };
        finish_bundle_image(&mut b, "reg/b:1");
        assert_eq!(b.image, "reg/b:1");
        assert_eq!(b.related_images[0].image, "reg/b:1");
        assert_eq!(b.properties[0].r#type, "olm.package");
        assert_eq!(b.properties.len(), 3);
        bundle_object_to_csv_metadata(&mut b);
        assert_eq!(b.properties.len(), 2);
        let m: Value = serde_json::from_str(&b.properties[1].value).unwrap();
        assert_eq!(
            m,
            json!({"annotations": {"a": "b"}, "apiServiceDefinitions": {}, "crdDescriptions": {},
                   "displayName": "X", "provider": {"name": "me"}})
        );
    }

    #[test]
    fn image_ref_template_names_a_bundle_image() {
        let t: ImageRefTemplate = "quay.io/x/{{.Package}}:v{{ .Version }}-{{.Name}}"
            .parse()
            .unwrap();
        let mut b = Bundle {
            name: "etcd.v1".into(),
            package: "etcd".into(),
            properties: vec![Property {
                r#type: prop::PACKAGE.into(),
                value: r#"{"packageName":"etcd","version":"1.0.0"}"#.into(),
            }],
            ..Default::default()
        };
        t.apply(&mut b);
        assert_eq!(b.image, "quay.io/x/etcd:v1.0.0-etcd.v1");
        assert!("x/{{.Channel}}".parse::<ImageRefTemplate>().is_err());
        assert!("x/{{.Name".parse::<ImageRefTemplate>().is_err());
    }
}
