//! Which images a catalog names and who names them: each distinct reference once, with every
//! bundle that names it (as its own image or as a related image) and the platforms that bundle
//! declares with OLM's labels on its CSV. With a base catalog, only bundles that are new or
//! changed since it count.

use crate::model::{Bundle, Catalog};
use base64::Engine;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// An OS and an architecture, in Go's names (`linux`, `amd64`).
pub type Platform = (String, String);

/// A bundle that names an image.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    pub package: String,
    pub bundle: String,
    /// The bundle's own image (also when it lists itself among its related images).
    pub bundle_image: bool,
    /// What the bundle's CSV declares (linux/amd64 when it declares nothing).
    pub platforms: Vec<Platform>,
}

/// One distinct reference and its uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub reference: String,
    pub uses: Vec<Use>,
}

impl Wanted {
    /// Some bundle names it as a related image other than its own: its platforms matter.
    pub fn needs_platforms(&self) -> bool {
        self.uses.iter().any(|u| !u.bundle_image)
    }
}

const ARCH_LABEL: &str = "operatorframework.io/arch.";
const OS_LABEL: &str = "operatorframework.io/os.";

/// The images of `catalog`'s bundles (only bundles new or changed since `base`, when given),
/// sorted by reference, and the number of bundles they came from.
pub fn collect(catalog: &Catalog, base: Option<&Catalog>) -> (Vec<Wanted>, usize) {
    let mut by_ref: BTreeMap<&str, BTreeSet<Use>> = BTreeMap::new();
    let mut bundles = 0;
    for p in catalog.packages.values() {
        for b in p.bundles.values() {
            if base.is_some_and(|base| !changed(b, base)) {
                continue;
            }
            bundles += 1;
            let platforms = declared_platforms(b);
            let named = std::iter::once((b.image.as_str(), true)).chain(
                b.related_images
                    .iter()
                    .map(|ri| (ri.image.as_str(), ri.image == b.image)),
            );
            for (r, own) in named.filter(|(r, _)| !r.is_empty()) {
                by_ref.entry(r).or_default().insert(Use {
                    package: b.package.clone(),
                    bundle: b.name.clone(),
                    bundle_image: own,
                    platforms: platforms.clone(),
                });
            }
        }
    }
    let wanted = by_ref
        .into_iter()
        .map(|(r, uses)| Wanted {
            reference: r.to_string(),
            uses: uses.into_iter().collect(),
        })
        .collect();
    (wanted, bundles)
}

/// New in `b`'s package since `base`, or with other images or properties there.
fn changed(b: &Bundle, base: &Catalog) -> bool {
    let Some(old) = base
        .packages
        .get(&b.package)
        .and_then(|p| p.bundles.get(&b.name))
    else {
        return true;
    };
    old.image != b.image || old.related_images != b.related_images || old.properties != b.properties
}

/// The platforms `b`'s CSV declares: every `operatorframework.io/os.<os>: supported` with
/// every `operatorframework.io/arch.<arch>: supported`; an OS without a label is linux, an
/// architecture without one amd64 (each dimension on its own), as OLM reads them.
pub fn declared_platforms(b: &Bundle) -> Vec<Platform> {
    let labels = csv_labels(b);
    let supported = |prefix: &str| -> BTreeSet<String> {
        labels
            .iter()
            .filter(|(_, v)| v.as_str() == "supported")
            .filter_map(|(k, _)| k.strip_prefix(prefix))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut oses = supported(OS_LABEL);
    if oses.is_empty() {
        oses.insert("linux".into());
    }
    let mut arches = supported(ARCH_LABEL);
    if arches.is_empty() {
        arches.insert("amd64".into());
    }
    let mut out = Vec::new();
    for os in &oses {
        for arch in &arches {
            out.push((os.clone(), arch.clone()));
        }
    }
    out
}

/// The CSV's `metadata.labels`: from `olm.csv.metadata`, else from the CSV among the
/// `olm.bundle.object`s (base64 JSON or YAML).
fn csv_labels(b: &Bundle) -> BTreeMap<String, String> {
    let strings = |v: Option<&Value>| -> BTreeMap<String, String> {
        v.and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    for p in &b.properties {
        if p.r#type == crate::model::prop::CSV_METADATA {
            if let Ok(v) = serde_json::from_str::<Value>(&p.value) {
                return strings(v.get("labels"));
            }
        }
    }
    for p in &b.properties {
        if p.r#type != crate::model::prop::BUNDLE_OBJECT {
            continue;
        }
        let Some(obj) = decode_object(&p.value) else {
            continue;
        };
        if obj.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion") {
            return strings(obj.pointer("/metadata/labels"));
        }
    }
    BTreeMap::new()
}

