//! A mirror workspace's `history.json`, as `opreg mirror` reads it before packing archives:
//! any bytes are parsed and checked (`mirror::history::parse`); a history that parses is then
//! asked what it added, with and without a `--since` date. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::mirror::history::{self, Date};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(h) = history::parse(&text) {
        let _ = history::added_since(&h, None);
        for r in &h.runs {
            if let Ok(d) = Date::parse(&r.date) {
                let _ = history::added_since(&h, Some(&d));
            }
        }
    }
});
