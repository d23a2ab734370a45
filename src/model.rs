//! The catalog model: packages → channels → entries, and bundles with properties.
//!
//! Every input format (FBC, package manifests, bundle directories, legacy indexes) is turned
//! into this one model, and everything downstream (validation, the store, rendering, upgrade
//! resolution) reads it. The model is plain data: it never touches files, SQLite or gRPC.
//! Rules about the update graph live in [`crate::graph`], not here.

use base64::Engine;
use serde::Deserialize;

use std::collections::BTreeMap;
use std::fmt;

/// Where a piece of the catalog was read from, so that errors can name the file.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// Path of the file, as given on the command line (or a label such as `<demo>`).
    pub file: String,
    /// 1-based index of the document (YAML) or object (JSON stream) inside the file.
    pub doc: Option<usize>,
}

impl Origin {
    pub fn file(file: impl Into<String>) -> Self {
        Origin {
            file: file.into(),
            doc: None,
        }
    }
    pub fn doc(file: impl Into<String>, doc: usize) -> Self {
        Origin {
            file: file.into(),
            doc: Some(doc),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.doc {
            Some(d) => write!(f, "{} (document {})", self.file, d),
            None => write!(f, "{}", self.file),
        }
    }
}

/// A whole catalog: OLM packages plus metas of other schemas.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    pub packages: BTreeMap<String, Package>,
    /// Metas whose schema is not one of the four OLM schemas, in input order.
    pub others: Vec<Meta>,
}

/// A meta of a schema opreg does not interpret; served by the experimental RPC.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    pub schema: String,
    /// The `package` key, or "" when the meta has none.
    pub package: String,
    pub name: String,
    /// The whole object as canonical JSON (sorted keys, compact).
    pub blob: String,
    pub origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Package {
    pub name: String,
    pub default_channel: String,
    pub icon: Option<Icon>,
    pub description: String,
    /// Package-level properties; kept only so that rendering loses nothing.
    pub properties: Vec<Property>,
    pub channels: BTreeMap<String, Channel>,
    pub bundles: BTreeMap<String, Bundle>,
    pub deprecations: Option<Deprecations>,
    pub origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Icon {
    /// Base64 (standard alphabet) image bytes, as written in the catalog.
    pub base64data: String,
    pub mediatype: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Channel {
    pub name: String,
    /// Entries in the order the catalog lists them.
    pub entries: Vec<ChannelEntry>,
    pub properties: Vec<Property>,
    pub origin: Origin,
}

/// One bundle's membership in a channel, with that channel's update edges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelEntry {
    pub name: String,
    /// Name of the bundle this one replaces; "" for none. Need not be a bundle of the catalog.
    pub replaces: String,
    /// Names this bundle skips; they need not exist (synthetic targets).
    pub skips: Vec<String>,
    /// A blang range of versions this bundle can be installed over; "" for none. Kept verbatim.
    pub skip_range: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bundle {
    pub name: String,
    pub package: String,
    /// The bundle image pull spec; "" for bundles whose manifests are inline.
    pub image: String,
    /// Properties in catalog order, including `olm.bundle.object` and `olm.csv.metadata`.
    pub properties: Vec<Property>,
    pub related_images: Vec<RelatedImage>,
    pub origin: Origin,
    /// Whole, or the light copy a streaming ingest keeps.
    pub body: Body,
}

/// Whether a bundle still carries its manifest properties.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Body {
    /// Every property as read.
    #[default]
    Whole,
    /// The copy a streaming ingest keeps once the whole bundle went to the store: without the
    /// manifest-carrying properties (`olm.csv.metadata`, `olm.bundle.object`). Only
    /// [`crate::validate::bundle_rules_then_lighten`] makes one, after running the per-bundle
    /// rules on the whole bundle, so no rule can miss a streamed bundle.
    Light(RulesRan),
}

/// Proof that the per-bundle rules ran on the whole bundle; made only inside this crate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesRan(());

impl RulesRan {
    pub(crate) fn new() -> Self {
        RulesRan(())
    }
}

/// A typed property. `value` is canonical JSON text: compact, keys sorted at every level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Property {
    pub r#type: String,
    pub value: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelatedImage {
    pub name: String,
    pub image: String,
}

/// The `olm.deprecations` meta of a package.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deprecations {
    pub entries: Vec<DeprecationEntry>,
    pub origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeprecationEntry {
    /// `olm.package`, `olm.channel` or `olm.bundle`.
    pub schema: String,
    /// Channel or bundle name; "" for the package itself.
    pub name: String,
    pub message: String,
}

/// Property type names opreg interprets.
pub mod prop {
    pub const PACKAGE: &str = "olm.package";
    pub const GVK: &str = "olm.gvk";
    pub const GVK_REQUIRED: &str = "olm.gvk.required";
    pub const PACKAGE_REQUIRED: &str = "olm.package.required";
    pub const BUNDLE_OBJECT: &str = "olm.bundle.object";
    pub const CSV_METADATA: &str = "olm.csv.metadata";
    pub const CONSTRAINT: &str = "olm.constraint";
    pub const MAX_OCP: &str = "olm.maxOpenShiftVersion";
}

/// Schema names of the four OLM metas.
pub mod schema {
    pub const PACKAGE: &str = "olm.package";
    pub const CHANNEL: &str = "olm.channel";
    pub const BUNDLE: &str = "olm.bundle";
    pub const DEPRECATIONS: &str = "olm.deprecations";
}

/// An API group/version/kind as carried by `olm.gvk` properties.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl ChannelEntry {
    /// An entry from its parts (`""` for no replaces or skipRange).
    pub fn new(name: &str, replaces: &str, skips: &[&str], skip_range: &str) -> Self {
        ChannelEntry {
            name: name.into(),
            replaces: replaces.into(),
            skips: skips.iter().map(|s| s.to_string()).collect(),
            skip_range: skip_range.into(),
        }
    }
}

