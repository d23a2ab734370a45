//! oc-mirror's `DeleteImageSetConfiguration`, as `opreg mirror delete --generate --config`
//! reads it: any bytes are parsed and validated (`mirror::config::parse_delete`); what parses
//! goes through each operator entry's name and range helpers. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::mirror::config;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = config::parse_delete(&text) {
        for op in &c.mirror.operators {
            let _ = config::unique_name(op);
            for p in &op.packages {
                let _ = config::range(&p.min_version, &p.max_version);
            }
        }
    }
});
