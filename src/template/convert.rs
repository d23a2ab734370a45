//! Templates written from an existing FBC (`opreg convert-template`), as `opm alpha
//! convert-template basic|substitutes` writes them: every object of the FBC becomes an entry,
//! in input order, re-encoded with sorted keys; a basic template's bundles keep only their
//! schema and image (the image is rendered again when the template is). A substitutes
//! template gets the same entries unchanged and an empty list of substitutions.
//!
//! JSON is Go's `json.MarshalIndent` with four spaces (which escapes `<`, `>` and `&`), then a
//! newline; YAML is that JSON through go-yaml (keys sorted), after `---`, then an empty line.

use super::{Error, Kind};
use crate::catalog::fbc::{self, goyaml, RenderFormat};
use crate::model::schema;
use serde_json::{Map, Value};

/// The template of `kind` for the FBC `bytes` (a JSON or YAML stream), as text in `format`.
/// `file` names the input in errors.
pub fn convert(
    kind: Kind,
    bytes: &[u8],
    file: &str,
    format: RenderFormat,
) -> Result<String, Error> {
    let mut diags = Vec::new();
    // An empty stream holds no object (opm's template then has no entries).
    let metas = if bytes.iter().all(u8::is_ascii_whitespace) {
        Vec::new()
    } else {
        fbc::decode_bytes(bytes, file, &mut diags)
    };
    if let Some(d) = diags.iter().find(|d| d.is_error()) {
        return Err(crate::text::one_line(&d.message).into());
    }
    let entries: Vec<Entry> = metas
        .into_iter()
        .map(|m| match (kind, m.schema.as_str()) {
            (Kind::Basic, schema::BUNDLE) => {
                let image = match super::field(&m.value, "image") {
                    Some(Value::String(s)) => s.clone(),
                    _ => String::new(),
                };
                Entry::BundleReference(image)
            }
            _ => Entry::Meta(m.value),
        })
        .collect();
    let (tpl_schema, substitutions) = match kind {
        Kind::Basic => (super::basic::SCHEMA, false),
        Kind::Substitutes => (super::substitutes::SCHEMA, true),
        Kind::Semver => return Err("a semver template cannot be written from an FBC".into()),
    };
    Ok(match format {
        RenderFormat::Json => {
            let mut out = String::new();
            write_json(&mut out, tpl_schema, &entries, substitutions);
            out.push('\n');
            crate::json::go_html_escape(out)
        }
        RenderFormat::Yaml => {
            let mut top = vec![
                ("schema".to_string(), goyaml::Node::Str(tpl_schema.into())),
                ("entries".to_string(), entries_node(&entries)),
            ];
            if substitutions {
                top.push(("substitutions".to_string(), goyaml::Node::Seq(Vec::new())));
            }
            let mut out = String::from("---\n");
            goyaml::write_document(&goyaml::Node::Map(top), &mut out);
            out.push('\n');
            out
        }
    })
}

/// One entry of the template.
enum Entry {
    /// A basic template's bundle: its schema and image only.
    BundleReference(String),
    /// Any other object, as read.
    Meta(Map<String, Value>),
}

fn write_json(out: &mut String, tpl_schema: &str, entries: &[Entry], substitutions: bool) {
    out.push_str("{\n    \"schema\": ");
    crate::json::write_go_string(out, tpl_schema);
    out.push_str(",\n    \"entries\": ");
    if entries.is_empty() {
        // Go's nil slice.
        out.push_str("null");
    } else {
        crate::json::write_indented_array(out, entries.iter(), 1, &mut |o, e, d| match e {
            Entry::BundleReference(image) => crate::json::write_indented_object(
                o,
                [("schema", schema::BUNDLE), ("image", image.as_str())]
                    .iter()
                    .map(|(k, v)| (*k, v)),
                d,
                &mut |o, v, _| crate::json::write_go_string(o, v),
            ),
            Entry::Meta(m) => crate::json::write_indented(o, &Value::Object(m.clone()), d),
        });
    }
    if substitutions {
        out.push_str(",\n    \"substitutions\": []");
    }
    out.push_str("\n}");
}

fn entries_node(entries: &[Entry]) -> goyaml::Node {
    if entries.is_empty() {
        return goyaml::Node::Null;
    }
    goyaml::Node::Seq(
        entries
            .iter()
            .map(|e| match e {
                Entry::BundleReference(image) => goyaml::Node::Map(vec![
                    ("schema".into(), goyaml::Node::Str(schema::BUNDLE.into())),
                    ("image".into(), goyaml::Node::Str(image.clone())),
                ]),
                Entry::Meta(m) => goyaml::Node::from_json(&Value::Object(m.clone())),
            })
            .collect(),
    )
}
