//! Canonical JSON text, the one encoding the catalog uses for property values and metas.
//!
//! Upstream re-encodes every meta through Go's `encoding/json` from a generic map, so values
//! reach clients with keys sorted at every level, compact separators, no HTML escaping, and
//! numbers printed the way Go prints a float64. This module reproduces that encoding, plus the
//! HTML-escaping variant Go uses for manifests (`csvJson`, `object`).

use serde_json::Value;
use std::fmt::Write;

/// Encodes `v` canonically: sorted keys, compact, Go float64 number formatting, no HTML escape.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// Parses JSON text and re-encodes it canonically.
pub fn canonicalize_str(s: &str) -> Result<String, serde_json::Error> {
    let v: Value = serde_json::from_str(s)?;
    Ok(canonical(&v))
}

/// Escapes `<`, `>`, `&`, U+2028 and U+2029 inside JSON text the way Go's encoder does by default.
/// Those characters can only occur inside string literals, so a textual pass is exact.
pub fn go_html_escape(json: &str) -> String {
    if !json
        .chars()
        .any(|c| matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}'))
    {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, &m[k]);
            }
            out.push('}');
        }
    }
}

pub(crate) fn write_string(out: &mut String, s: &str) {
    // serde_json escapes exactly what JSON requires and leaves HTML characters alone.
    out.push_str(&serde_json::to_string(s).expect("string serialization cannot fail"));
}

/// Go decodes every JSON number into a float64 and prints it back.
fn write_number(out: &mut String, n: &serde_json::Number) {
    const EXACT: u64 = 1 << 53;
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= EXACT {
            let _ = write!(out, "{i}");
            return;
        }
    } else if let Some(u) = n.as_u64() {
        if u <= EXACT {
            let _ = write!(out, "{u}");
            return;
        }
    }
    let f = n.as_f64().unwrap_or(0.0);
    write_go_float(out, f);
}

fn write_go_float(out: &mut String, f: f64) {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        let _ = write!(out, "{f}");
    } else {
        // Go: exponent form with at least one exponent digit and an explicit sign.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mant, exp)) if !exp.starts_with('-') => {
                let _ = write!(out, "{mant}e+{exp}");
            }
            _ => out.push_str(&s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_and_compacts() {
        let v = json!({"version": "v1beta2", "kind": "EtcdCluster", "group": "etcd.database.coreos.com"});
        assert_eq!(
            canonical(&v),
            r#"{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}"#
        );
    }

    #[test]
    fn numbers_print_like_go_float64() {
        assert_eq!(canonical(&json!(1000.0)), "1000");
        assert_eq!(canonical(&json!(4.1)), "4.1");
        assert_eq!(canonical(&json!(3)), "3");
        assert_eq!(canonical(&json!(1e21)), "1e+21");
        assert_eq!(canonical(&json!(1e-7)), "1e-7");
    }

    #[test]
    fn html_is_not_escaped_but_can_be() {
        let v = json!({"a": "<b>&"});
        assert_eq!(canonical(&v), r#"{"a":"<b>&"}"#);
        assert_eq!(
            go_html_escape(&canonical(&v)),
            r#"{"a":"\u003cb\u003e\u0026"}"#
        );
    }
}
