//! Package-manifest directories. Input: NUL-separated files; the first is the
//! `*.package.yaml`, the others are the files of the tree, an empty file starting the next
//! directory. They go through `manifests::parse_package_manifest`,
//! `manifests::decode_manifest_file` and `manifests::package_manifest_decls` (what
//! `manifests::read_tree` runs on a directory), then assembly, validation and, for valid
//! catalogs, edges, wire form and render.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::catalog::manifests;
use opreg::model::Origin;
use std::path::PathBuf;

fuzz_target!(|data: &[u8]| {
    let (manifest, rest) = opreg_fuzz::first_file(data);
    let Some(manifest) = manifests::parse_package_manifest(manifest) else {
        return;
    };
    let mut warnings = Vec::new();
    let mut dirs = Vec::new();
    for (d, group) in opreg_fuzz::groups(rest).into_iter().enumerate() {
        let mut objs = Vec::new();
        for (i, bytes) in group.into_iter().enumerate() {
            let path = PathBuf::from(format!("pkg/{d}/{i}.yaml"));
            if let Some(v) = manifests::decode_manifest_file(&path, bytes, &mut warnings) {
                objs.push((path, v));
            }
        }
        dirs.push(objs);
    }
    let mut diags = Vec::new();
    let decls = manifests::package_manifest_decls(
        &manifest,
        Origin::file("pkg/fuzz.package.yaml"),
        dirs,
        &mut diags,
        &mut warnings,
    );
    opreg_fuzz::pipeline(decls, diags);
});
