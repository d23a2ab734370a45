//! Shared code of the fuzz targets: every reader's declarations go through what `opreg ingest`
//! runs after reading, in the same order.
//!
//! 1. [`catalog::build`] (structural errors) and [`validate::validate`] (the catalog and graph
//!    rules) on every input, valid or not, as `opreg validate` does.
//! 2. Only when neither reported an error, what ingest, serve and render do with a valid
//!    catalog: the materialized edges ([`graph::channel_edges`]), heads and chain walks, the
//!    wire form of every bundle ([`wire::full_wire`]) and rendering back to FBC, JSON and YAML.
//!    Running these on invalid catalogs would report panics no user can reach.

use opreg::catalog::{self, fbc, Decl};
use opreg::diag::Diagnostic;
use opreg::{graph, validate, wire};

/// Assembles, validates and (when valid) stores-and-renders `decls` in memory.
pub fn pipeline(decls: Vec<Decl>, mut diags: Vec<Diagnostic>) {
    let cat = catalog::build(decls, &mut diags);
    let problems = validate::validate(&cat);
    if diags.iter().chain(&problems).any(Diagnostic::is_error) {
        return;
    }
    for pkg in cat.packages.values() {
        let versions = graph::Versions::of(pkg);
        for ch in pkg.channels.values() {
            let _ = graph::channel_edges(&versions, ch);
            let _ = graph::channel_head(ch);
            let _ = graph::classic_chain(ch);
            let _ = graph::channel_order(ch);
        }
        for b in pkg.bundles.values() {
            let _ = wire::full_wire(pkg, b);
        }
    }
    for format in [fbc::RenderFormat::Json, fbc::RenderFormat::Yaml] {
        let mut out = Vec::new();
        fbc::render(&cat, format, &mut out).expect("rendering to memory cannot fail");
    }
}

/// FBC bytes → metas → declarations → [`pipeline`], as `opreg` reads one FBC file.
pub fn fbc_file(bytes: &[u8]) {
    let mut diags = Vec::new();
    let metas = fbc::decode_bytes(bytes, "fuzz.yaml", &mut diags);
    let decls: Vec<Decl> = metas
        .into_iter()
        .filter_map(|m| fbc::to_decl(m, &mut diags))
        .collect();
    pipeline(decls, diags);
}

/// Splits a fuzz input into files at NUL bytes (no manifest file can hold one and still decode).
pub fn files(data: &[u8]) -> Vec<&[u8]> {
    data.split(|b| *b == 0).collect()
}

/// Splits a fuzz input into groups of files: files end at NUL bytes, and an empty file ends a
/// group (a directory). `a\0b\0\0c` is `[[a, b], [c]]`.
pub fn groups(data: &[u8]) -> Vec<Vec<&[u8]>> {
    let mut out = vec![Vec::new()];
    for f in files(data) {
        if f.is_empty() {
            out.push(Vec::new());
        } else {
            out.last_mut().expect("non-empty").push(f);
        }
    }
    out
}

/// The first file of a fuzz input and the rest of it (see [`files`]).
pub fn first_file(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// A directory private to this process, for targets whose code under test reads a path: made
/// once per process on /dev/shm when there is one (else the system temp dir). libFuzzer exits
/// without running destructors, so `scripts/fuzz.sh` removes the `opreg-fuzz-*` directories.
pub fn scratch_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let shm = std::path::Path::new("/dev/shm");
        let mut builder = tempfile::Builder::new();
        builder.prefix("opreg-fuzz-");
        let dir = if shm.is_dir() {
            builder.tempdir_in(shm)
        } else {
            builder.tempdir()
        }
        .expect("temporary directory");
        dir.keep()
    })
}
