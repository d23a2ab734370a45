//! Catalog templates (`opreg render-template`): files an author writes instead of a whole
//! catalog, expanded into FBC the way `opm alpha render-template` does.
//!
//! | file | owns |
//! |---|---|
//! | [`basic`] | `olm.template.basic`: FBC entries whose `olm.bundle` entries name only an image |
//! | [`semver`] | `olm.semver`: Candidate/Fast/Stable bundle lists turned into major/minor channels, their replaces/skips and the default channel |
//! | [`substitutes`] | `olm.template.substitutes`: a valid FBC in which bundles take the place of others in the update graph |
//! | [`convert`] | the other way: a basic or substitutes template written from an FBC |
//!
//! Without a kind, the kind is the one the file's `schema` names ([`detect`]).
//!
//! A template never reads a bundle itself: the caller hands it a [`BundleRenderer`] that turns
//! a bundle reference (an image, or a local bundle directory) into the `olm.bundle`s that
//! `opreg render REFERENCE` writes. The result is a [`crate::model::Catalog`], written by
//! [`crate::catalog::fbc::render`] like any other. Errors are one line (without the file name,
//! which the caller adds).

pub mod basic;
pub mod convert;
pub mod semver;
pub mod substitutes;

use crate::model::{Bundle, Catalog};
use serde_json::Value;

/// A template that cannot be read or rendered (or a bundle its renderer could not give): the
/// message names the file or reference and says why, on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl From<String> for Error {
    fn from(why: String) -> Self {
        Error(why)
    }
}

impl From<&str> for Error {
    fn from(why: &str) -> Self {
        Error(why.to_string())
    }
}

/// Turns one bundle reference into the bundles it holds; `Err` is a one-line reason.
pub type BundleRenderer<'a> = dyn FnMut(&str) -> Result<Vec<Bundle>, Error> + 'a;

/// The template kinds `render-template` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `schema: olm.template.basic`.
    Basic,
    /// `schema: olm.semver`.
    Semver,
    /// `schema: olm.template.substitutes`.
    Substitutes,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Basic, Kind::Semver, Kind::Substitutes];

    /// The kind's name on the command line (opm's template type).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Basic => "basic",
            Kind::Semver => "semver",
            Kind::Substitutes => "substitutes",
        }
    }

    /// The kind named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The schema a template of this kind declares.
    pub fn schema(self) -> &'static str {
        match self {
            Kind::Basic => basic::SCHEMA,
            Kind::Semver => semver::SCHEMA,
            Kind::Substitutes => substitutes::SCHEMA,
        }
    }
}

/// The kind of a template, from the `schema` of its first document, as opm detects it when no
/// kind is given.
pub fn detect(text: &str) -> Result<Kind, Error> {
    let doc = first_document(text)?;
    let schema = match doc.as_object().and_then(|m| field(m, "schema")) {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err("unmarshalling template schema: schema is not a string".into()),
    };
    if schema.is_empty() {
        return Err("template input missing required 'schema' field".into());
    }
    Kind::ALL
        .into_iter()
        .find(|k| k.schema() == schema)
        .ok_or_else(|| Error::from(format!("unknown template schema: {schema}")))
}

/// Renders a template of `kind` from its text (YAML or JSON; the first document is the
/// template). `file` names the template in the origins of what it declares.
pub fn render(
    kind: Kind,
    text: &str,
    file: &str,
    renderer: &mut BundleRenderer<'_>,
) -> Result<Catalog, Error> {
    let doc = first_document(text)?;
    match kind {
        Kind::Basic => basic::render(&doc, file, renderer),
        Kind::Semver => semver::render(&doc, renderer),
        Kind::Substitutes => substitutes::render(&doc, file, renderer),
    }
}

/// The first YAML (or JSON) document of `text`, as JSON.
fn first_document(text: &str) -> Result<Value, Error> {
    use serde::Deserialize;
    crate::yaml::check_flow_depth(text)
        .map_err(|e| Error::from(format!("decoding template: {e}")))?;
    let Some(de) = yaml_serde::Deserializer::from_str(text).next() else {
        return Err("decoding template: the file holds no document".into());
    };
    let v = Value::deserialize(de)
        .map_err(|e| format!("decoding template: {}", crate::text::one_line(e)))?;
    match v {
        Value::Object(_) => Ok(v),
        Value::Null => Err("decoding template: the template is empty".into()),
        _ => Err("decoding template: the template is not a mapping".into()),
    }
}

/// The value of `key` in `m`, matched as Go's `encoding/json` matches struct fields
/// (case-insensitively; the last match wins).
fn field<'a>(m: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    crate::catalog::fbc::decode::get_ci(m, key)
}

/// Decodes one template entry that is FBC as written, with the same decoder as a catalog file.
fn decode_entry(
    entry: &Value,
    file: &str,
    decls: &mut Vec<crate::catalog::Decl>,
    diags: &mut Vec<crate::diag::Diagnostic>,
) -> Result<(), Error> {
    use crate::catalog::fbc;
    let text = serde_json::to_string(entry).map_err(|e| Error::from(e.to_string()))?;
    for raw in fbc::decode_bytes(text.as_bytes(), file, diags) {
        decls.extend(fbc::to_decl(raw, diags));
    }
    Ok(())
}

/// The catalog of a template's declarations, or its first error on one line.
fn build_catalog(
    decls: Vec<crate::catalog::Decl>,
    mut diags: Vec<crate::diag::Diagnostic>,
) -> Result<Catalog, Error> {
    let cat = crate::catalog::build(decls, &mut diags);
    match diags.iter().find(|d| d.is_error()) {
        Some(d) => Err(crate::text::one_line(&d.message).into()),
        None => Ok(cat),
    }
}
