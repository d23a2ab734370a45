//! cosign's key files against an independent peer (`tests/signing_peer.py`): the peer decrypts
//! opreg's keys and opreg reads the peer's; other key types are refused. Helpers are
//! tests/signing.rs's.

use super::signing::{keypair, peer, policy, render, run, sigstore, PASS};
use crate::registry_support;
use registry_support::ctx::*;
use registry_support::*;
use serde_json::Value;
use std::path::Path;

#[test]
fn keys_are_cosigns_and_other_key_types_are_refused() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let (key, public) = keypair(&ctx, "cosign");
    let checked: Value = serde_json::from_str(&peer(&[
        "check-key",
        key.to_str().unwrap(),
        PASS,
        public.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(checked["N"], 65536);
    assert!(std::fs::read_to_string(&key)
        .unwrap()
        .starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"));
    // Never replaced.
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "generate-key-pair",
            "--output-key-prefix",
            ctx.path("cosign").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("exists already"), "{err}");
    // --passphrase-file instead of the variable.
    std::fs::write(ctx.path("pass"), "from a file\n").unwrap();
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "generate-key-pair",
            "--output-key-prefix",
            ctx.path("filed").to_str().unwrap(),
            "--passphrase-file",
            ctx.path("pass").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    peer(&[
        "check-key",
        ctx.path("filed.key").to_str().unwrap(),
        "from a file",
        ctx.path("filed.pub").to_str().unwrap(),
    ]);

    let digest = reg.push(
        "catalogs/keys",
        "v1",
        &catalog_image(&fbc_dir(&ctx, "etcd")),
    );
    let reference = format!("{}/catalogs/keys:v1", reg.host());
    // cosign's own test keys sign; the peer verifies with the public key it derives.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cosign");
    for (name, ok) in [
        ("sigstore-pem-type.key", true),
        ("cosign-pem-type.key", true),
        ("cosign-sec1-ec.key", false),
    ] {
        let out = ctx
            .cmd(
                &[
                    "image",
                    "sign",
                    &reference,
                    "--key",
                    fixtures.join(name).to_str().unwrap(),
                    "--use-http",
                ],
                &[],
            )
            .env("COSIGN_PASSWORD", "hello")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.success(), ok, "{name}: {err}");
        if !ok {
            assert!(err.contains("not a PKCS#8 private key"), "{err}");
        }
    }
    let lines = peer(&[
        "verify",
        &reg.host(),
        "catalogs/keys",
        &digest,
        public.to_str().unwrap(),
    ]);
    assert_eq!(
        lines.lines().count(),
        2,
        "two signatures, by cosign's test keys: {lines}"
    );
    // Keys of other types, from the peer in cosign's format, are refused with one line.
    for (kind, says) in [("ed25519", "an Ed25519 key"), ("rsa", "an RSA key")] {
        let k = ctx.path(&format!("{kind}.key"));
        peer(&["encrypt-key", kind, k.to_str().unwrap(), PASS]);
        let (code, _, err) = run(
            &ctx,
            &[
                "image",
                "sign",
                &reference,
                "--key",
                k.to_str().unwrap(),
                "--use-http",
            ],
        );
        let line = one_error_line(code, &err, &format!("{kind}.key"));
        assert!(
            line.contains(says) && line.contains("ECDSA P-256 keys only"),
            "{line}"
        );
        let p = policy(
            &ctx,
            &format!("{kind}.json"),
            &serde_json::json!({"default": [sigstore(&ctx.path(&format!("{kind}.key.pub")), None)]}),
        );
        let (code, _, err) = render(&ctx, &reference, Some(&p));
        let line = one_error_line(code, &err, &format!("{kind}.key.pub"));
        assert!(line.contains(says), "{line}");
    }
    // A key the peer made, P-256, is read.
    let k = ctx.path("peer.key");
    peer(&["encrypt-key", "p256", k.to_str().unwrap(), PASS]);
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "sign",
            &reference,
            "--key",
            k.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
}
