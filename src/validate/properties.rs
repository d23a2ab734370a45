//! Typed property values: each property type upstream knows is decoded against its Go
//! struct, and a value of the wrong shape is reported with the words Go's `encoding/json`
//! uses (`json: cannot unmarshal number into Go struct field Package.packageName of type
//! string`), since those are the words `opm validate` prints.
//!
//! The types are those of upstream's `property.Parse` (`olm.package`, `olm.package.required`,
//! `olm.gvk`, `olm.gvk.required`, `olm.bundle.object`, `olm.csv.metadata`, `olm.channel`) and,
//! for `olm.csv.metadata`, the operator-framework/api types it embeds. Every other type
//! (`olm.constraint` included: upstream's parser has no schema for it) only has to be JSON.
//!
//! Go's decoding rules reproduced here: JSON `null` is accepted for any field and leaves it
//! empty; object keys match field names case-insensitively; unknown keys are ignored; the
//! first error in key order (keys are sorted, as in the canonical blob upstream decodes) wins;
//! `[]byte` fields hold standard base64, where CR and LF are skipped and padding is required.

/// The shape of a Go type, with the name `reflect` prints for it.
#[derive(Clone, Copy)]
enum Ty {
    /// A string kind; the name is the Go type (`string`, `v1alpha1.InstallModeType`).
    Str(&'static str),
    Bool,
    Int32,
    /// `[]byte`: a base64 string.
    Bytes,
    /// `json.RawMessage`: anything.
    Raw,
    /// `map[string]string`.
    StrMap,
    /// A slice: element type and the slice's Go name.
    List(&'static Ty, &'static str),
    Struct(&'static Struct),
}

struct Struct {
    /// The name Go's errors use for the struct (`AppLink`).
    name: &'static str,
    /// The qualified type name (`v1alpha1.AppLink`).
    qualified: &'static str,
    fields: &'static [(&'static str, Ty)],
}

/// A struct description: its Go name, its qualified type name and its fields.
const fn st(
    name: &'static str,
    qualified: &'static str,
    fields: &'static [(&'static str, Ty)],
) -> Struct {
    Struct {
        name,
        qualified,
        fields,
    }
}

const S: Ty = Ty::Str("string");
const STRINGS: Ty = Ty::List(&S, "[]string");

const PACKAGE: Struct = st(
    "Package",
    "property.Package",
    &[("packageName", S), ("version", S), ("release", S)],
);
const PACKAGE_REQUIRED: Struct = st(
    "PackageRequired",
    "property.PackageRequired",
    &[("packageName", S), ("versionRange", S)],
);
const GVK_FIELDS: &[(&str, Ty)] = &[("group", S), ("kind", S), ("version", S)];
const GVK: Struct = st("GVK", "property.GVK", GVK_FIELDS);
const GVK_REQUIRED: Struct = st("GVKRequired", "property.GVKRequired", GVK_FIELDS);
const BUNDLE_OBJECT: Struct = st(
    "BundleObject",
    "property.BundleObject",
    &[("data", Ty::Bytes)],
);
const CHANNEL: Struct = st("Channel", "property.Channel", &[("channelName", S)]);

