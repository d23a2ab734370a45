//! Upstream SQLite index databases (schema 0–13). The input is written to a temporary file
//! (on /dev/shm when there is one) and read with `legacy::read_index`, as `opreg` reads a
//! SOURCE that is an index; its declarations go through assembly, validation and, for valid
//! catalogs, edges, wire form and render.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::catalog::legacy;

fuzz_target!(|data: &[u8]| {
    let path = opreg_fuzz::scratch_dir().join("index.db");
    std::fs::write(&path, data).expect("write the input");
    let mut warnings = Vec::new();
    if let Ok(decls) = legacy::read_index(&path, &mut warnings) {
        opreg_fuzz::pipeline(decls, Vec::new());
    }
});
