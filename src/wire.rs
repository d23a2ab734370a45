//! Model → wire: how a catalog bundle becomes an `api.Bundle`.
//!
//! This is upstream's FBC conversion: providedApis from `olm.gvk`, requiredApis and
//! dependencies from `olm.gvk.required`/`olm.package.required`, properties without the
//! manifest-carrying types, `object` from `olm.bundle.object`, and `csvJson` from the CSV
//! object or, when there is none, synthesized from a single `olm.csv.metadata`. The store runs
//! it once per bundle at ingest and keeps the encoded result, so serving never repeats it.
//! A synthesized CSV repeats the package icon (and often the package description) in every
//! bundle, so the store keeps it as a [`csv_template`] with two slots, and the package's
//! parts once per package ([`csv_package_parts`]).
//! Channel-specific fields (channelName, replaces, skips, skipRange) are added at query time.
//!
//! Serving sends bytes, not messages: a bundle RPC's answer is [`encode_bundle`]'s splice of
//! the stored encodings (an [`EncodedBundle`]), since protobuf decoders take the fields of a
//! message in any order and concatenated encodings are one message.

use crate::api;
use crate::json;
use crate::model::*;
use prost::bytes::{Bytes, BytesMut};
use serde_json::Value;

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

/// What a synthesized ClusterServiceVersion takes from its bundle.
pub struct CsvInputs<'a> {
    pub bundle_name: &'a str,
    pub version: &'a str,
    pub related_images: &'a [RelatedImage],
    /// The `olm.csv.metadata` property value.
    pub metadata: &'a str,
}

/// Where a [`csv_template`] takes the package's description (present only when the bundle's
/// metadata has none) and icon. JSON text never holds these characters unescaped.
pub const DESCRIPTION_SLOT: char = '\u{1}';
pub const ICON_SLOT: char = '\u{2}';

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
        let template = csv_template(&CsvInputs {
            bundle_name: &b.name,
            version: &b.version(),
            related_images: &b.related_images,
            metadata: md,
        });
        let (description, icon) = csv_package_parts(&pkg.description, pkg.icon.as_ref());
        let filled = fill_csv(template.as_bytes(), description.as_bytes(), icon.as_bytes());
        // Slots sit between JSON tokens, so the pieces of valid UTF-8 join into valid UTF-8.
        String::from_utf8(filled.concat()).expect("UTF-8 pieces")
    });
    let mut core = w.core;
    core.csv_json = m.csv_json;
    core.object = m.object;
    core
}

