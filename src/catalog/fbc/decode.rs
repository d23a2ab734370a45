//! Typing FBC metas: `olm.package`, `olm.channel`, `olm.bundle` and `olm.deprecations` into
//! [`Decl`]s, with upstream's field rules (Go `encoding/json` case-insensitive keys) and error
//! messages that name the field path. Any other schema becomes a custom [`Meta`].

use super::RawMeta;
use crate::catalog::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::json;
use crate::model::*;
use serde_json::{Map, Value};

/// Case-insensitive field lookup under Go `encoding/json` rules: every key that matches the
/// field exactly or case-insensitively is assigned in turn, so of several spellings the last
/// one in the canonical blob's byte-wise key order (serde_json's `Map` iterates sorted) wins,
/// as it does upstream.
pub fn get_ci<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    let folded = key.to_lowercase();
    m.iter()
        .rev()
        .find(|(k, _)| {
            k.as_str() == key || k.eq_ignore_ascii_case(key) || k.to_lowercase() == folded
        })
        .map(|(_, v)| v)
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Objects of a list field, each with its field path for error messages.
type ObjectList<'a> = Vec<(String, &'a Map<String, Value>)>;

/// Typed field access with error messages that name the field path.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    what: &'a str,
    path: String,
}

impl<'a> Fields<'a> {
    fn new(map: &'a Map<String, Value>, what: &'a str, path: String) -> Self {
        Fields { map, what, path }
    }
    fn err(&self, field: &str, expected: &str, got: &Value) -> Diagnostic {
        let sep = if self.path.is_empty() { "" } else { "." };
        Diagnostic::error(
            Rule::Schema,
            format!(
                "parse {}: field \"{}{sep}{field}\" must be {expected}, found {}",
                self.what,
                self.path,
                type_name(got)
            ),
        )
    }
    fn string(&self, field: &str) -> Result<String, Diagnostic> {
        match get_ci(self.map, field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.err(field, "a string", v)),
        }
    }
    fn list(&self, field: &str) -> Result<&'a [Value], Diagnostic> {
        match get_ci(self.map, field) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(self.err(field, "a list", v)),
        }
    }
    fn object(&self, field: &str) -> Result<Option<&'a Map<String, Value>>, Diagnostic> {
        match get_ci(self.map, field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(v) => Err(self.err(field, "an object", v)),
        }
    }
    fn objects(&self, field: &str) -> Result<ObjectList<'a>, Diagnostic> {
        let mut out = Vec::new();
        for (i, v) in self.list(field)?.iter().enumerate() {
            match v {
                Value::Object(o) => out.push((self.sub(&format!("{field}[{i}]")), o)),
                other => return Err(self.err(&format!("{field}[{i}]"), "an object", other)),
            }
        }
        Ok(out)
    }
    fn strings(&self, field: &str) -> Result<Vec<String>, Diagnostic> {
        let mut out = Vec::new();
        for (i, v) in self.list(field)?.iter().enumerate() {
            match v {
                Value::String(s) => out.push(s.clone()),
                other => return Err(self.err(&format!("{field}[{i}]"), "a string", other)),
            }
        }
        Ok(out)
    }
    fn sub(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        }
    }
    fn properties(&self) -> Result<Vec<Property>, Diagnostic> {
        let mut props = Vec::new();
        for (path, o) in self.objects("properties")? {
            let f = Fields::new(o, self.what, path);
            let ty = f.string("type")?;
            // A property without `value` keeps an empty value, which validation rejects as
            // upstream does ("unexpected end of JSON input"); `null` is a value.
            let value = get_ci(o, "value").map_or_else(String::new, json::canonical);
            props.push(Property { r#type: ty, value });
        }
        Ok(props)
    }
}

/// Types an FBC meta into a [`Decl`]; reports shape errors as diagnostics.
pub fn to_decl(raw: RawMeta, diags: &mut Vec<Diagnostic>) -> Option<Decl> {
    let origin = raw.origin.clone();
    let result = match raw.schema.as_str() {
        schema::PACKAGE => decode_package(&raw),
        schema::CHANNEL => decode_channel(&raw),
        schema::BUNDLE => decode_bundle(&raw),
        schema::DEPRECATIONS => decode_deprecations(&raw),
        _ => Ok(Decl::Other(Meta {
            blob: json::canonical_object(&raw.value),
            schema: raw.schema,
            package: raw.package,
            name: raw.name,
            origin: raw.origin,
        })),
    };
    match result {
        Ok(d) => Some(d),
        Err(d) => {
            diags.push(d.at(&origin));
            None
        }
    }
}

fn decode_package(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "package", String::new());
    let icon = match f.object("icon")? {
        Some(o) => {
            let fi = Fields::new(o, "package", "icon".into());
            Some(Icon {
                base64data: fi.string("base64data")?,
                mediatype: fi.string("mediatype")?,
            })
        }
        None => None,
    };
    Ok(Decl::Package(Package {
        name: raw.name.clone(),
        default_channel: f.string("defaultChannel")?,
        icon,
        description: f.string("description")?,
        properties: f.properties()?,
        origin: raw.origin.clone(),
        ..Default::default()
    }))
}

fn decode_channel(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "channel", String::new());
    let mut entries = Vec::new();
    for (path, o) in f.objects("entries")? {
        let e = Fields::new(o, "channel", path);
        entries.push(ChannelEntry {
            name: e.string("name")?,
            replaces: e.string("replaces")?,
            skips: e.strings("skips")?,
            skip_range: e.string("skipRange")?,
        });
    }
    Ok(Decl::Channel(
        raw.package.clone(),
        Channel {
            name: raw.name.clone(),
            entries,
            properties: f.properties()?,
            origin: raw.origin.clone(),
        },
    ))
}

fn decode_bundle(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "bundle", String::new());
    let mut related_images = Vec::new();
    for (path, o) in f.objects("relatedImages")? {
        let r = Fields::new(o, "bundle", path);
        related_images.push(RelatedImage {
            name: r.string("name")?,
            image: r.string("image")?,
        });
    }
    Ok(Decl::Bundle(Bundle {
        name: raw.name.clone(),
        package: raw.package.clone(),
        image: f.string("image")?,
        properties: f.properties()?,
        related_images,
        origin: raw.origin.clone(),
        body: Body::Whole,
    }))
}

fn decode_deprecations(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "deprecation", String::new());
    let mut entries = Vec::new();
    for (path, o) in f.objects("entries")? {
        let e = Fields::new(o, "deprecation", path.clone());
        let (schema, name) = match e.object("reference")? {
            Some(r) => {
                let fr = Fields::new(r, "deprecation", format!("{path}.reference"));
                (fr.string("schema")?, fr.string("name")?)
            }
            None => (String::new(), String::new()),
        };
        entries.push(DeprecationEntry {
            schema,
            name,
            message: e.string("message")?,
        });
    }
    Ok(Decl::Deprecations(
        raw.package.clone(),
        Deprecations {
            entries,
            origin: raw.origin.clone(),
        },
    ))
}
