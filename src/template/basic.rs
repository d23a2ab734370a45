//! The basic template (`schema: olm.template.basic`): a list of FBC entries (`entries`) in
//! which every `olm.bundle` names only an image. Each such bundle is replaced by what its
//! reference renders to; every other entry is kept as written.

use super::{field, BundleRenderer, Error};
use crate::catalog::Decl;
use crate::model::{schema, Catalog};
use crate::text::go_quote;
use serde_json::Value;

/// The schema a basic template declares.
pub const SCHEMA: &str = "olm.template.basic";

/// Renders a basic template document.
pub fn render(
    doc: &Value,
    file: &str,
    renderer: &mut BundleRenderer<'_>,
) -> Result<Catalog, Error> {
    let m = doc.as_object().ok_or("the template is not a mapping")?;
    let declared = field(m, "schema").and_then(Value::as_str).unwrap_or("");
    if declared != SCHEMA {
        return Err(Error::from(format!(
            "template has unknown schema ({}), should be {}",
            go_quote(declared),
            go_quote(SCHEMA)
        )));
    }
    let entries = match field(m, "entries") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => &a[..],
        Some(_) => return Err("unmarshalling template: entries is not a list".into()),
    };
    let mut decls = Vec::new();
    let mut diags = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Some(o) = e.as_object() else {
            return Err(Error::from(format!("entries[{i}] is not a mapping")));
        };
        let entry_schema = field(o, "schema").and_then(Value::as_str).unwrap_or("");
        if entry_schema == schema::BUNDLE {
            let image = bundle_reference(o)
                .ok_or_else(|| Error::from(format!("entries[{i}]: unexpected fields present in basic template bundle (a template bundle has a schema and an image, and no package, properties or relatedImages)")))?;
            let bundles = renderer(image)?;
            decls.extend(bundles.into_iter().map(Decl::Bundle));
            continue;
        }
        // Any other entry is FBC as written: typed by the same decoder as a catalog file.
        super::decode_entry(e, file, &mut decls, &mut diags)?;
    }
    super::build_catalog(decls, diags)
}

/// The image of a template bundle: one with a schema and an image but no package, properties
/// or related images (upstream's rule). `None` when the entry is not one.
fn bundle_reference(o: &serde_json::Map<String, Value>) -> Option<&str> {
    let empty = |k: &str| match field(o, k) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    let image = field(o, "image").and_then(Value::as_str).unwrap_or("");
    (!image.is_empty() && empty("package") && empty("properties") && empty("relatedImages"))
        .then_some(image)
}