/// Builds a v1alpha1 ClusterServiceVersion from an `olm.csv.metadata` property, in the field
/// order and with the empty-field rules of the Go types, so clients that decode `csvJson`
/// (packageserver reads display name, description, provider, icon, labels) get what opm sends.
///
/// The package's parts are left as slots ([`DESCRIPTION_SLOT`], [`ICON_SLOT`]) for
/// [`fill_csv`], so the template can be stored once per bundle and the package's once.
pub fn csv_template(c: &CsvInputs) -> String {
    // The metadata is canonical JSON (model::Property), so each member's text is already its
    // canonical encoding: members are copied, never decoded and re-encoded.
    let md: std::collections::HashMap<std::borrow::Cow<str>, &serde_json::value::RawValue> =
        serde_json::from_str(c.metadata).unwrap_or_default();
    let get = |k: &str| md.get(k).map(|v| v.get()).filter(|v| *v != "null");
    let nonempty = |v: &&str| !matches!(*v, "\"\"" | "[]" | "{}");
    let mut out = String::from("{\"kind\":\"ClusterServiceVersion\",\"apiVersion\":\"operators.coreos.com/v1alpha1\",\"metadata\":{\"name\":");
    json::write_string(&mut out, c.bundle_name);
    out.push_str(",\"creationTimestamp\":null");
    let member = |out: &mut String, key: &str, v: &str| {
        out.push_str(",\"");
        out.push_str(key);
        out.push_str("\":");
        out.push_str(v);
    };
    for key in ["labels", "annotations"] {
        if let Some(v) = get(key).filter(nonempty) {
            member(&mut out, key, v);
        }
    }
    out.push_str(
        "},\"spec\":{\"install\":{\"strategy\":\"deployment\",\"spec\":{\"deployments\":null}}",
    );
    if !c.version.is_empty() {
        out.push_str(",\"version\":");
        json::write_string(&mut out, c.version);
    }
    let field = |out: &mut String, json_key: &str, v: Option<&str>, always: bool| match v
        .filter(nonempty)
    {
        Some(v) => member(out, json_key, v),
        None if always => member(out, json_key, "{}"),
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
    // A string member's canonical text is its JSON string literal.
    fn string(v: Option<&str>) -> Option<&str> {
        v.filter(|v| v.starts_with('"'))
    }
    member(
        &mut out,
        "displayName",
        string(get("displayName")).unwrap_or("\"\""),
    );
    match string(get("description")).filter(nonempty) {
        Some(own) => member(&mut out, "description", own),
        None => out.push(DESCRIPTION_SLOT),
    }
    field(&mut out, "keywords", get("keywords"), false);
    field(&mut out, "maintainers", get("maintainers"), false);
    field(&mut out, "provider", get("provider"), true);
    field(&mut out, "links", get("links"), false);
    out.push(ICON_SLOT);
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
    json::go_html_escape(out)
}

/// A package's parts of a synthesized CSV, as JSON text ready for [`fill_csv`]: the
/// description member (empty when there is no description) and the icon member.
pub fn csv_package_parts(description: &str, icon: Option<&Icon>) -> (String, String) {
    let mut d = String::new();
    if !description.is_empty() {
        d.push_str(",\"description\":");
        json::write_string(&mut d, description);
    }
    let mut i = String::new();
    if let Some(icon) = icon {
        i.push_str(",\"icon\":[{\"base64data\":");
        json::write_string(&mut i, &icon.base64data);
        i.push_str(",\"mediatype\":");
        json::write_string(&mut i, &icon.mediatype);
        i.push_str("}]");
    }
    (json::go_html_escape(d), json::go_html_escape(i))
}

/// One piece of a synthesized CSV ([`csv_parts`]).
#[derive(Clone, Debug, PartialEq)]
pub enum CsvPart {
    /// These bytes of the template.
    Template(std::ops::Range<usize>),
    /// The package's description member.
    Description,
    /// The package's icon member.
    Icon,
}

/// The pieces of a synthesized CSV, in order: the template's text around its slots, and what
/// fills each slot.
pub fn csv_parts(template: &[u8]) -> Vec<CsvPart> {
    let mut out = Vec::with_capacity(5);
    let mut at = 0;
    while let Some(i) = memchr::memchr2(DESCRIPTION_SLOT as u8, ICON_SLOT as u8, &template[at..]) {
        out.push(CsvPart::Template(at..at + i));
        out.push(match template[at + i] == DESCRIPTION_SLOT as u8 {
            true => CsvPart::Description,
            false => CsvPart::Icon,
        });
        at += i + 1;
    }
    out.push(CsvPart::Template(at..template.len()));
    out
}

/// The pieces of a synthesized CSV, in order: `template` with its slots filled.
/// Bytes, not `str`: the store's text was checked at ingest, and a served answer is not worth
/// checking again (UTF-8 validation of the CSV was 2 % of a bundle RPC).
pub fn fill_csv<'a>(template: &'a [u8], description: &'a [u8], icon: &'a [u8]) -> Vec<&'a [u8]> {
    csv_parts(template)
        .into_iter()
        .map(|p| match p {
            CsvPart::Template(r) => &template[r],
            CsvPart::Description => description,
            CsvPart::Icon => icon,
        })
        .collect()
}

/// An `api.Bundle` already encoded, as the pieces it was spliced from: their concatenation is
/// the message. A synthesized CSV is usually sent twice (as csvJson and as the one object), and
/// its pieces are then shared, not copied. The served side of `api.Registry` (build.rs maps
/// `api.Bundle` to this type there) sends these bytes as they are: through tonic, copied into
/// its buffer; the unary bundle RPCs piece by piece ([`crate::server::direct`]).
#[derive(Clone, Default)]
pub struct EncodedBundle {
    pieces: Vec<Bytes>,
    len: usize,
}

