//! The chunked JSON-stream reader `opreg ingest` uses for FBC files over 1 MiB, checked
//! against the whole-file reader. Input: one byte choosing the chunk size (1–64 bytes, so
//! documents, strings, numbers and UTF-8 sequences straddle chunk boundaries), then the file.
//! The file is written to a temporary file and read by `fbc::decode_file_chunked`; when that
//! reader keeps the file (it does not hand it back to be read whole), it must agree with
//! `fbc::decode_bytes` on the same bytes: both fail, or both succeed with the same metas and
//! the same per-document diagnostics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::catalog::fbc;
use opreg::diag::{Diagnostic, Rule};

fn broken(diags: &[Diagnostic]) -> bool {
    diags.iter().any(|d| d.rule == Rule::Parse)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, content)) = data.split_first() else {
        return;
    };
    let chunk = 1 + usize::from(first % 64);
    let path = opreg_fuzz::scratch_dir().join("catalog.json");
    std::fs::write(&path, content).expect("write the input");
    let mut chunk_diags = Vec::new();
    let Some(chunked) =
        fbc::decode_file_chunked(&path, chunk, &mut chunk_diags).expect("read the input")
    else {
        return;
    };
    let mut whole_diags = Vec::new();
    let whole = fbc::decode_bytes(content, &path.display().to_string(), &mut whole_diags);
    assert_eq!(
        broken(&chunk_diags),
        broken(&whole_diags),
        "chunked ({chunk}) and whole-file readers disagree on whether the stream decodes:\n\
         chunked: {chunk_diags:?}\nwhole: {whole_diags:?}"
    );
    if broken(&whole_diags) {
        return;
    }
    assert_eq!(
        format!("{chunked:?}"),
        format!("{whole:?}"),
        "chunked ({chunk}) and whole-file readers decode different metas"
    );
    assert_eq!(
        chunk_diags, whole_diags,
        "chunked ({chunk}) and whole-file readers report different diagnostics"
    );
});
