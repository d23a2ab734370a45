//! Upstream SQLite index databases (schema 0–13) → declarations.
use super::Decl;
use crate::diag::Diagnostic;
use std::path::Path;

pub fn read_index(path: &Path, _warnings: &mut Vec<Diagnostic>) -> anyhow::Result<Vec<Decl>> {
    anyhow::bail!(
        "{}: reading upstream SQLite indexes is not supported yet",
        path.display()
    )
}
