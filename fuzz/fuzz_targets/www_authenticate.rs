//! The `WWW-Authenticate` parser (registry auth challenges) and the docker config reader.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::registry::auth;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    for c in auth::parse_challenges(s) {
        assert!(!c.scheme.is_empty());
        assert!(c.scheme.chars().all(|ch| !ch.is_ascii_uppercase()));
    }
    let _ = auth::find_in_config(s, "reg.example:5000", "team/app");
    let _ = auth::find_in_config(s, "docker.io", "library/busybox");
});
