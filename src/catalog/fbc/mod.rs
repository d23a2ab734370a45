//! File-based catalogs (FBC): reading JSON/YAML meta streams, and writing them back (render).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | walking a tree in lexical order, honouring `.indexignore` files (gitignore syntax, scoped to their directory), and reading each file |
//! | [`stream`] | splitting a file into metas: a JSON object stream (first non-space byte `{`), read in chunks when large, or a YAML multi-document stream |
//! | [`decode`] | typing the four OLM schemas into [`Decl`]s, with top-level keys compared case-insensitively; everything else becomes a custom [`Meta`] |
//! | [`render`] | writing a catalog back as FBC JSON or YAML, as opm writes it |
//! | [`goyaml`] | go-yaml v2's emitter, for the YAML form |

pub mod decode;
pub mod goyaml;
pub mod render;
pub mod stream;

pub use decode::to_decl;
pub use render::{
    render, render_all, render_bundle, render_lines, render_part_lines, MoreBundles, RenderFormat,
};
pub use stream::{decode_bytes, decode_file_chunked};

use super::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::model::*;
use serde_json::{Map, Value};
use std::path::Path;
use stream::{for_each_meta, read_streaming};

/// One decoded document, before typing.
#[derive(Debug, Clone)]
pub struct RawMeta {
    pub schema: String,
    pub package: String,
    pub name: String,
    pub value: Map<String, Value>,
    pub origin: Origin,
}

/// Reads every meta of an FBC directory tree (or a single file).
pub fn read_path(root: &Path, diags: &mut Vec<Diagnostic>) -> Vec<Decl> {
    read_path_with(root, diags, &mut |b, _| b)
}

/// [`read_path`], handing each bundle to `sink` as soon as it is decoded.
pub fn read_path_with(
    root: &Path,
    diags: &mut Vec<Diagnostic>,
    sink: &mut super::BundleSink<'_>,
) -> Vec<Decl> {
    read_path_excluding(root, &super::Exclude::default(), diags, sink)
}

/// [`read_path_with`], never reading the files `exclude` names.
pub fn read_path_excluding(
    root: &Path,
    exclude: &super::Exclude,
    diags: &mut Vec<Diagnostic>,
    sink: &mut super::BundleSink<'_>,
) -> Vec<Decl> {
    let mut decls = Vec::new();
    walk_files(root, exclude, diags, &mut |path, diags| {
        read_file(path, &mut decls, diags, &mut *sink)
    });
    decls
}

/// Every meta of an FBC tree (or a single file) as it was given, in walk order, with nothing
/// typed: what catalogd stores. Each meta is handed over as it is parsed; a broken stream is
/// reported in `diags` once part of its file may have been handed over, so a caller that
/// writes what it is given discards its output on any error.
pub fn for_each_raw_meta(
    root: &Path,
    exclude: &super::Exclude,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) {
    walk_files(root, exclude, diags, &mut |path, diags| {
        read_metas(path, &path.display().to_string(), diags, &mut *f);
    });
}

/// Calls `f` with each file of the tree at `root` (or `root` itself, when it is a file), in
/// lexical order, honouring `.indexignore` files and never the files `exclude` names.
fn walk_files(
    root: &Path,
    exclude: &super::Exclude,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(&Path, &mut Vec<Diagnostic>),
) {
    if root.is_file() {
        f(root, diags);
        return;
    }
    // A SOURCE that is a link to a directory is followed, as opm follows it (a trailing
    // separator resolves the link); links inside the catalog are not, as opm's walk does not.
    let linked;
    let root = if root.is_symlink() && root.is_dir() {
        linked = root.join("");
        linked.as_path()
    } else {
        root
    };
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .add_custom_ignore_filename(".indexignore")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in walker {
        match entry {
            Ok(e) => {
                let is_file = e.file_type().map(|t| !t.is_dir()).unwrap_or(false);
                let excluded = || e.metadata().is_ok_and(|m| exclude.contains(&m));
                if is_file && e.file_name() != ".indexignore" && !excluded() {
                    f(e.path(), diags);
                }
            }
            Err(err) => diags.push(Diagnostic::error(
                Rule::Parse,
                format!("cannot walk {}: {err}", root.display()),
            )),
        }
    }
}

/// Files above this size are read in chunks of this size when they hold a JSON stream, so a
/// large catalog never sits in memory whole.
const CHUNK: usize = 1 << 20;

fn read_file(
    path: &Path,
    decls: &mut Vec<Decl>,
    diags: &mut Vec<Diagnostic>,
    bundle_sink: &mut super::BundleSink<'_>,
) {
    let display = path.display().to_string();
    // Each document is typed as soon as it is parsed, so only one document's generic tree is
    // alive at a time. A stream error drops the whole file, as upstream does.
    let mut typed = Vec::new();
    let mut errs = Vec::new();
    let mut sink = |raw: RawMeta| match to_decl(raw, &mut errs) {
        Some(Decl::Bundle(b)) => typed.push(Decl::Bundle(bundle_sink(b, &mut errs))),
        Some(d) => typed.push(d),
        None => {}
    };
    let ok = read_metas(path, &display, diags, &mut sink);
    if ok {
        decls.append(&mut typed);
        diags.append(&mut errs);
    }
}

/// Calls `f` with each meta of the file at `path`: a large JSON stream in chunks, anything
/// else read whole. Returns false (after reporting it) when the stream is broken.
fn read_metas(
    path: &Path,
    display: &str,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) -> bool {
    let cannot_read = |e: std::io::Error, diags: &mut Vec<Diagnostic>| {
        diags.push(
            Diagnostic::error(Rule::Parse, format!("cannot read file: {e}"))
                .at(&Origin::file(display)),
        );
        false
    };
    match read_streaming(path, display, CHUNK, diags, f) {
        Ok(Some(ok)) => ok,
        Ok(None) => match std::fs::read(path) {
            Ok(bytes) => for_each_meta(&bytes, display, diags, f),
            Err(e) => cannot_read(e, diags),
        },
        Err(e) => cannot_read(e, diags),
    }
}
