//! `opreg mirror` runs that end early or go further: a run killed with `kill -9` and taken up
//! again, and a run that checks its sources against a signature policy and signs the catalogs
//! it pushes. Two real `docker-registry` instances on loopback, a relay counting requests.

use crate::mirror::{at, put_digests, raw, watch};
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::faults::{Action, Seen};
use crate::registry_support::{sha, Registry};

#[test]
fn a_mirror_killed_mid_copy_resumes_copying_only_what_is_missing() {
    // Every blob read from the source takes a while, so the run can be caught in the middle.
    let src = Source::start_with(Some(Box::new(|s: &Seen, _| {
        if s.method == "GET" && s.path.contains("/blobs/") {
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        Action::Relay
    })));
    let dst = Registry::http();
    let relay = watch(&dst);
    let dest = format!("127.0.0.1:{}/m", relay.port);
    let ctx = Ctx::new();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let ws = ctx.path("ws");
    let args = [
        "mirror",
        "--use-http",
        "--parallel-images",
        "1",
        "--parallel-layers",
        "1",
        "--config",
        cfg.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ];
    let dest_arg = format!("docker://{dest}");
    let mut all: Vec<&str> = args.to_vec();
    all.push(&dest_arg);
    let mut child = ctx
        .cmd(&all, &[])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while put_digests(&relay, 0).len() < 3 {
        assert!(
            start.elapsed().as_secs() < 120,
            "the mirror never uploaded 3 blobs"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the mirror ended before it was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let first = put_digests(&relay, 0);
    let before = relay.seen.lock().unwrap().len();

    let (code, _, err) = ctx.run(&all);
    assert_eq!(code, 0, "{err}");
    let second = put_digests(&relay, before);
    assert!(!second.is_empty(), "the rerun had work left");
    for d in &second {
        assert!(
            !first.contains(d),
            "{d} was uploaded by the killed run and again: {:?}\n{}",
            relay
                .seen
                .lock()
                .unwrap()
                .iter()
                .map(|(s, _)| format!("{} {}", s.method, s.path))
                .collect::<Vec<_>>(),
            std::fs::read_to_string(ws.join("placements.tsv")).unwrap_or_default()
        );
    }
    for r in src.expected(true) {
        let there = raw(&at(&src, &dest, &r)).unwrap_or_else(|| panic!("{r}: {err}"));
        let want = match r.split_once('@') {
            Some((_, d)) => d.to_string(),
            None => src.images[&r].clone(),
        };
        assert_eq!(sha(&there), want, "{r}");
    }
    assert!(
        raw(&format!("{dest}/catalogs/operators:v1")).is_some(),
        "{err}"
    );
}

/// opreg with a key passphrase in `COSIGN_PASSWORD` (the signing tests' runner).
use crate::signing::run as signed_run;

#[test]
fn a_policy_refuses_unsigned_sources_and_sign_key_signs_the_rebuilt_catalog() {
    let src = Source::start();
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let prefix = ctx.path("cosign");
    let (code, _, err) = signed_run(
        &ctx,
        &[
            "image",
            "generate-key-pair",
            "--output-key-prefix",
            prefix.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (key, public) = (ctx.path("cosign.key"), ctx.path("cosign.pub"));
    // The additional image is signed at the source; the bundles are not.
    let ubi = format!("{}/tools/ubi:9", src.host);
    let (code, _, err) = signed_run(
        &ctx,
        &[
            "image",
            "sign",
            &ubi,
            "--key",
            key.to_str().unwrap(),
            "--use-http",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let signed = serde_json::json!({"type": "sigstoreSigned", "keyPath": public,
        "signedIdentity": {"type": "matchRepository"}});
    let policy = |scope: &str| {
        let p = ctx.path(&format!("policy-{}.json", scope.replace('/', "-")));
        let doc = serde_json::json!({"default": [{"type": "insecureAcceptAnything"}],
            "transports": {"docker": {format!("{}/{scope}", src.host): [signed]}}});
        std::fs::write(&p, doc.to_string()).unwrap();
        p
    };
    let cfg = src.config(
        &ctx.path(""),
        &src.catalog(),
        "    skipDependencies: true\n",
    );
    let ws = ctx.path("ws");
    let mirror_with = |policy: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "mirror",
            "--use-http",
            "--keep-going",
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            "--signature-policy",
            policy.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let d = format!("docker://{dest}");
        args.push(&d);
        signed_run(&ctx, &args)
    };

    // A policy that wants the bundles signed refuses them, names them, and pushes no catalog.
    let (code, _, err) = mirror_with(&policy("etcd"), &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.lines().any(|l| l.starts_with("error:")
            && l.contains("etcd-bundle")
            && l.contains("refused by the signature policy")),
        "{err}"
    );
    assert!(raw(&format!("{dest}/catalogs/operators:v1")).is_none());

    // A policy that wants the signed image signed passes; the catalog is signed with our key.
    let (code, _, err) = mirror_with(&policy("tools"), &["--sign-key", key.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("catalog signed:"), "{err}");
    // `image verify REF --key cosign.pub [EXTRA...]` at the destination.
    let verify = |reference: &str, extra: &[&str]| {
        let r = format!("{dest}/{reference}");
        let mut args = vec!["image", "verify", &r, "--key", public.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push("--use-http");
        signed_run(&ctx, &args)
    };
    let (code, _, err) = verify("catalogs/operators:v1", &[]);
    assert_eq!(
        code, 0,
        "the rebuilt catalog verifies at the destination: {err}"
    );
    // The source's signature of the additional image travelled with it.
    let (code, _, err) = verify("tools/ubi:9", &[]);
    assert_eq!(
        code, 1,
        "the copied signature names the source repository: {err}"
    );
    // It verifies with the key; only its identity is the source's.
    assert!(
        err.contains(&format!("identity \"{}/tools/ubi\"", src.host)),
        "{err}"
    );
    let source_repo = format!("{}/tools/ubi", src.host);
    let (code, _, err) = verify("tools/ubi:9", &["--signed-identity", &source_repo]);
    assert_eq!(code, 0, "--signed-identity names the source: {err}");

    // docs/mirror.md's policy for pulling from the mirror: exactRepository with the source
    // repository, per mirrored scope, accepts the copied signature (here, a second mirror
    // pulls from the first); remapIdentity cannot, since a cosign identity has no tag.
    let hop = ctx.path("hop.yaml");
    std::fs::write(
        &hop,
        format!(
            "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: {dest}/tools/ubi:9\n"
        ),
    )
    .unwrap();
    let pull_policy = |identity: serde_json::Value| {
        let p = ctx.path("pull-policy.json");
        let doc = serde_json::json!({"default": [{"type": "reject"}],
            "transports": {"docker": {format!("{dest}/tools/ubi"): [
                {"type": "sigstoreSigned", "keyPath": public, "signedIdentity": identity}]}}});
        std::fs::write(&p, doc.to_string()).unwrap();
        p
    };
    let second_hop = |policy: &std::path::Path, name: &str| {
        let ws = ctx.path(&format!("hop-{name}"));
        let d = format!("docker://{}/second", dst.host());
        signed_run(
            &ctx,
            &[
                "mirror",
                "--use-http",
                "--config",
                hop.to_str().unwrap(),
                "--workspace",
                ws.to_str().unwrap(),
                "--signature-policy",
                policy.to_str().unwrap(),
                &d,
            ],
        )
    };
    let exact = pull_policy(
        serde_json::json!({"type": "exactRepository", "dockerRepository": source_repo}),
    );
    let (code, _, err) = second_hop(&exact, "exact");
    assert_eq!(
        code, 0,
        "exactRepository accepts the copied signature: {err}"
    );
    let remap = pull_policy(serde_json::json!({"type": "remapIdentity",
        "prefix": dest, "signedPrefix": src.host}));
    let (code, _, err) = second_hop(&remap, "remap");
    assert_eq!(code, 1, "remapIdentity refuses a name-only identity: {err}");
    assert!(err.contains("refused by the signature policy"), "{err}");
}
