//! containers' `registries.conf` and its drop-ins (version 1 and version 2 tables), read for
//! `insecure`: each input is one file added on top of the ones before; every parsed set of
//! rules is asked about a few images.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::registry::registries_conf::Rules;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut rules = Rules::default();
    // The same text twice: the second is a drop-in over the first.
    for name in ["registries.conf", "registries.conf.d/50.conf"] {
        if rules.add(text, name).is_err() {
            return;
        }
        for (registry, repository) in [
            ("quay.io", "ns/op"),
            ("localhost:5000", "a"),
            ("lab.example.com:8443", "x/y/z"),
            ("", ""),
        ] {
            let _ = rules.insecure(registry, repository);
        }
    }
});
