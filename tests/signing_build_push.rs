//! Signing what `image build` and `image push` push, against Debian's `docker-registry` on
//! loopback and the independent peer (`tests/signing_peer.py`), and `serve REF` polling past a
//! refused digest until it is signed. Helpers are tests/signing.rs's.

use super::signing::{accepted, keypair, peer, policy, render, run, sigstore};
use crate::registry_support;
use registry_support::ctx::*;
use registry_support::*;
use serde_json::Value;
use std::path::Path;

/// An image whose only signature is an OCI 1.1 referrer in sigstore's bundle format (the
/// referrers tag scheme, as a registry without the referrers API holds it).
pub(crate) fn bundle_only(reg: &Registry, ctx: &Ctx, image: &Image, public: &Path) {
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
