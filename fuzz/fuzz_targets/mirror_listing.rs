//! A mirror to disk's `mirror.json`, as `opreg mirror --from file://DIR` reads it from a
//! directory carried across: any bytes are parsed and checked (`mirror::disk::parse_listing`);
//! a listing that parses is turned into the plan of a push to a registry, with and without
//! folded paths. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::mirror::config::{ImageSetConfiguration, Operator};
use opreg::mirror::disk;

fuzz_target!(|data: &[u8]| {
    let mut cfg = ImageSetConfiguration::default();
    cfg.mirror.operators = vec![
        Operator {
            catalog: "registry.example.com/catalogs/operators:v1".into(),
            ..Default::default()
        },
        Operator {
            catalog: "registry.example.com/catalogs/other@sha256:0000000000000000000000000000000000000000000000000000000000000000".into(),
            target_catalog: "x/y".into(),
            ..Default::default()
        },
    ];
    if let Ok(l) = disk::parse_listing(data, cfg.mirror.operators.len()) {
        let _ = disk::plan(&cfg, &l, "mirror.example.com:5000/m", 0);
        let _ = disk::plan(&cfg, &l, "mirror.example.com:5000/m", 2);
    }
});
