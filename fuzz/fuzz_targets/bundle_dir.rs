//! Bundle directories (`metadata/annotations.yaml` + `manifests/`). Input: NUL-separated files
//! in groups ended by an empty file; groups pair up as (metadata/ files, manifests/ files), one
//! bundle directory per pair. Every file goes through `manifests::decode_manifest_file`, each
//! pair through `manifests::bundle_from_objects` (annotations, dependencies, properties, CSV,
//! CRDs) and all of them through `manifests::bundle_dirs_to_decls` (what
//! `manifests::read_tree` runs on a tree of bundle directories), then assembly, validation
//! and, for valid catalogs, edges, wire form and render.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::catalog::manifests;
use std::path::PathBuf;

fuzz_target!(|data: &[u8]| {
    let groups = opreg_fuzz::groups(data);
    let mut warnings = Vec::new();
    let mut diags = Vec::new();
    let mut bundles = Vec::new();
    for (n, pair) in groups.chunks(2).enumerate() {
        let dir = PathBuf::from(format!("bundles/{n}"));
        let decode = |sub: &str, files: &[&[u8]], warnings: &mut Vec<_>| {
            let mut objs = Vec::new();
            for (i, bytes) in files.iter().enumerate() {
                let path = dir.join(sub).join(format!("{i}.yaml"));
                if let Some(v) = manifests::decode_manifest_file(&path, bytes, warnings) {
                    objs.push((path, v));
                }
            }
            objs
        };
        let metadata = decode("metadata", &pair[0], &mut warnings)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        let objects = decode(
            "manifests",
            pair.get(1).map_or(&[][..], |g| &g[..]),
            &mut warnings,
        );
        if let Some(b) = manifests::bundle_from_objects(&dir, objects, metadata, &mut diags) {
            bundles.push(b);
        }
    }
    let decls = manifests::bundle_dirs_to_decls(bundles, &mut diags);
    opreg_fuzz::pipeline(decls, diags);
});
