//! SOURCE arguments: telling their formats apart and reading any mix of them into one catalog.
//!
//! This sits one layer above the readers: FBC, package manifests, bundle directories and
//! legacy indexes are read by [`crate::catalog`]; opreg's own databases by [`crate::store`].
//! Neither of those knows the other.

use crate::catalog::{self, fbc, legacy, manifests, BundleSink, Decl};
use crate::diag::{Diagnostic, Diagnostics, Rule};
use crate::model::*;
use std::path::{Path, PathBuf};

/// What kind of input a SOURCE is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A database written by `opreg ingest`.
    OpregDb,
    /// An upstream operator-registry SQLite index.
    LegacyIndex,
    /// A tree holding package manifests and/or bundle directories.
    Manifests,
    /// A file-based catalog (directory or single file).
    Fbc,
}

/// Detects the format of a SOURCE path.
pub fn detect(path: &Path) -> std::io::Result<SourceKind> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        let mut head = [0u8; 16];
        let n = {
            use std::io::Read;
            let mut f = std::fs::File::open(path)?;
            f.read(&mut head)?
        };
        if n == 16 && head == *crate::sqlite::MAGIC {
            return Ok(if crate::store::is_opreg_db(path) {
                SourceKind::OpregDb
            } else {
                SourceKind::LegacyIndex
            });
        }
        // A file named like a database is one: reading a damaged copy as FBC would only
        // report YAML or UTF-8 errors about its bytes.
        if has_database_name(path) {
            let what = if meta.len() == 0 {
                "is empty (0 bytes)".to_string()
            } else {
                format!("has no SQLite header ({} bytes)", meta.len())
            };
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} {what}: it is not a catalog database (a .db, .sqlite or .sqlite3 SOURCE must be an opreg database or an operator-registry index)",
                    path.display()
                ),
            ));
        }
        return Ok(SourceKind::Fbc);
    }
    if manifests::looks_like_manifests(path) {
        Ok(SourceKind::Manifests)
    } else {
        Ok(SourceKind::Fbc)
    }
}

fn has_database_name(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["db", "sqlite", "sqlite3"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

/// Reads SOURCEs (any mix of formats) into one catalog, reporting every problem found.
/// `warnings` receives non-fatal notes (for example skipped files in manifest trees).
pub fn load_sources(
    sources: &[PathBuf],
    warnings: &mut Vec<Diagnostic>,
) -> Result<Catalog, Diagnostics> {
    let (catalog, errors) = load_sources_partial(sources, warnings);
    if errors.is_empty() {
        Ok(catalog)
    } else {
        Err(Diagnostics(errors))
    }
}

/// Like [`load_sources`], but always returns what could be assembled, next to the errors, so
/// that validation can still report every other problem in the same run.
pub fn load_sources_partial(
    sources: &[PathBuf],
    warnings: &mut Vec<Diagnostic>,
) -> (Catalog, Vec<Diagnostic>) {
    load_sources_with(sources, warnings, &mut |b, _| b)
}

/// [`load_sources_partial`], handing every bundle to `sink` as it is read. File-based catalogs
/// stream: each bundle reaches the sink before the next document is parsed.
pub fn load_sources_with(
    sources: &[PathBuf],
    warnings: &mut Vec<Diagnostic>,
    sink: &mut BundleSink<'_>,
) -> (Catalog, Vec<Diagnostic>) {
    load_sources_excluding(sources, &[], warnings, sink)
}

/// [`load_sources_with`], never reading the files named in `exclude` (by any path).
pub fn load_sources_excluding(
    sources: &[PathBuf],
    exclude: &[PathBuf],
    warnings: &mut Vec<Diagnostic>,
    sink: &mut BundleSink<'_>,
) -> (Catalog, Vec<Diagnostic>) {
    let exclude = catalog::Exclude::new(exclude);
    let mut diags = Vec::new();
    let mut decls = Vec::new();
    for src in sources {
        let first_new = decls.len();
        if exclude.contains_path(src) {
            continue;
        }
        let kind = match detect(src) {
            Ok(k) => k,
            Err(e) => {
                diags.push(
                    Diagnostic::error(Rule::Parse, format!("cannot read source: {e}"))
                        .at(&Origin::file(src.display().to_string())),
                );
                continue;
            }
        };
        match kind {
            SourceKind::Fbc => {
                decls.extend(fbc::read_path_excluding(
                    src, &exclude, &mut diags, &mut *sink,
                ));
                continue;
            }
            SourceKind::Manifests => decls.extend(manifests::read_tree(src, &mut diags, warnings)),
            SourceKind::OpregDb => {
                match crate::store::Store::open(src).and_then(|s| s.load_catalog()) {
                    Ok(cat) => decls.extend(catalog::decompose(cat)),
                    Err(e) => diags.push(
                        Diagnostic::error(Rule::Parse, format!("{e:#}"))
                            .at(&Origin::file(src.display().to_string())),
                    ),
                }
            }
            SourceKind::LegacyIndex => match legacy::read_index(src, warnings) {
                Ok(d) => decls.extend(d),
                Err(e) => diags.push(
                    Diagnostic::error(Rule::Parse, format!("{e:#}"))
                        .at(&Origin::file(src.display().to_string())),
                ),
            },
        }
        for d in &mut decls[first_new..] {
            if let Decl::Bundle(b) = d {
                *b = sink(std::mem::take(b), &mut diags);
            }
        }
    }
    let catalog = catalog::build(decls, &mut diags);
    diags.retain(|d| {
        if d.is_error() {
            true
        } else {
            warnings.push(d.clone());
            false
        }
    });
    (catalog, diags)
}

/// A digest of SOURCEs' contents: paths, sizes and bytes of every file (but those `exclude`
/// names), plus this opreg's version and schema, so a cache built by another opreg or from
/// other content never matches. `cancel` stops it early (the result is then an error).
pub fn digest(
    sources: &[PathBuf],
    exclude: &[PathBuf],
    cancel: &std::sync::atomic::AtomicBool,
) -> std::io::Result<String> {
    use std::sync::atomic::Ordering;
    let exclude = catalog::Exclude::new(exclude);
    let mut h = crate::digest::Hasher::sha256();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(&crate::store::schema_version().to_le_bytes());
    for src in sources {
        let mut files: Vec<PathBuf> = walkdir::WalkDir::new(src)
            .follow_links(true)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter(|e| !e.metadata().is_ok_and(|m| exclude.contains(&m)))
            .map(|e| e.into_path())
            .collect();
        files.sort();
        for f in files {
            if cancel.load(Ordering::Relaxed) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "interrupted",
                ));
            }
            let rel = f.strip_prefix(src).unwrap_or(&f);
            h.update(rel.to_string_lossy().as_bytes());
            h.update(&[0]);
            // Streamed: a catalog file is never held in memory whole.
            let mut file = std::fs::File::open(&f)?;
            h.update(&file.metadata()?.len().to_le_bytes());
            std::io::copy(&mut file, &mut h)?;
        }
    }
    Ok(h.digest())
}
