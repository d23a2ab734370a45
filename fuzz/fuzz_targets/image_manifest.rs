//! Image manifests and indexes as a registry or layout sends them: `parse_manifest` with and
//! without a Content-Type, platform selection over an index, and the config label reader and
//! image-kind classification on the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::image::{kind, manifest};

fuzz_target!(|data: &[u8]| {
    for ct in [None, Some(manifest::OCI_INDEX), Some(manifest::DOCKER_MANIFEST)] {
        if let Ok(manifest::Manifest::Index { manifests }) = manifest::parse_manifest(data, ct) {
            let _ = manifest::select(&manifests, &manifest::host_platform());
            for p in ["linux/arm64/v8", "linux/arm/v7", "windows/amd64"] {
                let _ = manifest::select(&manifests, &manifest::parse_platform(p).unwrap());
            }
            let _ = manifest::platforms(&manifests);
        }
    }
    if let Ok(labels) = manifest::config_labels(data) {
        if let Ok(k) = kind::classify(&labels) {
            let _ = k.paths();
        }
    }
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = opreg::image::reference::parse_source(s);
        let _ = manifest::parse_platform(s);
    }
});
