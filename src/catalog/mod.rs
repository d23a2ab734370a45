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
//! | [`csv`] | what a ClusterServiceVersion means: the properties and package fields derived from it |
//! | [`yaml11`] | warnings where opm's YAML 1.1 reads a plain scalar as something other than a string |
//!
//! Telling a SOURCE's format apart and dispatching to these readers (and to the store, for
//! opreg's own databases) is [`crate::source`]'s job, one layer up.

pub mod csv;
pub mod fbc;
pub mod legacy;
pub mod manifests;
pub mod yaml11;

use crate::diag::{Diagnostic, Rule};
use crate::model::*;

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

/// Receives each bundle as soon as it is read and returns what the catalog keeps of it (for
/// example a light copy, after writing the whole bundle somewhere).
/// Diagnostics it pushes are reported with the load's.
pub type BundleSink<'a> = dyn FnMut(Bundle, &mut Vec<Diagnostic>) -> Bundle + 'a;

/// Files that are never read as catalog input, whatever their names: the database an ingest is
/// writing into the directory it reads, and that database's temporary file. Known by device
/// and inode, so any path to them matches.
#[derive(Clone, Debug, Default)]
pub struct Exclude(Vec<(u64, u64)>);

impl Exclude {
    /// The files among `paths` that exist (a file that does not exist cannot be read anyway).
    pub fn new(paths: &[std::path::PathBuf]) -> Exclude {
        Exclude(
            paths
                .iter()
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| file_id(&m))
                .collect(),
        )
    }

    /// True when the file `meta` describes is excluded.
    pub fn contains(&self, meta: &std::fs::Metadata) -> bool {
        !self.0.is_empty() && self.0.contains(&file_id(meta))
    }

    /// True when the file at `path` is excluded.
    pub fn contains_path(&self, path: &std::path::Path) -> bool {
        !self.0.is_empty() && std::fs::metadata(path).is_ok_and(|m| self.contains(&m))
    }
}

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    (m.len(), 0)
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
