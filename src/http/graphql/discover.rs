//! Schema discovery as catalogd does it: every object of the catalog is read once, and each
//! top-level key becomes a field whose kind comes from the first object that has it.
//!
//! * a string, bool or number is `String`, `Boolean`, or a number; `null`, an object or
//!   anything else is `String` (served as JSON text);
//! * a number field is `Int` only while every value seen is an integer within GraphQL's 32-bit
//!   `Int`, and `Float` once any is not (catalogd types numbers from the first value alone,
//!   and would answer `2` for `2.5`: a documented difference);
//! * an array is a list: up to its first 10 elements are sampled; the first non-null one gives
//!   the element type, mixed scalar kinds fall back to `[String]`, and the keys of object
//!   elements (over all sampled elements of all objects, first seen wins) make a nested type;
//! * a key of a nested object is typed from its value alone (an array by its first element).
//!
//! Values are looked at as raw JSON ([`RawValue`]), so large strings (icons) are skipped over,
//! never copied.

use super::naming::field_name;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;

/// How many elements of an array are looked at (catalogd's `maxSampleElements`).
pub const MAX_SAMPLE_ELEMENTS: usize = 10;

/// A GraphQL scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    String,
    Int,
    Float,
    Boolean,
}

impl Scalar {
    pub fn name(self) -> &'static str {
        match self {
            Scalar::String => "String",
            Scalar::Int => "Int",
            Scalar::Float => "Float",
            Scalar::Boolean => "Boolean",
        }
    }
}

/// One discovered field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldInfo {
    /// The GraphQL name ([`field_name`] of the key).
    pub name: String,
    /// The JSON key it was first seen as.
    pub original_name: String,
    pub scalar: Scalar,
    pub is_array: bool,
    /// For an array of objects: the fields of its elements (then it is a list of a nested type).
    pub nested: BTreeMap<String, FieldInfo>,
}

impl FieldInfo {
    /// The type as GraphQL writes it: `Int`, `[String]`.
    pub fn type_string(&self) -> String {
        match self.is_array {
            true => format!("[{}]", self.scalar.name()),
            false => self.scalar.name().to_string(),
        }
    }
}

/// One schema's fields and object count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaInfo {
    pub fields: BTreeMap<String, FieldInfo>,
    pub total_objects: usize,
}

/// Every schema of a catalog version.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CatalogSchema {
    pub schemas: BTreeMap<String, SchemaInfo>,
}

