//! Signing and signature policies against Debian's `docker-registry` on loopback, with an
//! independent peer (`tests/signing_peer.py`: Python's `cryptography` and PyNaCl, written from
//! cosign's formats): it decrypts opreg's keys, verifies opreg's signatures, and signs images
//! itself for opreg to verify.

use super::signing_build_push::bundle_only;
use crate::registry_support;
use registry_support::ctx::*;
use registry_support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const PASS: &str = "correct horse";

/// Runs the peer; returns its stdout, failing the test on a non-zero exit.
pub(crate) fn peer(args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/signing_peer.py"
        ))
        .args(args)
        .output()
        .expect("python3 runs (scripts/test-deps.sh installs cryptography and pynacl)");
    assert!(
        out.status.success(),
        "peer {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// opreg with `COSIGN_PASSWORD` set.
pub fn run(ctx: &Ctx, args: &[&str]) -> (i32, String, String) {
    let out = ctx
        .cmd(args, &[])
        .env("COSIGN_PASSWORD", PASS)
        .env_remove("OPREG_SIGNATURE_POLICY")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A new opreg key pair under `ctx` as NAME.key and NAME.pub.
pub(crate) fn keypair(ctx: &Ctx, name: &str) -> (PathBuf, PathBuf) {
    let prefix = ctx.path(name);
    let (code, _, err) = run(
        ctx,
        &[
            "image",
            "generate-key-pair",
            "--output-key-prefix",
            prefix.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    (
        ctx.path(&format!("{name}.key")),
        ctx.path(&format!("{name}.pub")),
    )
}

/// A policy file holding `json`.
pub(crate) fn policy(ctx: &Ctx, name: &str, json: &Value) -> PathBuf {
    let p = ctx.path(name);
    std::fs::write(&p, serde_json::to_vec_pretty(json).unwrap()).unwrap();
    p
}

pub(crate) fn sigstore(key: &Path, identity: Option<&str>) -> Value {
    let mut v = serde_json::json!({"type": "sigstoreSigned", "keyPath": key});
    if let Some(i) = identity {
        v["signedIdentity"] = serde_json::json!({"type": i});
    }
    v
}

/// `render REF` under `policy` (none: no flag): (exit code, stdout, stderr).
pub(crate) fn render(ctx: &Ctx, reference: &str, policy: Option<&Path>) -> (i32, String, String) {
    let mut args = vec!["render", reference, "--use-http", "--no-image-cache"];
    if let Some(p) = policy {
        args.extend(["--signature-policy", p.to_str().unwrap()]);
    }
    run(ctx, &args)
}

/// A refusal: exit 1, one error line naming the image and containing `why`, nothing on stdout.
fn refused(r: (i32, String, String), reference: &str, why: &str) {
    let (code, out, err) = r;
    let line = one_error_line(code, &err, reference);
    assert!(line.contains("refused by the signature policy"), "{line}");
    assert!(line.contains(why), "expected {why:?} in: {line}");
    assert!(out.is_empty(), "nothing is written on a refusal: {out}");
}

pub(crate) fn accepted(r: (i32, String, String)) {
    let (code, out, err) = r;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("olm.package"), "{out}");
}

#[test]
fn sign_verify_and_policies() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let host = reg.host();
    let image = catalog_image(&fbc_dir(&ctx, "etcd"));
    let (key, public) = keypair(&ctx, "one");
    let (key2, public2) = keypair(&ctx, "two");
    let (_, public3) = keypair(&ctx, "three");
    let digest = reg.push("catalogs/cat", "v1", &image);
    let cat = format!("{host}/catalogs/cat:v1");

    // opreg signs; the peer verifies the tag, media type, payload and signature.
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "sign",
            &cat,
            "--key",
            key.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("signed {cat} {digest}")), "{err}");
    let sig: Value = serde_json::from_str(
        peer(&[
            "verify",
            &host,
            "catalogs/cat",
            &digest,
            public.to_str().unwrap(),
        ])
        .trim(),
    )
    .unwrap();
    assert_eq!(sig["verified"], true, "{sig}");
    assert_eq!(sig["matches"], true, "{sig}");
    assert_eq!(sig["type"], "cosign container image signature");
    assert_eq!(sig["optional"], Value::Null);
    // Signing again with the same key adds nothing; another key adds a layer.
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "sign",
            &cat,
            "--key",
            key.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert!(code == 0 && err.contains("there already"), "{err}");
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "sign",
            &cat,
            "--key",
            key2.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert!(code == 0 && err.contains("2 signature(s)"), "{err}");
    let both = peer(&[
        "verify",
        &host,
        "catalogs/cat",
        &digest,
        public2.to_str().unwrap(),
    ]);
    let verified: Vec<bool> = both
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["verified"] == true)
        .collect();
    assert_eq!(verified, [false, true], "{both}");

    // image verify: 0 for either key, 1 with one line for a third.
    for k in [&public, &public2] {
        let (code, _, err) = run(
            &ctx,
            &[
                "image",
                "verify",
                &cat,
                "--key",
                k.to_str().unwrap(),
                "--use-http",
            ],
        );
        assert_eq!(code, 0, "{err}");
    }
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "verify",
            &cat,
            "--key",
            public3.to_str().unwrap(),
            "--use-http",
        ],
    );
    // No policy is involved: the error names the key it was given.
    assert!(
        one_error_line(code, &err, &cat).contains("no signature verifies with the given key"),
        "{err}"
    );

    // matchRepository: signed accepted; another key refused.
    let repo = policy(
        &ctx,
        "repo.json",
        &serde_json::json!({"default": [sigstore(&public, Some("matchRepository"))]}),
    );
    accepted(render(&ctx, &cat, Some(&repo)));
    let other = policy(
        &ctx,
        "other.json",
        &serde_json::json!({"default": [sigstore(&public3, Some("matchRepository"))]}),
    );
    refused(
        render(&ctx, &cat, Some(&other)),
        &cat,
        "no signature verifies",
    );

    // Unsigned; and `image verify` says so.
    reg.push("catalogs/unsigned", "v1", &image);
    let unsigned = format!("{host}/catalogs/unsigned:v1");
    refused(
        render(&ctx, &unsigned, Some(&repo)),
        &unsigned,
        "unsigned: no signature at tag sha256-",
    );
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "verify",
            &unsigned,
            "--key",
            public.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert!(
        one_error_line(code, &err, &unsigned).contains("unsigned"),
        "{err}"
    );

    // The peer signs with its own key: opreg verifies; a tampered payload and a signature
    // naming another repository are refused.
    let peer_key = ctx.path("peer.key");
    peer(&["encrypt-key", "p256", peer_key.to_str().unwrap(), PASS]);
    let peer_pub = ctx.path("peer.key.pub");
    let by_peer = policy(
        &ctx,
        "peer.json",
        &serde_json::json!({"default": [sigstore(&peer_pub, Some("matchRepository"))]}),
    );
    let d = reg.push("catalogs/peer", "v1", &image);
    peer(&[
        "sign",
        &host,
        "catalogs/peer",
        &d,
        peer_key.to_str().unwrap(),
        PASS,
        &format!("{host}/catalogs/peer"),
    ]);
    let peer_ref = format!("{host}/catalogs/peer:v1");
    accepted(render(&ctx, &peer_ref, Some(&by_peer)));
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "verify",
            &peer_ref,
            "--key",
            peer_pub.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let d = reg.push("catalogs/tampered", "v1", &image);
    peer(&[
        "sign",
        &host,
        "catalogs/tampered",
        &d,
        peer_key.to_str().unwrap(),
        PASS,
        &format!("{host}/catalogs/tampered"),
        "--tamper",
    ]);
    let tampered = format!("{host}/catalogs/tampered:v1");
    refused(
        render(&ctx, &tampered, Some(&by_peer)),
        &tampered,
        "no signature verifies",
    );
    let d = reg.push("catalogs/elsewhere", "v1", &image);
    peer(&[
        "sign",
        &host,
        "catalogs/elsewhere",
        &d,
        peer_key.to_str().unwrap(),
        PASS,
        &format!("{host}/catalogs/peer"),
    ]);
    let elsewhere = format!("{host}/catalogs/elsewhere:v1");
    refused(
        render(&ctx, &elsewhere, Some(&by_peer)),
        &elsewhere,
        "does not match",
    );

    // The default identity rule (matchRepoDigestOrExact), as containers/image applies it: an
    // identity with a tag is good for a pull by digest and for that tag, not for another tag;
    // cosign's repository-only identity is refused by digest and by tag alike.
    let d = reg.push("catalogs/tagged", "v1", &image);
    reg.push("catalogs/tagged", "v2", &image);
    peer(&[
        "sign",
        &host,
        "catalogs/tagged",
        &d,
        peer_key.to_str().unwrap(),
        PASS,
        &format!("{host}/catalogs/tagged:v1"),
    ]);
    let exact = policy(
        &ctx,
        "exact.json",
        &serde_json::json!({"default": [sigstore(&peer_pub, None)]}),
    );
    accepted(render(
        &ctx,
        &format!("{host}/catalogs/tagged@{d}"),
        Some(&exact),
    ));
    accepted(render(
        &ctx,
        &format!("{host}/catalogs/tagged:v1"),
        Some(&exact),
    ));
    let v2 = format!("{host}/catalogs/tagged:v2");
    refused(render(&ctx, &v2, Some(&exact)), &v2, "does not match");
    let default_one = policy(
        &ctx,
        "default-one.json",
        &serde_json::json!({"default": [sigstore(&public, None)]}),
    );
    let by_digest = format!("{host}/catalogs/cat@{digest}");
    refused(
        render(&ctx, &by_digest, Some(&default_one)),
        &by_digest,
        "does not match",
    );

    // A reject default, with an insecureAcceptAnything scope beside a sigstoreSigned one.
    let scoped = policy(
        &ctx,
        "scoped.json",
        &serde_json::json!({
            "default": [{"type": "reject"}],
            "transports": {"docker": {
                format!("{host}/catalogs/unsigned"): [{"type": "insecureAcceptAnything"}],
                format!("{host}/catalogs"): [sigstore(&public, Some("matchRepository"))],
            }},
        }),
    );
    accepted(render(&ctx, &unsigned, Some(&scoped)));
    accepted(render(&ctx, &cat, Some(&scoped)));
    refused(
        render(&ctx, &peer_ref, Some(&scoped)),
        &peer_ref,
        "no signature verifies",
    );
    let elsewhere_host = format!("localhost:{}/catalogs/cat:v1", reg.port);
    refused(
        render(&ctx, &elsewhere_host, Some(&scoped)),
        &elsewhere_host,
        "rejected by the signature policy (default)",
    );

    // OPREG_SIGNATURE_POLICY in place of the flag; neither: any image, no policy read.
    let out = ctx
        .cmd(
            &["render", &unsigned, "--use-http", "--no-image-cache"],
            &[],
        )
        .env("OPREG_SIGNATURE_POLICY", &repo)
        .output()
        .unwrap();
    refused(
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        ),
        &unsigned,
        "unsigned",
    );
    accepted(render(&ctx, &unsigned, None));

    // validate and ingest refuse too, and ingest writes nothing.
    let (code, _, err) = run(
        &ctx,
        &[
            "validate",
            &unsigned,
            "--use-http",
            "--signature-policy",
            repo.to_str().unwrap(),
        ],
    );
    one_error_line(code, &err, &unsigned);
    let db = ctx.path("out.db");
    let (code, _, err) = run(
        &ctx,
        &[
            "ingest",
            &unsigned,
            "-o",
            db.to_str().unwrap(),
            "--use-http",
            "--signature-policy",
            repo.to_str().unwrap(),
        ],
    );
    one_error_line(code, &err, &unsigned);
    assert!(!db.exists(), "a refused image writes nothing");

    // Policies opreg cannot apply are refused when read, never accepted.
    let gpg = policy(
        &ctx,
        "gpg.json",
        &serde_json::json!({"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k.gpg"}]}),
    );
    let (code, _, err) = render(&ctx, &cat, Some(&gpg));
    assert!(
        one_error_line(code, &err, "gpg.json").contains("not supported yet"),
        "{err}"
    );

    bundle_only(&reg, &ctx, &image, &public);
}
