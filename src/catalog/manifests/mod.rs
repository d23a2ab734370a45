//! Package-manifest directories and bundle directories: finding them in a tree and decoding
//! their files.
//!
//! Both layouts hold ClusterServiceVersions (CSVs) next to the objects they ship. This module
//! walks a tree, decodes each file's first document, and hands each layout to its reader:
//!
//! * [`package_manifest`]: a directory with a `*.package.yaml` naming channel heads;
//! * [`bundle_dir`]: `manifests/` + `metadata/annotations.yaml`; a tree of bundle directories
//!   makes up packages.
//!
//! Either way a bundle's properties are derived once, by [`super::csv::bundle`].

pub mod bundle_dir;
pub mod package_manifest;

pub use super::csv::LoadedBundle;
pub use bundle_dir::{bundle_dirs_to_decls, bundle_from_objects};
pub use package_manifest::{package_manifest_decls, parse_package_manifest};

use super::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::model::*;
use bundle_dir::read_bundle_dir;
use package_manifest::read_package_manifest_dir;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// True when the tree holds a package manifest or a bundle directory (checked a few levels deep).
pub fn looks_like_manifests(root: &Path) -> bool {
    walkdir::WalkDir::new(root)
        .max_depth(5)
        .into_iter()
        .filter_map(Result::ok)
        .any(|e| {
            let p = e.path();
            if e.file_type().is_dir() {
                is_bundle_dir(p)
            } else {
                is_package_manifest_file(p)
            }
        })
}

pub(super) fn is_hidden(p: &Path) -> bool {
    p.file_name()
        .map(|n| n.to_string_lossy().starts_with('.'))
        .unwrap_or(false)
}

/// True for a bundle directory: one holding `manifests/` and `metadata/`.
pub fn is_bundle_dir(p: &Path) -> bool {
    p.join("manifests").is_dir() && p.join("metadata").is_dir()
}

fn is_package_manifest_file(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    (name.ends_with("package.yaml") || name.ends_with("package.yml"))
        && first_doc(p).is_some_and(|v| v.get("packageName").is_some())
}

/// The first YAML/JSON document of a file, if it decodes to an object.
pub(super) fn first_doc(p: &Path) -> Option<Value> {
    parse_package_manifest(&std::fs::read(p).ok()?)
}

fn sorted_children(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v.retain(|p| !is_hidden(p));
    v
}

/// Reads every package manifest and bundle directory under `root`.
pub fn read_tree(
    root: &Path,
    diags: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Vec<Decl> {
    let mut walk = Walk {
        ancestors: Vec::new(),
        seen: BTreeSet::new(),
        decls: Vec::new(),
        bundle_dirs: Vec::new(),
        diags,
        warnings,
    };
    walk.visit(root);
    let Walk {
        mut decls,
        bundle_dirs,
        diags,
        ..
    } = walk;
    decls.extend(bundle_dirs_to_decls(bundle_dirs, diags));
    decls
}

/// The tree walk: directories by real path (directory symlinks are followed, so a symlink can
/// lead back to a directory being walked, a loop reported as an error naming the link, or to
/// one already read, read once with a warning), and what has been read so far.
struct Walk<'a> {
    ancestors: Vec<PathBuf>,
    seen: BTreeSet<PathBuf>,
    /// Package-manifest directories, read as they are found.
    decls: Vec<Decl>,
    /// Bundle directories, assembled into packages once the walk is done.
    bundle_dirs: Vec<LoadedBundle>,
    diags: &'a mut Vec<Diagnostic>,
    warnings: &'a mut Vec<Diagnostic>,
}

impl Walk<'_> {
    fn visit(&mut self, dir: &Path) {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let at = Origin::file(dir.display().to_string());
        if let Some(a) = self.ancestors.iter().find(|a| **a == real) {
            let msg = format!(
                "symlink loop: this directory is {}, which contains it",
                a.display()
            );
            self.diags.push(Diagnostic::error(Rule::Parse, msg).at(&at));
            return;
        }
        if !self.seen.insert(real.clone()) {
            let msg = format!("directory {} was already read; skipped", real.display());
            self.warnings
                .push(Diagnostic::warning(Rule::Parse, msg).at(&at));
            return;
        }
        self.ancestors.push(real);
        self.visit_dir(dir);
        self.ancestors.pop();
    }

    fn visit_dir(&mut self, dir: &Path) {
        if is_bundle_dir(dir) {
            if let Some(b) = read_bundle_dir(dir, self.diags, self.warnings) {
                self.bundle_dirs.push(b);
            }
            return;
        }
        let children = sorted_children(dir);
        if let Some(pm) = children
            .iter()
            .find(|p| p.is_file() && is_package_manifest_file(p))
        {
            let decls = read_package_manifest_dir(dir, pm, self.diags, self.warnings);
            self.decls.extend(decls);
            return;
        }
        if dir.join("metadata").is_dir() && !dir.join("manifests").is_dir() {
            self.warnings.push(
                Diagnostic::warning(
                    Rule::Parse,
                    "directory has metadata/ but no manifests/; not a bundle, skipped",
                )
                .at(&Origin::file(dir.display().to_string())),
            );
            return;
        }
        for c in children.iter().filter(|p| p.is_dir()) {
            self.visit(c);
        }
    }
}

/// Decodes the first document of each regular file in `dir` (not recursing).
pub(super) fn objects_in(dir: &Path, warnings: &mut Vec<Diagnostic>) -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for p in sorted_children(dir).into_iter().filter(|p| p.is_file()) {
        match std::fs::read(&p) {
            Ok(bytes) => {
                if let Some(v) = decode_manifest_file(&p, &bytes, warnings) {
                    out.push((p, v));
                }
            }
            Err(e) => warnings.push(
                Diagnostic::warning(Rule::Parse, format!("file skipped: {e}"))
                    .at(&Origin::file(p.display().to_string())),
            ),
        }
    }
    out
}

/// One manifest file from its bytes: its first YAML/JSON document, if that is an object. A
/// file that does not decode, or is not UTF-8 (Go's YAML decoder rejects it too), is skipped
/// with a warning.
pub fn decode_manifest_file(
    path: &Path,
    bytes: &[u8],
    warnings: &mut Vec<Diagnostic>,
) -> Option<Value> {
    let mut skipped = |why: String| {
        warnings.push(
            Diagnostic::warning(Rule::Parse, format!("file skipped, {why}"))
                .at(&Origin::file(path.display().to_string())),
        );
        None
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return skipped(format!("it is not valid UTF-8: {e}")),
    };
    if let Err(e) = crate::yaml::check_flow_depth(text) {
        return skipped(format!("it does not decode: {e}"));
    }
    let doc = yaml_serde::Deserializer::from_str(text)
        .next()
        .map(Value::deserialize);
    let out = match doc {
        Some(Ok(v @ Value::Object(_))) => Some(v),
        Some(Err(e)) => skipped(format!("it does not decode: {e}")),
        _ => None,
    };
    if out.is_some() {
        let file = path.display().to_string();
        warnings.extend(crate::catalog::yaml11::warnings(text, &file));
    }
    out
}
