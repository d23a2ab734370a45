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

/// Encodes a JSON object canonically (as [`canonical`] does for `Value::Object`).
pub fn canonical_object(m: &serde_json::Map<String, Value>) -> String {
    let mut out = String::new();
    write_object(&mut out, m);
    out
}

/// A decoded object as Go's encoder writes it with `SetEscapeHTML(false)` (catalogd's stored
/// metas): canonical, and U+2028 and U+2029 escaped, which Go always escapes. They can only
/// occur inside string literals, so a textual pass is exact.
pub fn go_object(m: &serde_json::Map<String, Value>) -> String {
    let out = canonical_object(m);
    if out.contains(['\u{2028}', '\u{2029}']) {
        out.replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029")
    } else {
        out
    }
}

/// Escapes `<`, `>`, `&`, U+2028 and U+2029 inside JSON text the way Go's encoder does by default.
/// Those characters can only occur inside string literals, so a textual pass is exact. Takes
/// the text by value and hands it back unchanged, without a copy, when there is nothing to
/// escape (3,728 of the community catalog's 6,467 CSV templates).
pub fn go_html_escape(json: String) -> String {
    let b = json.as_bytes();
    let Some(mut i) = next_html_special(b, 0) else {
        return json;
    };
    let mut out = String::with_capacity(json.len() + 16);
    let mut start = 0;
    loop {
        out.push_str(&json[start..i]);
        let (esc, len) = match b[i] {
            b'<' => ("\\u003c", 1),
            b'>' => ("\\u003e", 1),
            b'&' => ("\\u0026", 1),
            _ if b[i + 2] == 0xA8 => ("\\u2028", 3),
            _ => ("\\u2029", 3),
        };
        out.push_str(esc);
        start = i + len;
        match next_html_special(b, start) {
            Some(n) => i = n,
            None => break,
        }
    }
    out.push_str(&json[start..]);
    out
}

/// The offset of the first `<`, `>`, `&`, U+2028 or U+2029 (E2 80 A8/A9 in UTF-8) in `b` at or
/// after `from`.
fn next_html_special(b: &[u8], from: usize) -> Option<usize> {
    let rest = &b[from..];
    let html = memchr::memchr3(b'<', b'>', b'&', rest);
    let upto = html.unwrap_or(rest.len());
    let mut k = 0;
    while let Some(j) = memchr::memchr(0xE2, &rest[k..upto]) {
        let at = k + j;
        if rest.get(at + 1) == Some(&0x80) && matches!(rest.get(at + 2), Some(0xA8 | 0xA9)) {
            return Some(from + at);
        }
        k = at + 1;
    }
    html.map(|h| from + h)
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
        Value::Object(m) => write_object(out, m),
    }
}

fn write_object(out: &mut String, m: &serde_json::Map<String, Value>) {
    // serde_json's map is a BTreeMap (no `preserve_order`): keys iterate sorted.
    out.push('{');
    for (i, (k, x)) in m.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        write_value(out, x);
    }
    out.push('}');
}

