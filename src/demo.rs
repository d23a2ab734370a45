//! The embedded demo catalog: what `opreg serve` serves when given no SOURCE, so that a new
//! user sees real answers from grpcurl straight away. It is an ordinary FBC (YAML) compiled
//! into the binary and read by the same FBC reader as any other catalog.

use crate::diag::Diagnostics;
use crate::model::Catalog;

/// The demo catalog's FBC text.
pub const FBC_YAML: &str = include_str!("demo/catalog.yaml");

/// The demo catalog, read and validated like any source.
pub fn catalog() -> Result<Catalog, Diagnostics> {
    let mut diags = Vec::new();
    let decls = crate::catalog::fbc::decode_bytes(FBC_YAML.as_bytes(), "<demo>", &mut diags)
        .into_iter()
        .filter_map(|m| crate::catalog::fbc::to_decl(m, &mut diags))
        .collect();
    let cat = crate::catalog::build(decls, &mut diags);
    diags.extend(
        crate::validate::validate(&cat)
            .into_iter()
            .filter(|d| d.is_error()),
    );
    if diags.is_empty() {
        Ok(cat)
    } else {
        Err(Diagnostics(diags))
    }
}
