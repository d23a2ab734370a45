//! Warnings for metas whose schema opreg does not know but which look meant for OLM: a
//! misspelt OLM schema (`olm.pakage`) or a catalog template (`olm.template.basic`,
//! `olm.semver`) in the catalog tree. Such metas are kept as custom metas, as upstream keeps
//! them; since nothing reads them, the user is told. Custom metas of other namespaces pass
//! silently.

use crate::diag::{Diagnostic, Rule};
use crate::model::{schema, Catalog};

const KNOWN: [&str; 4] = [
    schema::PACKAGE,
    schema::CHANNEL,
    schema::BUNDLE,
    schema::DEPRECATIONS,
];

/// Schemas of upstream's catalog templates, which `opm alpha render-template` turns into FBC.
const TEMPLATES: [&str; 3] = ["olm.template.basic", "olm.semver", "olm.template.semver"];

/// One warning per meta with an unknown schema in the `olm.` namespace or near a known one.
pub fn unknown_schemas(cat: &Catalog, out: &mut Vec<Diagnostic>) {
    for m in &cat.others {
        let s = m.schema.as_str();
        let msg = if TEMPLATES.contains(&s) {
            format!(
                "{s:?} is a catalog template, not catalog content: it is ignored; render it to FBC first (opm alpha render-template)"
            )
        } else {
            let near = crate::text::nearest(s, KNOWN, 1);
            if near.is_empty() && !s.starts_with("olm.") {
                continue;
            }
            format!(
                "unknown schema {s:?}: kept as a custom meta, read by no OLM rule{}",
                crate::text::did_you_mean(&near)
            )
        };
        out.push(Diagnostic::warning(Rule::Schema, msg).at(&m.origin));
    }
}
