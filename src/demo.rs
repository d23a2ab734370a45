//! The embedded demo catalog: what `opreg serve` serves when given no SOURCE, so that a new
//! user sees real answers from grpcurl straight away. It is an ordinary FBC (YAML) compiled
//! into the binary and read by the same FBC reader as any other catalog.

use crate::diag::Diagnostics;
use crate::validate::ValidCatalog;

/// The demo catalog's FBC text.
pub const FBC_YAML: &str = include_str!("demo/catalog.yaml");

/// The demo catalog, read and validated like any source.
pub fn catalog() -> Result<ValidCatalog, Diagnostics> {
    let mut diags = Vec::new();
    let decls = crate::catalog::fbc::decode_bytes(FBC_YAML.as_bytes(), "<demo>", &mut diags)
        .into_iter()
        .filter_map(|m| crate::catalog::fbc::to_decl(m, &mut diags))
        .collect();
    let cat = crate::catalog::build(decls, &mut diags);
    crate::validate::check(cat, &mut diags, &mut Vec::new()).map_err(|_| Diagnostics(diags))
}

/// The demo's source digest (what a built cache of it records): this opreg's version and the
/// embedded catalog, so a cache built by another version is rebuilt.
pub fn digest() -> String {
    let mut h = crate::digest::Hasher::sha256();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(FBC_YAML.as_bytes());
    h.digest()
}
