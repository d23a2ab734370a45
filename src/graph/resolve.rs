//! Upgrade resolution (classic, OLM v1, semver).

use crate::diag::Diagnostic;
use crate::model::Catalog;

/// Upgrade-graph lint (filled in with resolution).
pub fn lint(_cat: &Catalog) -> Vec<Diagnostic> {
    Vec::new()
}
