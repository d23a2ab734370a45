//! FBC JSON object streams: `fbc::decode_bytes` takes the JSON path when the first non-space
//! byte is `{` (falling back to YAML when fewer than two objects decode), then `to_decl`,
//! `catalog::build`, validation and, for valid catalogs, edges, wire form and render.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return;
    }
    opreg_fuzz::fbc_file(data);
});