const APP_LINK: Struct = st("AppLink", "v1alpha1.AppLink", &[("name", S), ("url", S)]);
const MAINTAINER: Struct = st(
    "Maintainer",
    "v1alpha1.Maintainer",
    &[("name", S), ("email", S)],
);
const INSTALL_MODE: Struct = st(
    "InstallMode",
    "v1alpha1.InstallMode",
    &[
        ("type", Ty::Str("v1alpha1.InstallModeType")),
        ("supported", Ty::Bool),
    ],
);
const NATIVE_GVK: Struct = st(
    "GroupVersionKind",
    "v1.GroupVersionKind",
    &[("group", S), ("version", S), ("kind", S)],
);
const RESOURCE_REF: Struct = st(
    "APIResourceReference",
    "v1alpha1.APIResourceReference",
    &[("name", S), ("kind", S), ("version", S)],
);
const DESCRIPTOR_FIELDS: &[(&str, Ty)] = &[
    ("path", S),
    ("displayName", S),
    ("description", S),
    ("x-descriptors", STRINGS),
    ("value", Ty::Raw),
];
const STATUS_DESCRIPTOR: Struct = st(
    "StatusDescriptor",
    "v1alpha1.StatusDescriptor",
    DESCRIPTOR_FIELDS,
);
const SPEC_DESCRIPTOR: Struct = st(
    "SpecDescriptor",
    "v1alpha1.SpecDescriptor",
    DESCRIPTOR_FIELDS,
);
const ACTION_DESCRIPTOR: Struct = st(
    "ActionDescriptor",
    "v1alpha1.ActionDescriptor",
    &[
        ("path", S),
        ("displayName", S),
        ("description", S),
        ("x-descriptors", STRINGS),
    ],
);
const RESOURCES: Ty = Ty::List(
    &Ty::Struct(&RESOURCE_REF),
    "[]v1alpha1.APIResourceReference",
);
const STATUS_DESCRIPTORS: Ty = Ty::List(
    &Ty::Struct(&STATUS_DESCRIPTOR),
    "[]v1alpha1.StatusDescriptor",
);
const SPEC_DESCRIPTORS: Ty = Ty::List(&Ty::Struct(&SPEC_DESCRIPTOR), "[]v1alpha1.SpecDescriptor");
const ACTION_DESCRIPTORS: Ty = Ty::List(
    &Ty::Struct(&ACTION_DESCRIPTOR),
    "[]v1alpha1.ActionDescriptor",
);
const CRD_DESCRIPTION: Struct = st(
    "CRDDescription",
    "v1alpha1.CRDDescription",
    &[
        ("name", S),
        ("version", S),
        ("kind", S),
        ("displayName", S),
        ("description", S),
        ("resources", RESOURCES),
        ("statusDescriptors", STATUS_DESCRIPTORS),
        ("specDescriptors", SPEC_DESCRIPTORS),
        ("actionDescriptors", ACTION_DESCRIPTORS),
    ],
);
const API_SERVICE_DESCRIPTION: Struct = st(
    "APIServiceDescription",
    "v1alpha1.APIServiceDescription",
    &[
        ("name", S),
        ("group", S),
        ("version", S),
        ("kind", S),
        ("deploymentName", S),
        ("containerPort", Ty::Int32),
        ("displayName", S),
        ("description", S),
        ("resources", RESOURCES),
        ("statusDescriptors", STATUS_DESCRIPTORS),
        ("specDescriptors", SPEC_DESCRIPTORS),
        ("actionDescriptors", ACTION_DESCRIPTORS),
    ],
);
const CRDS: Ty = Ty::List(&Ty::Struct(&CRD_DESCRIPTION), "[]v1alpha1.CRDDescription");
const API_SERVICES: Ty = Ty::List(
    &Ty::Struct(&API_SERVICE_DESCRIPTION),
    "[]v1alpha1.APIServiceDescription",
);
const CRD_DEFINITIONS: Struct = st(
    "CustomResourceDefinitions",
    "v1alpha1.CustomResourceDefinitions",
    &[("owned", CRDS), ("required", CRDS)],
);
const API_SERVICE_DEFINITIONS: Struct = st(
    "APIServiceDefinitions",
    "v1alpha1.APIServiceDefinitions",
    &[("owned", API_SERVICES), ("required", API_SERVICES)],
);
const CSV_METADATA: Struct = st(
    "CSVMetadata",
    "property.CSVMetadata",
    &[
        ("annotations", Ty::StrMap),
        (
            "apiServiceDefinitions",
            Ty::Struct(&API_SERVICE_DEFINITIONS),
        ),
        ("crdDescriptions", Ty::Struct(&CRD_DEFINITIONS)),
        ("description", S),
        ("displayName", S),
        (
            "installModes",
            Ty::List(&Ty::Struct(&INSTALL_MODE), "[]v1alpha1.InstallMode"),
        ),
        ("keywords", STRINGS),
        ("labels", Ty::StrMap),
        (
            "links",
            Ty::List(&Ty::Struct(&APP_LINK), "[]v1alpha1.AppLink"),
        ),
        (
            "maintainers",
            Ty::List(&Ty::Struct(&MAINTAINER), "[]v1alpha1.Maintainer"),
        ),
        ("maturity", S),
        ("minKubeVersion", S),
        (
            "nativeAPIs",
            Ty::List(&Ty::Struct(&NATIVE_GVK), "[]v1.GroupVersionKind"),
        ),
        ("provider", Ty::Struct(&APP_LINK)),
    ],
);

