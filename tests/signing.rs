//! Signing and signature policies against Debian's `docker-registry` on loopback, with an
//! independent peer (`tests/signing_peer.py`: Python's `cryptography` and PyNaCl, written from
//! cosign's formats): it decrypts opreg's keys, verifies opreg's signatures, and signs images
//! itself for opreg to verify.

use crate::registry_support;

use registry_support::ctx::*;
use registry_support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PASS: &str = "correct horse";

/// Runs the peer; returns its stdout, failing the test on a non-zero exit.
fn peer(args: &[&str]) -> String {
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
fn keypair(ctx: &Ctx, name: &str) -> (PathBuf, PathBuf) {
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
fn policy(ctx: &Ctx, name: &str, json: &Value) -> PathBuf {
    let p = ctx.path(name);
    std::fs::write(&p, serde_json::to_vec_pretty(json).unwrap()).unwrap();
    p
}

fn sigstore(key: &Path, identity: Option<&str>) -> Value {
    let mut v = serde_json::json!({"type": "sigstoreSigned", "keyPath": key});
    if let Some(i) = identity {
        v["signedIdentity"] = serde_json::json!({"type": i});
    }
    v
}

/// `render REF` under `policy` (none: no flag): (exit code, stdout, stderr).
fn render(ctx: &Ctx, reference: &str, policy: Option<&Path>) -> (i32, String, String) {
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

fn accepted(r: (i32, String, String)) {
    let (code, out, err) = r;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("olm.package"), "{out}");
}

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
    assert!(
        one_error_line(code, &err, &cat).contains("no signature verifies"),
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

/// An image whose only signature is an OCI 1.1 referrer in sigstore's bundle format (the
/// referrers tag scheme, as a registry without the referrers API holds it).
fn bundle_only(reg: &Registry, ctx: &Ctx, image: &Image, public: &Path) {
    let d = reg.push("catalogs/bundled", "v1", image);
    let empty = reg.push_blob("catalogs/bundled", b"{}");
    let bundle = reg.push_blob(
        "catalogs/bundled",
        br#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}"#,
    );
    let artifact = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": empty, "size": 2},
        "layers": [{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json", "digest": bundle, "size": 61}],
        "subject": {"mediaType": OCI_MANIFEST, "digest": d, "size": image.manifest().len()},
    });
    let bytes = serde_json::to_vec(&artifact).unwrap();
    let a = reg.push_manifest("catalogs/bundled", &sha(&bytes), OCI_MANIFEST, &bytes);
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [{"mediaType": OCI_MANIFEST, "digest": a, "size": bytes.len(), "artifactType": "application/vnd.dev.sigstore.bundle.v0.3+json"}],
    });
    let ib = serde_json::to_vec(&index).unwrap();
    reg.push_manifest("catalogs/bundled", &d.replacen(':', "-", 1), OCI_INDEX, &ib);
    let bundled = format!("{}/catalogs/bundled:v1", reg.host());
    let (code, _, err) = run(
        ctx,
        &[
            "image",
            "verify",
            &bundled,
            "--key",
            public.to_str().unwrap(),
            "--use-http",
        ],
    );
    let line = one_error_line(code, &err, &bundled);
    assert!(
        line.contains("new bundle format") && !line.contains("unsigned"),
        "{line}"
    );
}

#[test]
fn build_and_push_sign_what_they_push() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let host = reg.host();
    let (key, public) = keypair(&ctx, "k");
    let base = format!("{host}/base/opreg:1");
    let version = env!("CARGO_PKG_VERSION").to_string();
    let schema = opreg::store::schema_version().to_string();
    let base_image = Image::new(&[
        ("io.opreg.version", version.as_str()),
        ("io.opreg.schema", schema.as_str()),
    ])
    .layer(&[
        Entry::Dir("bin/".into()),
        Entry::File("bin/opm".into(), b"not a binary".to_vec()),
    ]);
    reg.push("base/opreg", "1", &base_image);
    let catalog = fbc_dir(&ctx, "etcd");
    let built = format!("{host}/catalogs/built:v1");
    let repo = policy(
        &ctx,
        "repo.json",
        &serde_json::json!({"default": [sigstore(&public, Some("matchRepository"))]}),
    );

    // A base the policy refuses: nothing is built or pushed.
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "build",
            catalog.to_str().unwrap(),
            "--base",
            &base,
            "-t",
            &built,
            "--push",
            "--use-http",
            "--sign-key",
            key.to_str().unwrap(),
            "--signature-policy",
            repo.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("base image") && err.contains("unsigned"),
        "{err}"
    );
    let (code, _, _) = run(
        &ctx,
        &[
            "image",
            "verify",
            &built,
            "--key",
            public.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 1);

    // Signed, the base is used; what is pushed is signed.
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "sign",
            &base,
            "--key",
            key.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let digest_file = ctx.path("digest");
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "build",
            catalog.to_str().unwrap(),
            "--base",
            &base,
            "-t",
            &built,
            "--push",
            "--use-http",
            "--sign-key",
            key.to_str().unwrap(),
            "--signature-policy",
            repo.to_str().unwrap(),
            "--digest-file",
            digest_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let digest = std::fs::read_to_string(&digest_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(err.contains(&format!("signed {built} {digest}")), "{err}");
    let sig: Value = serde_json::from_str(
        peer(&[
            "verify",
            &host,
            "catalogs/built",
            &digest,
            public.to_str().unwrap(),
        ])
        .trim(),
    )
    .unwrap();
    assert_eq!(
        (sig["verified"].clone(), sig["matches"].clone()),
        (Value::Bool(true), Value::Bool(true)),
        "{sig}"
    );
    accepted(render(&ctx, &built, Some(&repo)));

    // image push --sign-key, from a layout.
    let layout = ctx.path("layout");
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "build",
            catalog.to_str().unwrap(),
            "--base",
            &base,
            "-t",
            &format!("oci:{}:v1", layout.display()),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let pushed = format!("{host}/catalogs/pushed:v1");
    let (code, out, err) = run(
        &ctx,
        &[
            "image",
            "push",
            &format!("oci:{}:v1", layout.display()),
            &pushed,
            "--use-http",
            "--sign-key",
            key.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let digest = out.trim();
    peer(&[
        "verify",
        &host,
        "catalogs/pushed",
        digest,
        public.to_str().unwrap(),
    ]);
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "verify",
            &pushed,
            "--key",
            public.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // A wrong passphrase pushes nothing.
    let other = format!("{host}/catalogs/never:v1");
    let out = ctx
        .cmd(
            &[
                "image",
                "push",
                &format!("oci:{}:v1", layout.display()),
                &other,
                "--use-http",
                "--sign-key",
                key.to_str().unwrap(),
            ],
            &[],
        )
        .env("COSIGN_PASSWORD", "wrong")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("wrong passphrase"),
        "{err}"
    );
    assert_eq!(render(&ctx, &other, None).0, 1, "nothing was pushed");
}

#[test]
fn serve_polls_past_a_refused_digest_until_it_is_signed() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let (key, public) = keypair(&ctx, "k");
    let etcd = fbc_dir(&ctx, "etcd");
    let prom = fbc_dir(&ctx, "prometheus");
    reg.push("catalogs/poll", "latest", &catalog_image(&etcd));
    let reference = format!("{}/catalogs/poll:latest", reg.host());
    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "sign",
            &reference,
            "--key",
            key.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let repo = policy(
        &ctx,
        "repo.json",
        &serde_json::json!({"default": [sigstore(&public, Some("matchRepository"))]}),
    );
    let http = free_port().to_string();
    let server = crate::common::Server::start(&[
        &reference,
        "--use-http",
        "--no-image-cache",
        "--poll-interval",
        "300ms",
        "--signature-policy",
        repo.to_str().unwrap(),
        "--http-port",
        &http,
    ]);
    assert_eq!(list_packages(&server), vec!["etcd".to_string()]);
    let refusals = || -> String {
        let body = ureq::get(&format!("http://127.0.0.1:{http}/metrics"))
            .call()
            .unwrap()
            .into_body()
            .read_to_string()
            .unwrap();
        body.lines()
            .find(|l| l.starts_with("opreg_images_refused"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(refusals().ends_with(" 0"), "{}", refusals());

    let moved = reg.push("catalogs/poll", "latest", &catalog_image(&prom));
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let start = std::time::Instant::now();
        while !done() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "{what}:\n{}",
                server.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    wait("the refusal is logged", &|| {
        server.log().contains("signature policy refuses")
    });
    let log = server.log();
    assert!(log.contains(&moved) && log.contains("unsigned"), "{log}");
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(
        list_packages(&server),
        vec!["etcd".to_string()],
        "the old catalog stays"
    );
    assert_eq!(
        server.log().matches("signature policy refuses").count(),
        1,
        "said once per digest"
    );
    assert!(refusals().ends_with(" 1"), "counted once: {}", refusals());

    let (code, _, err) = run(
        &ctx,
        &[
            "image",
            "sign",
            &reference,
            "--key",
            key.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    wait("the signed image is served", &|| {
        try_list_packages(&server).is_some_and(|p| p == ["prometheus"])
    });
    assert_eq!(server.terminate(), Some(0));
}

/// Package names, or `None` when the call failed (one sent in the instant of a swap).
fn try_list_packages(server: &crate::common::Server) -> Option<Vec<String>> {
    crate::common::rt().block_on(async {
        let mut c = server.registry().await;
        let mut s = c
            .list_packages(opreg::api::ListPackageRequest {})
            .await
            .ok()?
            .into_inner();
        let mut v = Vec::new();
        while let Some(p) = s.message().await.ok()? {
            v.push(p.name);
        }
        Some(v)
    })
}