/// Appends `s` as a JSON string literal, escaping exactly what serde_json (and Go, without HTML
/// escaping) escapes: `"`, `\` and control characters.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(i) = next_escape(bytes, start) {
        out.push_str(&s[start..i]);
        let b = bytes[i];
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            _ => "",
        };
        if esc.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The offset of the first byte at or after `from` that a JSON string must escape: `"`, `\`
/// or a control character. Most strings need no escape at all, so 32 bytes are tested at a
/// time, in a form the compiler turns into vector compares.
fn next_escape(b: &[u8], from: usize) -> Option<usize> {
    let escaped = |c: u8| c < 0x20 || c == b'"' || c == b'\\';
    let mut i = from;
    for chunk in b[from..].chunks_exact(32) {
        if chunk.iter().fold(false, |hit, &c| hit | escaped(c)) {
            break;
        }
        i += 32;
    }
    b[i..].iter().position(|&c| escaped(c)).map(|p| i + p)
}

/// Integers that fit in 64 bits keep their value (where Go's decoder rounds those above 2^53
/// through a float64); other numbers print the way Go prints a float64.
fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else {
        write_go_float(out, n.as_f64().unwrap_or(0.0));
    }
}

/// Appends `s` as Go's `encoding/json` writes a string without HTML escaping: as
/// [`write_string`], plus U+2028 and U+2029, which Go always escapes.
pub fn write_go_string(out: &mut String, s: &str) {
    if !s.contains(['\u{2028}', '\u{2029}']) {
        write_string(out, s);
        return;
    }
    let mut tmp = String::new();
    write_string(&mut tmp, s);
    out.push_str(
        &tmp.replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029"),
    );
}

const INDENT: &str = "    ";

fn newline_indent(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str(INDENT);
    }
}

/// Appends an object as Go's `json.Encoder` with `SetIndent("", "    ")` writes it, `depth`
/// levels in; `value` writes each member's value one level deeper.
pub fn write_indented_object<'a, T: 'a>(
    out: &mut String,
    members: impl ExactSizeIterator<Item = (&'a str, &'a T)>,
    depth: usize,
    value: &mut dyn FnMut(&mut String, &T, usize),
) {
    if members.len() == 0 {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline_indent(out, depth + 1);
        write_go_string(out, k);
        out.push_str(": ");
        value(out, v, depth + 1);
    }
    newline_indent(out, depth);
    out.push('}');
}

/// Appends an array as [`write_indented_object`] does an object.
pub fn write_indented_array<'a, T: 'a>(
    out: &mut String,
    items: impl ExactSizeIterator<Item = &'a T>,
    depth: usize,
    value: &mut dyn FnMut(&mut String, &T, usize),
) {
    if items.len() == 0 {
        out.push_str("[]");
        return;
    }
    out.push('[');
    for (i, v) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline_indent(out, depth + 1);
        value(out, v, depth + 1);
    }
    newline_indent(out, depth);
    out.push(']');
}

/// Appends `v` as Go's indented encoder writes a generic value (map keys sorted), `depth`
/// levels in.
pub fn write_indented(out: &mut String, v: &Value, depth: usize) {
    match v {
        Value::Object(m) => write_indented_object(
            out,
            m.iter().map(|(k, v)| (k.as_str(), v)),
            depth,
            &mut |o, v, d| write_indented(o, v, d),
        ),
        Value::Array(a) => {
            write_indented_array(out, a.iter(), depth, &mut |o, v, d| write_indented(o, v, d))
        }
        Value::String(s) => write_go_string(out, s),
        other => write_value(out, other),
    }
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
        // Integers that fit in 64 bits keep their value.
        assert_eq!(canonical(&json!(9007199254740993u64)), "9007199254740993");
        assert_eq!(canonical(&json!(-9007199254740993i64)), "-9007199254740993");
    }

    #[test]
    fn strings_escape_like_serde_json() {
        let all: String = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain("é\u{2028}\u{7f}😀".chars())
            .collect();
        let long = format!(
            "{all}{}\"{}é\u{1f}{}",
            "x".repeat(13),
            "ab".repeat(9),
            "y".repeat(7)
        );
        for s in [
            all.as_str(),
            long.as_str(),
            "",
            "plain",
            "a\"b\\c\n",
            "\u{1}\u{1f}x",
            "exactly8",
            "sixteen bytes!!\\",
        ] {
            let mut out = String::new();
            write_string(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap(), "{s:?}");
        }
        // An escape at every offset of the eight-byte words, and none.
        for k in 0..20 {
            for c in ["\"", "\\", "\u{0}", "\u{1f}", "\u{7f}", "é", "x"] {
                let s = format!("{}{c}{}", "a".repeat(k), "b".repeat(k % 9));
                let mut out = String::new();
                write_string(&mut out, &s);
                assert_eq!(out, serde_json::to_string(&s).unwrap(), "{s:?}");
            }
        }
    }

    #[test]
    fn text_with_nothing_to_escape_is_handed_back_without_a_copy() {
        let text = canonical(&json!({"a": "b c", "d": [1, 2]}));
        let (ptr, len) = (text.as_ptr(), text.len());
        let back = go_html_escape(text);
        assert_eq!((back.as_ptr(), back.len()), (ptr, len));
    }

    #[test]
    fn html_is_not_escaped_but_can_be() {
        let v = json!({"a": "<b>&"});
        assert_eq!(canonical(&v), r#"{"a":"<b>&"}"#);
        assert_eq!(
            go_html_escape(canonical(&v)),
            r#"{"a":"\u003cb\u003e\u0026"}"#
        );
        assert_eq!(
            go_html_escape("\"x\u{2028}y\u{2029}z\u{2027}é<\"".to_string()),
            r#""x\u2028y\u2029z\u{2027}é\u003c""#.replace("\\u{2027}", "\u{2027}")
        );
    }
}