/// The Go struct upstream decodes a property type into, if it has one.
fn schema_of(ty: &str) -> Option<&'static Struct> {
    Some(match ty {
        "olm.package" => &PACKAGE,
        "olm.package.required" => &PACKAGE_REQUIRED,
        "olm.gvk" => &GVK,
        "olm.gvk.required" => &GVK_REQUIRED,
        "olm.bundle.object" => &BUNDLE_OBJECT,
        "olm.csv.metadata" => &CSV_METADATA,
        "olm.channel" => &CHANNEL,
        _ => return None,
    })
}

/// A property value upstream's `property.Parse` refuses: Go's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PropertyError(String);

impl From<String> for PropertyError {
    fn from(go_text: String) -> Self {
        PropertyError(go_text)
    }
}

impl From<&str> for PropertyError {
    fn from(go_text: &str) -> Self {
        PropertyError(go_text.to_string())
    }
}

/// Go's message for a value that is missing (empty raw JSON).
pub const EMPTY_VALUE: &str = "unexpected end of JSON input";

/// Decodes a property value (canonical JSON, or "" when the property had no `value`) the way
/// upstream's `property.Parse` does; the error is Go's text.
pub fn check(ty: &str, value: &str) -> Result<(), PropertyError> {
    if value.is_empty() {
        return Err(EMPTY_VALUE.into());
    }
    let Some(schema) = schema_of(ty) else {
        return serde_json::from_str::<serde::de::IgnoredAny>(value)
            .map(|_| ())
            .map_err(|e| PropertyError::from(e.to_string()));
    };
    // Checked while parsing, with no value tree built: the blob is canonical (keys sorted),
    // so the first error met is the first in key order, as in Go.
    let mut ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_str(value);
    let res = serde::de::DeserializeSeed::deserialize(
        Check {
            ty: Ty::Struct(schema),
            ctx: &mut ctx,
        },
        &mut de,
    )
    .and_then(|()| de.end());
    match (res, ctx.error) {
        (_, Some(go)) => Err(PropertyError::from(go)),
        (Err(e), None) => Err(PropertyError::from(e.to_string())),
        (Ok(()), None) => Ok(()),
    }
}

/// Go's error context: the innermost struct being filled, the JSON field path to the value,
/// and the first type error met.
#[derive(Default)]
struct Ctx {
    strukt: Option<&'static str>,
    path: Vec<&'static str>,
    error: Option<String>,
}

impl Ctx {
    /// Records Go's type error and returns a serde error that stops the parse.
    fn type_error<E: serde::de::Error>(&mut self, found: &str, ty: &str) -> E {
        self.error = Some(match self.strukt {
            Some(s) => format!(
                "json: cannot unmarshal {found} into Go struct field {s}.{} of type {ty}",
                self.path.join(".")
            ),
            None => format!("json: cannot unmarshal {found} into Go value of type {ty}"),
        });
        E::custom("type error")
    }
}

/// Checks one JSON value against a Go type while it is parsed.
struct Check<'c> {
    ty: Ty,
    ctx: &'c mut Ctx,
}