impl EncodedBundle {
    /// A message encoded in one piece.
    pub fn from_bytes(b: Bytes) -> Self {
        EncodedBundle {
            len: b.len(),
            pieces: vec![b],
        }
    }

    fn push(&mut self, b: Bytes) {
        self.len += b.len();
        if !b.is_empty() {
            self.pieces.push(b);
        }
    }

    /// The encoded message's pieces, in order.
    pub fn pieces(&self) -> &[Bytes] {
        &self.pieces
    }

    /// The encoded message in one piece (a copy unless it is one already).
    pub fn to_bytes(&self) -> Bytes {
        match &self.pieces[..] {
            [one] => one.clone(),
            many => many.concat().into(),
        }
    }
}

impl PartialEq for EncodedBundle {
    fn eq(&self, other: &Self) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

impl std::fmt::Debug for EncodedBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "EncodedBundle({} bytes)", self.len)
    }
}

impl prost::Message for EncodedBundle {
    fn encode_raw(&self, buf: &mut impl prost::bytes::BufMut) {
        for p in &self.pieces {
            buf.put_slice(p);
        }
    }

    /// The server never receives a bundle: decoding one skips every field.
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl prost::bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.len
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// Where a stored bundle's csvJson and objects come from.
pub enum Manifests<'a> {
    /// Left out (ListBundles leaves out the manifests of bundles with an image).
    None,
    /// The stored encoding of [`WireBundle::manifests`].
    Stored(&'a [u8]),
    /// [`WireBundle::manifests`] with a synthesized CSV, [`complete_manifests`]'s rule: the CSV
    /// is csvJson, and the one object when the bundle has none of its own.
    /// The template and the package's parts are given as read, not copied again.
    Synthesized {
        objects: &'a [u8],
        template: Bytes,
        description: Bytes,
        icon: Bytes,
    },
}

/// One bundle's answer, spliced from stored encodings: `core` (the encoded
/// [`WireBundle::core`]), the entry's channel-specific fields, and the manifests. The core, the
/// entry and stored manifests are copied once (they are borrowed from a database row); a
/// synthesized CSV's template and package parts are sent as given (the store reads them straight
/// into their buffer), and a CSV sent twice is shared.
pub fn encode_bundle(core: &[u8], entry: &api::Bundle, manifests: Manifests) -> EncodedBundle {
    use prost::encoding::{encode_key, encode_varint, WireType};
    use prost::Message;
    const CSV_JSON: u32 = 4;
    const OBJECT: u32 = 5;
    let stored = match &manifests {
        Manifests::Stored(m) => m.len(),
        _ => 0,
    };
    let mut head = BytesMut::with_capacity(core.len() + entry.encoded_len() + stored + 16);
    head.extend_from_slice(core);
    entry
        .encode(&mut head)
        .expect("a BytesMut grows to take any message");
    let mut out = EncodedBundle::default();
    match manifests {
        Manifests::None => out.push(head.freeze()),
        Manifests::Stored(m) => {
            head.extend_from_slice(m);
            out.push(head.freeze());
        }
        Manifests::Synthesized {
            objects,
            template,
            description,
            icon,
        } => {
            let parts = csv_parts(&template);
            let csv: Vec<Bytes> = parts
                .into_iter()
                .map(|p| match p {
                    CsvPart::Template(r) => template.slice(r),
                    CsvPart::Description => description.clone(),
                    CsvPart::Icon => icon.clone(),
                })
                .collect();
            let csv_len: usize = csv.iter().map(Bytes::len).sum();
            let field = |buf: &mut BytesMut, tag: u32| {
                encode_key(tag, WireType::LengthDelimited, buf);
                encode_varint(csv_len as u64, buf);
            };
            field(&mut head, CSV_JSON);
            out.push(head.freeze());
            csv.iter().for_each(|p| out.push(p.clone()));
            let mut mid = BytesMut::with_capacity(objects.len() + 16);
            mid.extend_from_slice(objects);
            if objects.is_empty() {
                field(&mut mid, OBJECT);
            }
            out.push(mid.freeze());
            if objects.is_empty() {
                csv.into_iter().for_each(|p| out.push(p));
            }
        }
    }
    out
}
