//! containers-policy.json (`--signature-policy`), and the verdict of what parses on a registry
//! image and an OCI layout, with the input as the one signature's payload.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::sign::identity::Named;
use opreg::sign::policy::{Found, Policy, Signatures, Subject};

fuzz_target!(|data: &[u8]| {
    let Ok(policy) = Policy::from_bytes(data) else {
        return;
    };
    let digest = format!("sha256:{}", "a".repeat(64));
    for r in ["reg.example:5000/ns/cat:v1", "docker.io/library/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"] {
        let named = Named::parse(r).unwrap();
        let subject = Subject::Registry(&named);
        let _ = policy.needs_signatures(&subject);
        let _ = policy.check(&subject, &digest, &mut || {
            Ok(Signatures::Found(vec![Found {
                payload: data.to_vec(),
                signature: "MEUCIQ==".into(),
            }]))
        });
    }
    let _ = policy.check(&Subject::Layout, &digest, &mut || Ok(Signatures::Found(Vec::new())));
});