impl<'de> serde::de::DeserializeSeed<'de> for Check<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Check<'_> {
    fn mismatch<E: serde::de::Error>(self, found: &str) -> Result<(), E> {
        Err(self.ctx.type_error(found, type_name(self.ty)))
    }

    fn scalar<E: serde::de::Error>(self, found: &str, fits: bool) -> Result<(), E> {
        match (self.ty, fits) {
            (Ty::Raw, _) | (_, true) => Ok(()),
            _ => self.mismatch(found),
        }
    }

    fn number<E: serde::de::Error>(self, n: serde_json::Number) -> Result<(), E> {
        match self.ty {
            Ty::Raw => Ok(()),
            Ty::Int32 => match n.as_i64() {
                Some(i) if i32::try_from(i).is_ok() => Ok(()),
                _ => Err(self.ctx.type_error(&format!("number {n}"), "int32")),
            },
            _ => self.mismatch("number"),
        }
    }
}

impl<'de> serde::de::Visitor<'de> for Check<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(()) // null leaves any field empty
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        let fits = matches!(self.ty, Ty::Bool);
        self.scalar("bool", fits)
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.number(v.into())
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.number(v.into())
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        match serde_json::Number::from_f64(v) {
            Some(n) => self.number(n),
            None => self.mismatch("number"),
        }
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        match self.ty {
            Ty::Raw | Ty::Str(_) => Ok(()),
            Ty::Bytes => match go_base64_error(s) {
                Some(at) => {
                    self.ctx.error = Some(format!("illegal base64 data at input byte {at}"));
                    Err(E::custom("base64 error"))
                }
                None => Ok(()),
            },
            _ => self.mismatch("string"),
        }
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let elem = match self.ty {
            Ty::Raw => &Ty::Raw,
            Ty::List(elem, _) => elem,
            _ => return self.mismatch("array"),
        };
        while seq
            .next_element_seed(Check {
                ty: *elem,
                ctx: &mut *self.ctx,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = match self.ty {
            Ty::Raw => None,
            Ty::StrMap => None,
            Ty::Struct(st) => Some(st),
            _ => return self.mismatch("object"),
        };
        let values = match self.ty {
            Ty::StrMap => S,
            _ => Ty::Raw,
        };
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let field = st.and_then(|st| {
                st.fields
                    .iter()
                    .find(|(f, _)| *f == k)
                    .or_else(|| st.fields.iter().find(|(f, _)| f.eq_ignore_ascii_case(&k)))
            });
            let Some((name, fty)) = field else {
                // A map's values, or a key the struct does not have (ignored, but still JSON).
                map.next_value_seed(Check {
                    ty: values,
                    ctx: &mut *self.ctx,
                })?;
                continue;
            };
            let saved = self.ctx.strukt.replace(st.map_or("", |s| s.name));
            self.ctx.path.push(name);
            let r = map.next_value_seed(Check {
                ty: *fty,
                ctx: &mut *self.ctx,
            });
            self.ctx.path.pop();
            self.ctx.strukt = saved;
            r?;
        }
        Ok(())
    }
}

fn type_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Str(n) => n,
        Ty::Bool => "bool",
        Ty::Int32 => "int32",
        Ty::Bytes => "[]uint8",
        Ty::Raw => "json.RawMessage",
        Ty::StrMap => "map[string]string",
        Ty::List(_, n) => n,
        Ty::Struct(s) => s.qualified,
    }
}

/// Where Go's standard base64 decoder (padding required, CR and LF skipped, trailing bits
/// ignored) stops on `s`: the byte offset it reports, or `None` when `s` decodes.
pub fn go_base64_error(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    // Nearly every value is whole quanta of alphabet characters, padded at the end and
    // without line breaks: that decodes, and is tested 32 bytes at a time (the compiler
    // turns the fold into vector compares). Anything else takes the exact walk below.
    let body = b.strip_suffix(b"==").or(b.strip_suffix(b"=")).unwrap_or(b);
    if b.len().is_multiple_of(4)
        && body
            .chunks(32)
            .all(|c| c.iter().fold(true, |ok, &x| ok & base64_alphabet(x)))
    {
        return None;
    }
    go_base64_walk(b)
}

