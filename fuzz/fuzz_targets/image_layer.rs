//! The layer reader: a tar stream (plain, gzip or zstd, by its first bytes) applied over a
//! first layer, with whiteouts and the safety checks. Whatever the input, nothing may appear
//! outside the private root directory, and an error is the only other outcome.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::image::layers::Extractor;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let wanted = ["/configs".to_string(), "manifests/".to_string()];
    let mut x = Extractor::new(&root, &wanted, 1 << 20).unwrap();
    // Twice: the second pass meets the first one's files, links and directories.
    let _ = x.apply(data);
    let _ = x.apply(data);
    let outside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "root")
        .collect();
    assert!(outside.is_empty(), "written outside the root: {outside:?}");
});