/// An `olm.bundle.object` value (`{"data": base64}`) decoded to its manifest.
fn decode_object(value: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(value).ok()?;
    let data = v.get("data")?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    serde_json::from_slice(&bytes)
        .ok()
        .or_else(|| yaml_serde::from_slice(&bytes).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Package, Property, RelatedImage};

    fn bundle(name: &str, image: &str, related: &[&str], labels: &str) -> Bundle {
        Bundle {
            name: name.into(),
            package: "p".into(),
            image: image.into(),
            related_images: related
                .iter()
                .map(|r| RelatedImage {
                    name: String::new(),
                    image: r.to_string(),
                })
                .collect(),
            properties: vec![Property {
                r#type: crate::model::prop::CSV_METADATA.into(),
                value: format!("{{\"labels\":{{{labels}}}}}"),
            }],
            ..Default::default()
        }
    }

    fn cat(bundles: Vec<Bundle>) -> Catalog {
        let mut p = Package {
            name: "p".into(),
            ..Default::default()
        };
        for b in bundles {
            p.bundles.insert(b.name.clone(), b);
        }
        let mut c = Catalog::default();
        c.packages.insert("p".into(), p);
        c
    }

    fn pl(os: &str, arch: &str) -> Platform {
        (os.into(), arch.into())
    }

    #[test]
    fn labels_declare_platforms_each_dimension_defaulting_on_its_own() {
        let b = |l: &str| declared_platforms(&bundle("b", "x", &[], l));
        assert_eq!(b(""), vec![pl("linux", "amd64")]);
        assert_eq!(
            b(
                r#""operatorframework.io/arch.arm64":"supported","operatorframework.io/arch.amd64":"supported""#
            ),
            vec![pl("linux", "amd64"), pl("linux", "arm64")]
        );
        assert_eq!(
            b(r#""operatorframework.io/os.windows":"supported""#),
            vec![pl("windows", "amd64")]
        );
        assert_eq!(
            b(r#""operatorframework.io/arch.s390x":"unsupported""#),
            vec![pl("linux", "amd64")]
        );
    }

    #[test]
    fn each_reference_once_with_every_use_and_the_bundle_image_marked() {
        let c = cat(vec![
            bundle("a", "q.io/b:1", &["q.io/b:1", "q.io/op@sha256:1"], ""),
            bundle("b", "q.io/b:2", &["q.io/op@sha256:1"], ""),
        ]);
        let (w, n) = collect(&c, None);
        assert_eq!(n, 2);
        let refs: Vec<&str> = w.iter().map(|w| w.reference.as_str()).collect();
        assert_eq!(refs, vec!["q.io/b:1", "q.io/b:2", "q.io/op@sha256:1"]);
        assert_eq!(w[0].uses.len(), 1);
        assert!(w[0].uses[0].bundle_image && !w[0].needs_platforms());
        assert_eq!(w[2].uses.len(), 2);
        assert!(w[2].needs_platforms());
    }

    #[test]
    fn with_a_base_only_new_or_changed_bundles_count() {
        let base = cat(vec![
            bundle("a", "q.io/b:1", &["q.io/x:1"], ""),
            bundle("b", "q.io/b:2", &["q.io/y:1"], ""),
        ]);
        let head = cat(vec![
            bundle("a", "q.io/b:1", &["q.io/x:1"], ""),
            bundle("b", "q.io/b:2", &["q.io/y:2"], ""),
            bundle("c", "q.io/b:3", &[], ""),
        ]);
        let (w, n) = collect(&head, Some(&base));
        assert_eq!(n, 2);
        let refs: Vec<&str> = w.iter().map(|w| w.reference.as_str()).collect();
        assert_eq!(refs, vec!["q.io/b:2", "q.io/b:3", "q.io/y:2"]);
    }
}
