//! Objects as a query sees them, and their values as GraphQL answers them.
//!
//! An object is read from the served file and only the members the query selects are kept
//! (raw JSON, parsed when their field resolves), so `olmpackages { name }` never copies an icon.
//! A value is shaped as catalogd's resolvers and graphql-go's scalars shape it: an object or
//! array where a scalar is declared becomes its JSON text (keys sorted, as Go's `json.Marshal`
//! writes it), and a scalar is coerced to the declared one (`Int` truncates and is null out of
//! 32 bits, `Boolean` of `""`/`"false"` is false, `String` of a number prints it as Go's `%v`).
//! Where catalogd fails on a list of scalars (it hands graphql-go the JSON text), opreg answers
//! the list.

use super::discover::{RawObject, Scalar};
use super::naming::field_name;
use async_graphql::{Number, Value as GqlValue};
use serde_json::value::RawValue;
use serde_json::Value;

/// One object of a schema: its selected members, each under its GraphQL name.
pub struct Object {
    pub members: Vec<(String, Box<RawValue>)>,
}

impl Object {
    /// Parses `text`, keeping the members whose GraphQL name is in `wanted` (all of them when
    /// `wanted` is `None`). `None` when the text is not a JSON object.
    pub fn parse(text: &str, wanted: Option<&[String]>) -> Option<Object> {
        let raw = RawObject::parse(text).ok()?;
        let members = raw
            .0
            .into_iter()
            .filter_map(|(k, v)| {
                let name = field_name(&k);
                let keep = wanted.is_none_or(|w| w.contains(&name));
                keep.then(|| (name, v.to_owned()))
            })
            .collect();
        Some(Object { members })
    }

    /// The value of the field `name` (the first member that maps to it).
    pub fn get(&self, name: &str) -> Option<Value> {
        let (_, raw) = self.members.iter().find(|(n, _)| n == name)?;
        serde_json::from_str(raw.get()).ok()
    }
}

/// A member of a nested object (an element of an array of objects): the key spelled as the
/// field, else the first key that maps to it.
pub fn nested_get<'a>(source: &'a Value, name: &str) -> Option<&'a Value> {
    let m = source.as_object()?;
    m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| field_name(k) == name)
            .map(|(_, v)| v)
    })
}

/// Why a value does not fit its field.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("expected a list, found {found}")]
pub struct NotAList {
    pub found: &'static str,
}

/// A value as a field of type `scalar` (or `[scalar]`) answers it.
pub fn to_graphql(v: Option<&Value>, scalar: Scalar, list: bool) -> Result<GqlValue, NotAList> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(GqlValue::Null);
    };
    if !list {
        return Ok(coerce(v, scalar));
    }
    match v {
        Value::Array(items) => Ok(GqlValue::List(
            items.iter().map(|e| coerce(e, scalar)).collect(),
        )),
        Value::Object(_) => Err(NotAList { found: "an object" }),
        Value::String(_) => Err(NotAList { found: "a string" }),
        Value::Number(_) => Err(NotAList { found: "a number" }),
        Value::Bool(_) => Err(NotAList { found: "a boolean" }),
        Value::Null => Ok(GqlValue::Null),
    }
}

