//! ClusterServiceVersions: the input is one manifest file, decoded by
//! `manifests::decode_manifest_file` and read as the only manifest of a bundle directory whose
//! annotations name package `fuzz` and channel `stable` (`manifests::bundle_from_objects`,
//! `manifests::bundle_dirs_to_decls`: every CSV-derived property, related images, icon,
//! description), then assembly, validation and, for valid catalogs, edges, wire form and render.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::catalog::manifests;
use serde_json::json;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let mut warnings = Vec::new();
    let path = Path::new("bundle/manifests/csv.yaml");
    let Some(csv) = manifests::decode_manifest_file(path, data, &mut warnings) else {
        return;
    };
    let annotations = json!({"annotations": {
        "operators.operatorframework.io.bundle.package.v1": "fuzz",
        "operators.operatorframework.io.bundle.channels.v1": "stable",
        "operators.operatorframework.io.bundle.channel.default.v1": "stable",
    }});
    let mut diags = Vec::new();
    let bundles = manifests::bundle_from_objects(
        Path::new("bundle"),
        vec![(path.to_path_buf(), csv)],
        vec![annotations],
        &mut diags,
    );
    let decls = manifests::bundle_dirs_to_decls(bundles.into_iter().collect(), &mut diags);
    opreg_fuzz::pipeline(decls, diags);
});