impl Bundle {
    /// True for a streamed bundle's light copy ([`Body::Light`]).
    pub fn is_light(&self) -> bool {
        matches!(self.body, Body::Light(_))
    }

    /// Properties of one type, in order.
    pub fn properties_of<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Property> + 'a {
        self.properties.iter().filter(move |p| p.r#type == ty)
    }

    /// The raw `version` of the single `olm.package` property ("" if absent or unreadable).
    pub fn version(&self) -> String {
        self.package_property()
            .and_then(|v| {
                v.get("version")
                    .and_then(|s| s.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default()
    }

    /// The `release` of the `olm.package` property, if any.
    pub fn release(&self) -> Option<String> {
        self.package_property()
            .and_then(|v| match v.get("release") {
                Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.clone()),
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                _ => None,
            })
    }

    fn package_property(&self) -> Option<serde_json::Value> {
        let p = self.properties_of(prop::PACKAGE).next()?;
        serde_json::from_str(&p.value).ok()
    }

    /// GVKs of `olm.gvk` (provided) or `olm.gvk.required` properties.
    pub fn gvks(&self, ty: &str) -> Vec<Gvk> {
        self.properties_of(ty)
            .filter_map(|p| serde_json::from_str::<serde_json::Value>(&p.value).ok())
            .map(|v| Gvk {
                group: str_field(&v, "group"),
                version: str_field(&v, "version"),
                kind: str_field(&v, "kind"),
            })
            .collect()
    }

    /// True when the bundle declares anything OLM v1 treats as a dependency.
    pub fn has_dependencies(&self) -> bool {
        self.properties.iter().any(|p| {
            p.r#type == prop::GVK_REQUIRED
                || p.r#type == prop::PACKAGE_REQUIRED
                || p.r#type == prop::CONSTRAINT
        })
    }
}

fn str_field(v: &serde_json::Value, key: &str) -> String {
    v.get(key)
        .and_then(|s| s.as_str())
        .unwrap_or_default()
        .to_string()
}

impl Package {
    fn deprecation_message(&self, schema: &str, name: &str) -> Option<&str> {
        self.deprecations.as_ref().and_then(|d| {
            d.entries
                .iter()
                .find(|e| e.schema == schema && e.name == name)
                .map(|e| e.message.as_str())
        })
    }
    /// Deprecation message of the package itself.
    pub fn package_deprecation(&self) -> Option<&str> {
        self.deprecation_message(schema::PACKAGE, "")
    }
    pub fn channel_deprecation(&self, channel: &str) -> Option<&str> {
        self.deprecation_message(schema::CHANNEL, channel)
    }
    pub fn bundle_deprecation(&self, bundle: &str) -> Option<&str> {
        self.deprecation_message(schema::BUNDLE, bundle)
    }
}

impl Catalog {
    pub fn bundle_count(&self) -> usize {
        self.packages.values().map(|p| p.bundles.len()).sum()
    }
    pub fn entry_count(&self) -> usize {
        self.packages
            .values()
            .flat_map(|p| p.channels.values())
            .map(|c| c.entries.len())
            .sum()
    }
}

/// Decodes an `olm.bundle.object` value to (kind, the object's JSON text), as upstream's loader
/// does (`yaml.ToJSON` of apimachinery): data whose first non-space character is `{` is JSON
/// and is kept exactly as given, byte for byte (key order, spacing, escapes, large numbers);
/// any other document is YAML, converted to JSON as sigs.k8s.io/yaml converts it (sorted keys,
/// Go's HTML escapes). `None` when the value is not `{"data": <base64 of a JSON or YAML
/// document>}`; validation rejects such bundles (upstream: "read bundle objects").
pub fn decode_bundle_object(value: &str) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct Value {
        data: String,
    }
    let data = serde_json::from_str::<Value>(value).ok()?.data;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    if text.trim_start().starts_with('{') {
        // The kind is read as upstream's `extractCSV` reads it, from the object as YAML
        // (JSON is YAML); only the kind is decoded.
        #[derive(Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: Option<serde_json::Value>,
        }
        let kind = match serde_json::from_str::<Kind>(&text) {
            Ok(k) => k.kind,
            Err(_) => yaml_object(&text)?.get("kind").cloned(),
        };
        let kind = kind
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        return Some((kind.to_string(), text));
    }
    let obj = yaml_object(&text)?;
    let kind = obj
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_string();
    Some((
        kind,
        crate::json::go_html_escape(crate::json::canonical(&obj)),
    ))
}

/// A bundle object's document read as YAML.
fn yaml_object(text: &str) -> Option<serde_json::Value> {
    crate::yaml::check_flow_depth(text).ok()?;
    let de = yaml_serde::Deserializer::from_str(text).next()?;
    serde_json::Value::deserialize(de).ok()
}