/// catalogd's `marshalComplexValue` then graphql-go's serialization of `scalar`.
fn coerce(v: &Value, scalar: Scalar) -> GqlValue {
    let text;
    let v = match v {
        Value::Null => return GqlValue::Null,
        Value::Object(_) | Value::Array(_) => {
            text = Value::String(crate::json::go_html_escape(crate::json::canonical(v)));
            &text
        }
        v => v,
    };
    match scalar {
        Scalar::String => GqlValue::String(match v {
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => go_v(n.as_f64().unwrap_or(0.0)),
            _ => String::new(),
        }),
        Scalar::Int => {
            let f = match v {
                Value::Bool(b) => f64::from(u8::from(*b)),
                Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
                Value::String(s) => s.trim().parse().unwrap_or(f64::NAN),
                _ => f64::NAN,
            };
            if f.is_nan() || f < f64::from(i32::MIN) || f > f64::from(i32::MAX) {
                GqlValue::Null
            } else {
                GqlValue::Number(Number::from(f.trunc() as i32))
            }
        }
        Scalar::Float => {
            let f = match v {
                Value::Bool(b) => Some(f64::from(u8::from(*b))),
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            match f {
                Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => {
                    GqlValue::Number(Number::from(f as i64))
                }
                Some(f) => Number::from_f64(f).map_or(GqlValue::Null, GqlValue::Number),
                None => GqlValue::Null,
            }
        }
        Scalar::Boolean => GqlValue::Boolean(match v {
            Value::Bool(b) => *b,
            Value::String(s) => !(s.is_empty() || s == "false"),
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            _ => false,
        }),
    }
}

/// A float64 as Go's `fmt` prints it with `%v`: the shortest digits, in exponent form
/// (`1e+06`, `1e-05`) when the exponent is below -4 or at least 6 (`%g`'s rule for the
/// shortest precision).
pub fn go_v(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    crate::text::go_shortest(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// catalogd's TestMarshalComplexValue, through a `String` field.
    #[test]
    fn complex_values_become_json_text() {
        let s = |v: Value| to_graphql(Some(&v), Scalar::String, false).unwrap();
        assert_eq!(to_graphql(None, Scalar::String, false), Ok(GqlValue::Null));
        assert_eq!(s(json!("hello")), GqlValue::from("hello"));
        assert_eq!(
            to_graphql(Some(&json!(42)), Scalar::Int, false),
            Ok(GqlValue::from(42))
        );
        assert_eq!(
            s(json!({"key": "value"})),
            GqlValue::from(r#"{"key":"value"}"#)
        );
        assert_eq!(s(json!(["a", "b"])), GqlValue::from(r#"["a","b"]"#));
        // Go's json.Marshal: sorted keys, HTML escaped.
        assert_eq!(
            s(json!({"b": "<x>", "a": 1.0})),
            GqlValue::from(r#"{"a":1,"b":"\u003cx\u003e"}"#)
        );
    }

    #[test]
    fn scalars_coerce_as_graphql_go() {
        let c = |v: Value, s| to_graphql(Some(&v), s, false).unwrap();
        assert_eq!(c(json!(3.9), Scalar::Int), GqlValue::from(3));
        assert_eq!(c(json!(-3.9), Scalar::Int), GqlValue::from(-3));
        assert_eq!(c(json!(3_000_000_000u64), Scalar::Int), GqlValue::Null);
        assert_eq!(c(json!("12"), Scalar::Int), GqlValue::from(12));
        assert_eq!(c(json!(true), Scalar::Int), GqlValue::from(1));
        assert_eq!(c(json!("x"), Scalar::Int), GqlValue::Null);
        assert_eq!(c(json!(""), Scalar::Boolean), GqlValue::from(false));
        assert_eq!(c(json!("no"), Scalar::Boolean), GqlValue::from(true));
        assert_eq!(c(json!(0), Scalar::Boolean), GqlValue::from(false));
        assert_eq!(c(json!(2.5), Scalar::Float), GqlValue::from(2.5));
        assert_eq!(c(json!(42), Scalar::String), GqlValue::from("42"));
        assert_eq!(c(json!(false), Scalar::String), GqlValue::from("false"));
        assert_eq!(go_v(1e6), "1e+06");
        assert_eq!(go_v(123456.0), "123456");
        assert_eq!(go_v(0.00001), "1e-05");
        assert_eq!(go_v(2.75), "2.75");
    }

    #[test]
    fn lists_answer_their_elements() {
        let l = |v: Value, s| to_graphql(Some(&v), s, true);
        assert_eq!(
            l(json!([1, 2.5, "3"]), Scalar::Int),
            Ok(GqlValue::List(vec![
                GqlValue::from(1),
                GqlValue::from(2),
                GqlValue::from(3)
            ]))
        );
        assert_eq!(
            l(json!("x"), Scalar::String),
            Err(NotAList { found: "a string" })
        );
    }

    #[test]
    fn objects_keep_only_what_is_selected() {
        let text = r#"{"schema":"olm.package","name":"p","icon":{"base64data":"AAAA"},"default_channel":"s"}"#;
        let want = vec!["name".to_string(), "defaultChannel".to_string()];
        let o = Object::parse(text, Some(&want)).unwrap();
        assert_eq!(o.members.len(), 2);
        assert_eq!(o.get("defaultChannel"), Some(json!("s")));
        assert_eq!(o.get("icon"), None);
        assert!(Object::parse("[1]", None).is_none());
        let n = json!({"related-images": 1, "relatedImages": 2});
        assert_eq!(nested_get(&n, "relatedImages"), Some(&json!(2)));
        assert_eq!(nested_get(&json!({"a-b": 1}), "aB"), Some(&json!(1)));
    }
}
