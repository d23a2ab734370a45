//! Input formats → one catalog model.
//!
//! Each format reader turns its files into [`Decl`]s (declarations in FBC terms: a package, a
//! channel, a bundle, a deprecations list, or a custom meta). [`build`] then assembles the decls
//! of every source into one [`Catalog`], reporting structural problems (duplicates, references
//! to unknown packages). Graph rules are checked afterwards by [`crate::validate`].
//!
//! | module | reads |
//! |---|---|
//! | [`fbc`] | file-based catalogs: JSON object streams and YAML document streams |
//! | [`manifests`] | package-manifest directories and bundle directories (CSV + CRDs) |
//! | [`legacy`] | upstream SQLite index databases (schema 0–13) |
//! | [`crate::store`] | opreg's own built databases |

pub mod fbc;
pub mod legacy;
pub mod manifests;

use crate::diag::{Diagnostic, Diagnostics, Rule};
use crate::model::*;
use std::path::{Path, PathBuf};

/// One declaration read from a source, before assembly.
#[derive(Debug, Clone)]
pub enum Decl {
    /// A package, with no channels or bundles yet.
    Package(Package),
    /// A channel of the named package.
    Channel(String, Channel),
    Bundle(Bundle),
    /// The deprecations of the named package.
    Deprecations(String, Deprecations),
    Other(Meta),
}

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

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

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
        if n == 16 && head == SQLITE_MAGIC {
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

/// Receives each bundle as soon as it is read and returns what the catalog keeps of it (for
/// example a [`Bundle::lightened`] copy, after writing the whole bundle somewhere).
/// Diagnostics it pushes are reported with the load's.
pub type BundleSink<'a> = dyn FnMut(Bundle, &mut Vec<Diagnostic>) -> Bundle + 'a;

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
    let mut diags = Vec::new();
    let mut decls = Vec::new();
    for src in sources {
        let first_new = decls.len();
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
                decls.extend(fbc::read_path_with(src, &mut diags, &mut *sink));
                continue;
            }
            SourceKind::Manifests => decls.extend(manifests::read_tree(src, &mut diags, warnings)),
            SourceKind::OpregDb => {
                match crate::store::Store::open(src).and_then(|s| s.load_catalog()) {
                    Ok(cat) => decls.extend(decompose(cat)),
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
    let catalog = build(decls, &mut diags);
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

/// Splits a catalog back into declarations (used to merge a built DB with other sources).
pub fn decompose(cat: Catalog) -> Vec<Decl> {
    let mut out = Vec::new();
    for (_, mut p) in cat.packages {
        let channels = std::mem::take(&mut p.channels);
        let bundles = std::mem::take(&mut p.bundles);
        let deps = p.deprecations.take();
        let name = p.name.clone();
        out.push(Decl::Package(p));
        out.extend(
            channels
                .into_values()
                .map(|c| Decl::Channel(name.clone(), c)),
        );
        out.extend(bundles.into_values().map(Decl::Bundle));
        if let Some(d) = deps {
            out.push(Decl::Deprecations(name.clone(), d));
        }
    }
    out.extend(cat.others.into_iter().map(Decl::Other));
    out
}

/// Assembles declarations into a catalog. Structural errors (what the model cannot represent:
/// duplicates, unknown packages, missing names) are reported here; everything else is left to
/// validation.
pub fn build(decls: Vec<Decl>, diags: &mut Vec<Diagnostic>) -> Catalog {
    let mut cat = Catalog::default();
    let mut channels = Vec::new();
    let mut bundles = Vec::new();
    let mut deprecations = Vec::new();
    for d in decls {
        match d {
            Decl::Package(p) => {
                if p.name.is_empty() {
                    diags.push(
                        Diagnostic::error(Rule::Schema, "config contains package with no name")
                            .at(&p.origin),
                    );
                } else if let Some(prev) = cat.packages.get(&p.name) {
                    diags.push(
                        Diagnostic::error(
                            Rule::Duplicate,
                            format!(
                                "duplicate package {:?} (first defined in {})",
                                p.name, prev.origin
                            ),
                        )
                        .at(&p.origin)
                        .package(&p.name),
                    );
                } else {
                    cat.packages.insert(p.name.clone(), p);
                }
            }
            Decl::Channel(pkg, c) => channels.push((pkg, c)),
            Decl::Bundle(b) => bundles.push(b),
            Decl::Deprecations(pkg, d) => deprecations.push((pkg, d)),
            Decl::Other(m) => cat.others.push(m),
        }
    }
    for (pkg, c) in channels {
        let Some(p) = cat.packages.get_mut(&pkg) else {
            diags.push(
                Diagnostic::error(
                    Rule::UnknownPackage,
                    format!("unknown package {pkg:?} for channel {:?}", c.name),
                )
                .at(&c.origin),
            );
            continue;
        };
        if c.name.is_empty() {
            diags.push(
                Diagnostic::error(
                    Rule::Schema,
                    format!("package {pkg:?} contains channel with no name"),
                )
                .at(&c.origin)
                .package(&pkg),
            );
        } else if let Some(prev) = p.channels.get(&c.name) {
            diags.push(
                Diagnostic::error(
                    Rule::Duplicate,
                    format!(
                        "package {pkg:?} has duplicate channel {:?} (first defined in {})",
                        c.name, prev.origin
                    ),
                )
                .at(&c.origin)
                .package(&pkg),
            );
        } else {
            p.channels.insert(c.name.clone(), c);
        }
    }
    for b in bundles {
        if b.package.is_empty() {
            diags.push(
                Diagnostic::error(
                    Rule::Schema,
                    format!("package name must be set for bundle {:?}", b.name),
                )
                .at(&b.origin),
            );
            continue;
        }
        let Some(p) = cat.packages.get_mut(&b.package) else {
            diags.push(
                Diagnostic::error(
                    Rule::UnknownPackage,
                    format!("unknown package {:?} for bundle {:?}", b.package, b.name),
                )
                .at(&b.origin),
            );
            continue;
        };
        if b.name.is_empty() {
            diags.push(
                Diagnostic::error(Rule::Schema, "bundle name must be set")
                    .at(&b.origin)
                    .package(&b.package),
            );
        } else if let Some(prev) = p.bundles.get(&b.name) {
            diags.push(
                Diagnostic::error(
                    Rule::Duplicate,
                    format!(
                        "package {:?} has duplicate bundle {:?} (first defined in {})",
                        b.package, b.name, prev.origin
                    ),
                )
                .at(&b.origin)
                .package(&b.package),
            );
        } else {
            p.bundles.insert(b.name.clone(), b);
        }
    }
    for (item, (pkg, d)) in deprecations.into_iter().enumerate() {
        if pkg.is_empty() {
            diags.push(
                Diagnostic::error(
                    Rule::Deprecation,
                    format!("package name must be set for deprecation item {item}"),
                )
                .at(&d.origin),
            );
            continue;
        }
        let Some(p) = cat.packages.get_mut(&pkg) else {
            diags.push(
                Diagnostic::error(
                    Rule::UnknownPackage,
                    format!("cannot apply deprecations to an unknown package {pkg:?}"),
                )
                .at(&d.origin),
            );
            continue;
        };
        if p.deprecations.is_some() {
            diags.push(
                Diagnostic::error(
                    Rule::Duplicate,
                    format!("expected a maximum of one deprecation per package: {pkg:?}"),
                )
                .at(&d.origin)
                .package(&pkg),
            );
        } else {
            p.deprecations = Some(d);
        }
    }
    cat
}
