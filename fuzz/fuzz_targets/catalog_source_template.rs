//! A `targetCatalogSourceTemplate` file, as `opreg mirror` checks it before copying and merges
//! it into a catalog's CatalogSource: any bytes, checked (`mirror::resources::check_template`);
//! a template that passes is then rendered with a catalog. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::mirror::resources::{self, CatalogResource};

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let path = dir.path().join("template.yaml");
    std::fs::write(&path, data).unwrap();
    if resources::check_template(&path).is_ok() {
        let c = CatalogResource {
            source: "registry.example.com/ns/index:v1".into(),
            destination: "mirror.example.com/ns/index:v1".into(),
            template: Some(path),
        };
        resources::render(&[], &[c], false).unwrap();
    }
});