/// A character of standard base64's alphabet (padding aside).
fn base64_alphabet(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

/// [`go_base64_error`] the long way: Go's decoder, quantum by quantum.
fn go_base64_walk(b: &[u8]) -> Option<usize> {
    let alphabet = base64_alphabet;
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut i = 0;
    loop {
        // One quantum of four significant characters.
        let mut j = 0;
        while j < 4 {
            if i == b.len() {
                return match j {
                    0 => None,
                    _ => Some(i - j),
                };
            }
            let c = b[i];
            i += 1;
            if alphabet(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(i - 1);
            }
            if j == 2 {
                // "==" is expected; the first '=' is consumed.
                while i < b.len() && newline(b[i]) {
                    i += 1;
                }
                if i == b.len() {
                    return Some(b.len());
                }
                if b[i] != b'=' {
                    return Some(i - 1);
                }
                i += 1;
            }
            while i < b.len() && newline(b[i]) {
                i += 1;
            }
            return (i < b.len()).then_some(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_type_errors() {
        let cases = [
            ("olm.package", r#""x""#, "json: cannot unmarshal string into Go value of type property.Package"),
            ("olm.package", r#"{"packageName":5}"#, "json: cannot unmarshal number into Go struct field Package.packageName of type string"),
            ("olm.gvk", r#"{"Group":true}"#, "json: cannot unmarshal bool into Go struct field GVK.group of type string"),
            ("olm.csv.metadata", r#"{"provider":{"name":[]}}"#, "json: cannot unmarshal array into Go struct field AppLink.provider.name of type string"),
            ("olm.csv.metadata", r#"{"labels":"x"}"#, "json: cannot unmarshal string into Go struct field CSVMetadata.labels of type map[string]string"),
            ("olm.csv.metadata", r#"{"apiServiceDefinitions":{"owned":[{"containerPort":1.5}]}}"#, "json: cannot unmarshal number 1.5 into Go struct field APIServiceDescription.apiServiceDefinitions.owned.containerPort of type int32"),
            ("olm.bundle.object", r#"{"data":"a"}"#, "illegal base64 data at input byte 0"),
            ("olm.channel", "", "unexpected end of JSON input"),
        ];
        for (ty, v, want) in cases {
            assert_eq!(check(ty, v).unwrap_err().to_string(), want, "{ty} {v}");
        }
        for (ty, v) in [
            ("olm.package", r#"{"packageName":null,"extra":[1]}"#),
            ("olm.constraint", r#"{"cel":5}"#),
            (
                "olm.csv.metadata",
                r#"{"crdDescriptions":{"owned":[{"specDescriptors":[{"value":{"a":[1]}}]}]}}"#,
            ),
        ] {
            assert_eq!(check(ty, v), Ok(()), "{ty} {v}");
        }
    }

    #[test]
    fn go_base64_offsets() {
        for ok in ["", "PHN2Zz4=", "PHN2\nZz4=", "YQ==", "YR=="] {
            assert_eq!(go_base64_error(ok), None, "{ok}");
        }
        for (bad, at) in [
            ("abc", 0),
            ("PHN2Zz4", 4),
            ("PHN2Zz4*", 7),
            ("a===", 1),
            ("YQ=", 3),
            ("YQ==x", 4),
            ("not base64!", 3),
        ] {
            assert_eq!(go_base64_error(bad), Some(at), "{bad}");
        }
    }

    proptest::proptest! {
        /// The fast path never answers differently from the walk.
        #[test]
        fn go_base64_fast_path_agrees(
            s in proptest::prop_oneof!["[A-Za-z0-9+/]{0,40}={0,3}", "[Aa0+/=\n*]{0,12}"]
        ) {
            proptest::prop_assert_eq!(go_base64_error(&s), go_base64_walk(s.as_bytes()));
        }
    }
}
