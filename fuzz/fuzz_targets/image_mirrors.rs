//! ImageDigestMirrorSet, ImageTagMirrorSet and ImageContentSourcePolicy files
//! (`validate --image-mirrors`), and where what parses sends references by digest and by tag.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::imagecheck::mirrors::Mirrors;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut m = Mirrors::default();
    if m.add("fuzz.yaml", text).is_err() {
        return;
    }
    let digest = format!("@sha256:{}", "a".repeat(64));
    for r in [
        format!("quay.io/ns/op{digest}"),
        "quay.io/ns/op:v1".to_string(),
        format!("a.example.com:5000/x/y:1{digest}"),
        "busybox".to_string(),
    ] {
        for l in m.locations(&r) {
            assert!(!l.reference.is_empty());
        }
    }
    let _ = m.sources();
});
