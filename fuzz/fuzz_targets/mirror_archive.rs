//! A mirror archive (`mirror_000001.tar`), as `opreg mirror --from file://DIR` unpacks it into
//! the workspace: any bytes, unpacked twice (the second pass meets the first one's files).
//! Whatever the input, nothing may appear outside the private root directory, a blob that
//! lands must hash to its name, and an error is the only other outcome.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::mirror::archive;
use sha2::Digest;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let input = dir.path().join("mirror_000001.tar");
    std::fs::write(&input, data).unwrap();
    let root = dir.path().join("root");
    let _ = archive::unpack(std::slice::from_ref(&input), &root);
    let _ = archive::unpack(std::slice::from_ref(&input), &root);
    let outside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "root" && n != "mirror_000001.tar")
        .collect();
    assert!(outside.is_empty(), "written outside the root: {outside:?}");
    let Ok(blobs) = std::fs::read_dir(root.join("blobs/sha256")) else {
        return;
    };
    for b in blobs.flatten() {
        let Ok(bytes) = std::fs::read(b.path()) else {
            continue;
        };
        let name = b.file_name().to_string_lossy().into_owned();
        assert_eq!(format!("{:x}", sha2::Sha256::digest(&bytes)), name);
    }
});
