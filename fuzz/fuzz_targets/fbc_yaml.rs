//! FBC YAML document streams: every file whose first non-space byte is not `{`, through
//! `fbc::decode_bytes`, `to_decl`, `catalog::build`, validation and, for valid catalogs, edges,
//! wire form and render.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return;
    }
    opreg_fuzz::fbc_file(data);
});