/// A JSON object's members in document order, values left raw (a repeated key keeps its last
/// value, as a Go map does).
pub struct RawObject<'a>(pub Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, &'de RawValue)> = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v: &'de RawValue = m.next_value()?;
                    match out.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => out.push((k, v)),
                    }
                }
                Ok(RawObject(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> RawObject<'a> {
    /// Parses one object.
    pub fn parse(text: &'a str) -> serde_json::Result<RawObject<'a>> {
        serde_json::from_str(text)
    }
    /// The value of `key` when it is a JSON string.
    pub fn string(&self, key: &str) -> Option<String> {
        let (_, v) = self.0.iter().find(|(k, _)| k == key)?;
        serde_json::from_str::<String>(v.get()).ok()
    }
}

/// The JSON kind of a raw value; numbers say whether they fit GraphQL's `Int` (integral and
/// within 32 bits).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Null,
    Bool,
    Number { integral: bool },
    String,
    Map,
    Array,
}

fn kind(v: &RawValue) -> Kind {
    let s = v.get();
    match s.as_bytes().first() {
        Some(b'"') => Kind::String,
        Some(b't' | b'f') => Kind::Bool,
        Some(b'n') | None => Kind::Null,
        Some(b'{') => Kind::Map,
        Some(b'[') => Kind::Array,
        _ => {
            let f: f64 = s.parse().unwrap_or(f64::NAN);
            let integral =
                f.fract() == 0.0 && (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&f);
            Kind::Number { integral }
        }
    }
}

/// catalogd's `jsonTypeToGraphQL`: the type of a kind (numbers are widened over all values by
/// [`widen`]).
fn scalar_of(k: Kind) -> Scalar {
    match k {
        Kind::String => Scalar::String,
        Kind::Bool => Scalar::Boolean,
        Kind::Number { integral: true } => Scalar::Int,
        Kind::Number { integral: false } => Scalar::Float,
        Kind::Null | Kind::Map | Kind::Array => Scalar::String,
    }
}

fn elements(v: &RawValue) -> Vec<&RawValue> {
    serde_json::from_str(v.get()).unwrap_or_default()
}

/// A top-level value: (element or scalar type, is array, nested fields). The nested fields
/// are `None` unless an object element was sampled (the difference decides whether mixed
/// elements fall back to `[String]`).
fn analyze_value(v: &RawValue) -> (Scalar, bool, Option<BTreeMap<String, FieldInfo>>) {
    let k = kind(v);
    if k != Kind::Array {
        return (scalar_of(k), false, None);
    }
    let elems = elements(v);
    let mut dominant: Option<Kind> = None;
    let mut mixed = false;
    let mut nested: Option<BTreeMap<String, FieldInfo>> = None;
    for e in elems.iter().take(MAX_SAMPLE_ELEMENTS) {
        let ek = kind(e);
        if ek == Kind::Null {
            continue;
        }
        match dominant {
            None => dominant = Some(ek),
            // Go compares reflect kinds: every number is a float64.
            Some(d) if !same_kind(d, ek) => mixed = true,
            Some(_) => {}
        }
        if ek == Kind::Map {
            if let Ok(obj) = serde_json::from_str::<RawObject>(e.get()) {
                let fields = analyze_nested(&obj);
                match &mut nested {
                    None => nested = Some(fields),
                    Some(have) => merge(have, fields),
                }
            }
        }
    }
    match dominant {
        None => (Scalar::String, true, None),
        Some(_) if mixed && nested.is_none() => (Scalar::String, true, None),
        Some(d) => {
            // Every element's number decides, not only the sampled first.
            let scalar = elems.iter().fold(scalar_of(d), |s, e| widen(s, kind(e)));
            (scalar, true, nested)
        }
    }
}

/// A number type seen again: `Int` becomes `Float` when this value does not fit `Int`.
fn widen(have: Scalar, seen: Kind) -> Scalar {
    match (have, seen) {
        (Scalar::Int, Kind::Number { integral: false }) => Scalar::Float,
        _ => have,
    }
}

/// [`widen`] with a scalar already derived from a value.
fn widen_scalar(have: &mut Scalar, seen: Scalar) {
    if *have == Scalar::Int && seen == Scalar::Float {
        *have = Scalar::Float;
    }
}

fn same_kind(a: Kind, b: Kind) -> bool {
    matches!((a, b), (Kind::Number { .. }, Kind::Number { .. })) || a == b
}

/// catalogd's `analyzeNestedObject`: each key typed from its own value (an array by its
/// first element).
fn analyze_nested(obj: &RawObject) -> BTreeMap<String, FieldInfo> {
    let mut out = BTreeMap::new();
    for (key, v) in &obj.0 {
        let name = field_name(key);
        let (scalar, is_array) = match kind(v) {
            Kind::Array => {
                let elems = elements(v);
                match elems.first() {
                    Some(first) => {
                        let s = elems
                            .iter()
                            .fold(scalar_of(kind(first)), |s, e| widen(s, kind(e)));
                        (s, true)
                    }
                    None => (Scalar::String, true),
                }
            }
            k => (scalar_of(k), false),
        };
        out.insert(
            name.clone(),
            FieldInfo {
                name,
                original_name: key.clone(),
                scalar,
                is_array,
                nested: BTreeMap::new(),
            },
        );
    }
    out
}

/// Adds the fields not seen yet, and widens the number fields seen before.
fn merge(have: &mut BTreeMap<String, FieldInfo>, new: BTreeMap<String, FieldInfo>) {
    for (k, v) in new {
        match have.get_mut(&k) {
            Some(seen) => widen_scalar(&mut seen.scalar, v.scalar),
            None => {
                have.insert(k, v);
            }
        }
    }
}

impl SchemaInfo {
    /// catalogd's `analyzeJSONObject`: a new field takes this object's type; a field seen
    /// before gains nested fields, and an `Int` becomes `Float` on a value `Int` cannot hold.
    pub fn add_object(&mut self, obj: &RawObject) {
        for (key, v) in &obj.0 {
            let name = field_name(key);
            let (scalar, is_array, nested) = analyze_value(v);
            match self.fields.get_mut(&name) {
                None => {
                    self.fields.insert(
                        name.clone(),
                        FieldInfo {
                            name,
                            original_name: key.clone(),
                            scalar,
                            is_array,
                            nested: nested.unwrap_or_default(),
                        },
                    );
                }
                Some(have) => {
                    widen_scalar(&mut have.scalar, scalar);
                    if let Some(n) = nested {
                        merge(&mut have.nested, n);
                    }
                }
            }
        }
    }
}

impl CatalogSchema {
    /// catalogd's `processMetaIntoSchema`: a blob of `schema` ("" is skipped); the schema is
    /// known from then on, and its object count grows only when the blob parses.
    pub fn add_blob(&mut self, schema: &str, blob: &[u8]) {
        if schema.is_empty() {
            return;
        }
        let info = self.schemas.entry(schema.to_string()).or_default();
        let Ok(text) = std::str::from_utf8(blob) else {
            return;
        };
        if let Ok(obj) = RawObject::parse(text) {
            info.total_objects += 1;
            info.add_object(&obj);
        }
    }

    /// Adds an object already parsed, of the schema it names (objects without a string
    /// `schema` are skipped).
    pub fn add_parsed(&mut self, obj: &RawObject) {
        if let Some(schema) = obj.string("schema").filter(|s| !s.is_empty()) {
            let info = self.schemas.entry(schema).or_default();
            info.total_objects += 1;
            info.add_object(obj);
        }
    }
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
