//! oc-mirror's `ImageSetConfiguration`, as `opreg mirror --config` reads it: any bytes are
//! parsed and validated (`mirror::config::parse`); a configuration that parses also goes
//! through every operator entry's range and name helpers. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::mirror::config;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = config::parse(&text) {
        for op in &c.mirror.operators {
            let _ = config::unique_name(op);
            for p in &op.packages {
                let _ = config::range(&p.min_version, &p.max_version);
            }
        }
    }
});
