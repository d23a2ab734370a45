//! `opreg mirror` between two real `docker-registry` instances on loopback, checked with
//! `skopeo` as the independent client, with the destination's requests counted by a relay in
//! front of it (it sees every request), and the mirrored catalog served by `opreg serve`.

use crate::common;
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::faults::{Action, Faults, Seen};
use crate::registry_support::{pki, sha, Registry};
use std::process::Command;

mod additional;
mod delete;
mod delete_crash;
mod delete_disk;
mod delete_space;
mod insecure;
mod prune;
mod registries;
mod rerun;

/// `skopeo inspect --raw`'s bytes of a reference, or `None` when it is not there.
pub fn raw(reference: &str) -> Option<Vec<u8>> {
    let out = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo is installed");
    out.status.success().then_some(out.stdout)
}

/// The destination of a source reference under `dest` (`HOST/PREFIX`).
pub fn at(src: &Source, dest: &str, reference: &str) -> String {
    reference.replacen(&src.host, dest, 1)
}

/// A relay that passes everything to `reg` and remembers it.
pub fn watch(reg: &Registry) -> Faults {
    Faults::start(reg.port, Box::new(|_: &Seen, _| Action::Relay))
}

/// Blob uploads the destination was sent (a PUT that completes one), and mounts asked for.
fn uploads(f: &Faults) -> (Vec<String>, usize) {
    let seen = f.seen.lock().unwrap();
    let puts = seen
        .iter()
        .filter(|(s, _)| s.method == "PUT" && s.path.contains("/blobs/uploads/"))
        .map(|(s, _)| s.path.clone())
        .collect();
    let mounts = seen
        .iter()
        .filter(|(s, _)| s.method == "POST" && s.path.contains("mount="))
        .count();
    (puts, mounts)
}

fn mirror(ctx: &Ctx, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["mirror", "--use-http"];
    all.extend_from_slice(args);
    ctx.run(&all)
}

#[test]
fn a_mirror_copies_the_filtered_catalog_its_images_dependencies_and_signatures() {
    let src = Source::start();
    let dst = Registry::http();
    let relay = watch(&dst);
    let dest = format!("127.0.0.1:{}/mirror", relay.port);
    let ctx = Ctx::new();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let ws = ctx.path("ws");
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &format!("docker://{dest}"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Off a terminal, progress goes to the log: the catalog as soon as it is pinned, then one
    // line an image.
    let pinned = err.find("pinned to").expect("the catalog's pinned line");
    let first_image = err.find("image done").expect("a line an image");
    assert!(pinned < first_image, "{err}");

    // Every image the selection needs is there, with the source's digest; others are not.
    for r in src.expected(true) {
        let there = raw(&at(&src, &dest, &r)).unwrap_or_else(|| panic!("{r} not mirrored: {err}"));
        let want = match r.split_once('@') {
            Some((_, d)) => d.to_string(),
            None => src.images[&r].clone(),
        };
        assert_eq!(sha(&there), want, "{r}: the digest is kept");
    }
    let op = src
        .images
        .keys()
        .find(|k| k.contains("etcd-operator@"))
        .unwrap()
        .clone();
    let op_raw = raw(&at(&src, &dest, &op)).expect("the multi-arch operator image is mirrored");
    assert_eq!(sha(&op_raw), src.images[&op]);
    for not in [
        "other/other-bundle:v1",
        "blocked/thing:1",
        "etcd/etcd-bundle:v1.0.0",
        "dep/dep-bundle:v1.0.0",
    ] {
        assert!(
            raw(&format!("{dest}/{not}")).is_none(),
            "{not} is not selected"
        );
    }
    // The signature tag travelled, byte for byte.
    let (sig_tag, sig_digest) = &src.signature;
    let sig =
        raw(&format!("{dest}/etcd/etcd-operator:{sig_tag}")).expect("the .sig tag is mirrored");
    assert_eq!(&sha(&sig), sig_digest);
    // The image named by digest only got a tag, so garbage collection keeps it.
    let tags = Command::new("skopeo")
        .args([
            "list-tags",
            "--tls-verify=false",
            &format!("docker://{dest}/etcd/etcd-bundle"),
        ])
        .output()
        .unwrap();
    let tags = String::from_utf8_lossy(&tags.stdout).to_string();
    let by_digest = &src.images[&format!("{}/etcd/etcd-bundle:v1.2.0", src.host)];
    assert!(
        tags.contains(&format!("mirror-{}", by_digest.replace(':', "-"))),
        "{tags}"
    );

    // A blob every image shares went up once; the other repositories mounted it.
    let (puts, mounts) = uploads(&relay);
    assert!(mounts > 0, "shared blobs are mounted across repositories");
    let mut unique = puts.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), puts.len(), "no blob uploaded twice");

    // The plan's record, and the catalog served from the destination answers OLM's snapshot
    // with every bundle image resolvable at the destination.
    let mapping = std::fs::read_to_string(ws.join("mapping.txt")).unwrap();
    assert!(
        mapping.contains(&format!(
            "docker://{}/tools/ubi:9=docker://{dest}/tools/ubi:9",
            src.host
        )),
        "{mapping}"
    );
    let plan = std::fs::read_to_string(ws.join("plan.json")).unwrap();
    assert!(
        plan.contains("dep.v1.1.0") && plan.contains("required by"),
        "{plan}"
    );
    snapshot(
        &src,
        &dest,
        &format!("{dest}/catalogs/operators:v1"),
        &["dep", "etcd"],
    );
    // The cluster resources point a cluster at the copies.
    let res = ws.join("cluster-resources");
    let idms = std::fs::read_to_string(res.join("idms-oc-mirror.yaml")).unwrap();
    assert!(
        idms.contains("kind: ImageDigestMirrorSet")
            && idms.contains(&format!("source: {}/etcd", src.host))
            && idms.contains(&format!("- {dest}/etcd")),
        "{idms}"
    );
    let itms = std::fs::read_to_string(res.join("itms-oc-mirror.yaml")).unwrap();
    assert!(
        itms.contains(&format!("source: {}/tools", src.host)),
        "{itms}"
    );
    let cs = std::fs::read_to_string(res.join("cs-operators-v1.yaml")).unwrap();
    assert!(
        cs.contains(&format!("image: {dest}/catalogs/operators:v1")),
        "{cs}"
    );
    assert!(res.join("cc-operators-v1.yaml").is_file());

    // A second run copies nothing.
    let before = relay.seen.lock().unwrap().len();
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &format!("docker://{dest}"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let seen = relay.seen.lock().unwrap();
    let again: Vec<&Seen> = seen[before..]
        .iter()
        .map(|(s, _)| s)
        .filter(|s| s.method == "POST" || (s.method == "PUT" && s.path.contains("/blobs/")))
        .collect();
    assert!(again.is_empty(), "a rerun uploads nothing: {again:?}");
}

/// ListPackages, then GetPackage and GetBundleForChannel for every channel, from `opreg serve
/// CATALOG` at the destination; each bundle image, mapped to the destination, is there.
pub fn snapshot(src: &Source, dest: &str, catalog: &str, want: &[&str]) {
    let server = common::Server::start(&[catalog, "--use-http"]);
    let rt = common::rt();
    let paths = rt.block_on(async {
        let mut c = server.registry().await;
        let mut s = c
            .list_packages(opreg::api::ListPackageRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut names = Vec::new();
        while let Some(p) = s.message().await.unwrap() {
            names.push(p.name);
        }
        names.sort();
        assert_eq!(names, want);
        let mut paths = Vec::new();
        for n in names {
            let p = c
                .get_package(opreg::api::GetPackageRequest { name: n.clone() })
                .await
                .unwrap()
                .into_inner();
            for ch in p.channels {
                let b = c
                    .get_bundle_for_channel(opreg::api::GetBundleInChannelRequest {
                        pkg_name: n.clone(),
                        channel_name: ch.name.clone(),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                paths.push(b.bundle_path);
            }
        }
        paths
    });
    assert_eq!(paths.len(), want.len());
    for p in paths {
        assert!(
            raw(&at(src, dest, &p)).is_some(),
            "bundle image {p} is at the destination"
        );
    }
}

#[test]
fn skip_dependencies_gives_oc_mirrors_selection_and_a_dry_run_copies_nothing() {
    let src = Source::start();
    let dst = Registry::http();
    let relay = watch(&dst);
    let dest = format!("127.0.0.1:{}", relay.port);
    let ctx = Ctx::new();
    let ws = ctx.path("ws");
    let cfg = src.config(
        &ctx.path(""),
        &src.catalog(),
        "    skipDependencies: true\n",
    );
    let args = |dry: bool| {
        let mut v = vec![
            "--config".to_string(),
            cfg.display().to_string(),
            "--workspace".into(),
            ws.display().to_string(),
        ];
        if dry {
            v.push("--dry-run".into());
        }
        v.push(format!("docker://{dest}"));
        v
    };
    let dry = args(true);
    let dry: Vec<&str> = dry.iter().map(String::as_str).collect();
    let (code, _, err) = mirror(&ctx, &dry);
    assert_eq!(code, 0, "{err}");
    let writes: Vec<String> = relay
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| s.method != "GET" && s.method != "HEAD")
        .map(|(s, _)| format!("{} {}", s.method, s.path))
        .collect();
    assert!(writes.is_empty(), "a dry run writes nothing: {writes:?}");
    let mapping = std::fs::read_to_string(ws.join("dry-run/mapping.txt")).unwrap();
    let h = &src.host;
    assert!(
        mapping.contains(&format!(
            "docker://{h}/tools/ubi:9=docker://{dest}/tools/ubi:9\n"
        )),
        "{mapping}"
    );
    assert!(
        mapping.contains(&src.signature.0),
        "signature tags on lines of their own: {mapping}"
    );
    assert!(
        !mapping.contains("dep-bundle"),
        "skipDependencies adds nothing: {mapping}"
    );
    assert!(!mapping.contains("blocked/thing"), "{mapping}");
    assert!(ws
        .join("dry-run/cluster-resources/itms-oc-mirror.yaml")
        .is_file());
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("dry-run/plan.json")).unwrap())
            .unwrap();
    let ubi = plan["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["source"].as_str().unwrap().ends_with("ubi:9"))
        .unwrap();
    assert!(
        ubi["bytes"].as_u64().unwrap() > 0 && ubi["blobsAtDestination"] == 0,
        "{ubi}"
    );
    // The filtered catalog, as it would be pushed, for review: valid, said where, each kept
    // bundle with its reasons in the plan and a count per package on stderr.
    let filtered = ws.join("dry-run/catalogs/catalogs/operators/v1");
    assert!(
        err.contains(&format!(
            "filtered catalog of {}: {}",
            src.catalog(),
            filtered.display()
        )),
        "{err}"
    );
    let (code, _, e) = ctx.run(&["validate", filtered.to_str().unwrap()]);
    assert_eq!(code, 0, "{e}");
    let why = &plan["catalogs"][0]["why"];
    for (pkg, bundles) in plan["catalogs"][0]["kept"].as_object().unwrap() {
        for b in bundles.as_array().unwrap() {
            let reasons = &why[pkg][b.as_str().unwrap()];
            assert!(!reasons.as_array().unwrap().is_empty(), "{pkg} {b}: {why}");
        }
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("package {pkg}: ")) && l.contains(" kept: ")),
            "{err}"
        );
    }
    assert!(why.to_string().contains("head of channel"), "{why}");
    // `opreg diff SOURCE FILTERED` reads both: a review of what the filter left out.
    let (code, _, e) = ctx.run(&[
        "diff",
        &src.catalog(),
        filtered.to_str().unwrap(),
        "--use-http",
    ]);
    assert!(code == 0 || code == 1, "diff read both: {e}");
    // Written even when the destination cannot be reached (the images reported).
    let closed = format!(
        "docker://127.0.0.1:{}",
        crate::registry_support::free_port()
    );
    let ws2 = ctx.path("ws2");
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--dry-run",
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws2.to_str().unwrap(),
            &closed,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("connection refused"), "{err}");
    // What the source holds is still counted whole, and the total says what it could not ask.
    assert!(
        err.contains("the destination could not be asked about"),
        "{err}"
    );
    let plan2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ws2.join("dry-run/plan.json")).unwrap())
            .unwrap();
    for (a, b) in plan["images"]
        .as_array()
        .unwrap()
        .iter()
        .zip(plan2["images"].as_array().unwrap())
    {
        assert_eq!(a["blobs"], b["blobs"], "{a} {b}");
        assert_eq!(a["bytes"], b["bytes"], "{a} {b}");
    }
    let (code, _, e) = ctx.run(&[
        "validate",
        ws2.join("dry-run/catalogs/catalogs/operators/v1")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(code, 0, "{e}");

    let real = args(false);
    let real: Vec<&str> = real.iter().map(String::as_str).collect();
    let (code, _, err) = mirror(&ctx, &real);
    assert_eq!(code, 0, "{err}");
    for r in src.expected(false) {
        assert!(raw(&at(&src, &dest, &r)).is_some(), "{r}");
    }
    assert!(
        raw(&format!("{dest}/dep/dep-bundle:v1.1.0")).is_none(),
        "skipDependencies: no dependency copied"
    );
    // Everything is there now: the dry run says so.
    let (code, _, err) = mirror(&ctx, &dry);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("dry run: 0 images to copy ("), "{err}");
    assert!(err.contains(", 0 B to send;"), "{err}");
}

#[test]
fn failures_are_retried_reported_and_keep_going_carries_on() {
    // The source answers some requests 429, 503 or with a reset, and one image's blobs
    // always 500.
    let src = Source::start_with(Some(Box::new(move |s: &Seen, n| {
        if s.path.contains("/tools/ubi/blobs/") {
            return Action::Answer(500, vec![]);
        }
        match n % 7 {
            3 => Action::Answer(429, vec![("Retry-After".into(), "1".into())]),
            5 => Action::Answer(503, vec![]),
            6 => Action::Reset,
            _ => Action::Relay,
        }
    })));
    let relay = src.relay.as_ref().unwrap();
    let dst = Registry::http();
    let dest = format!("{}/m", dst.host());
    let ctx = Ctx::new();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let ws = ctx.path("ws");
    let (code, _, err) = mirror(
        &ctx,
        &[
            "--keep-going",
            "--parallel-images",
            "1",
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            &format!("docker://{dest}"),
        ],
    );
    assert_eq!(code, 1, "a failed image fails the run: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let failed: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(
        failed
            .iter()
            .any(|l| l.contains("tools/ubi:9") && l.contains("500")),
        "the summary names the image and the status: {err}"
    );
    let held = failed
        .iter()
        .find(|l| l.contains("no catalog was pushed"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        held.contains("run the same command again") && held.contains("blockedImages"),
        "how to proceed: {held}"
    );
    // With --keep-going the filtered catalog is in the workspace anyway, and valid.
    let filtered = ws.join("catalogs/catalogs/operators/v1");
    assert!(err.contains(&filtered.display().to_string()), "{err}");
    let (code, _, e) = ctx.run(&["validate", filtered.to_str().unwrap()]);
    assert_eq!(code, 0, "{e}");
    // To disk nothing is pushed: no word of pushing.
    let disk = format!("file://{}", ctx.path("disk").display());
    let (code, _, err) = mirror(
        &ctx,
        &["--keep-going", "--config", cfg.to_str().unwrap(), &disk],
    );
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("pushed"), "{err}");
    // An image on disk is named by its source: once, not "X -> X".
    let failed: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(
        failed.iter().any(|l| l.contains("tools/ubi:9"))
            && failed.iter().all(|l| !l.contains(" -> ")),
        "{err}"
    );
    // The others were copied despite the 429s, 503s and resets.
    let bundle = format!("{}/dep/dep-bundle:v1.1.0", src.host);
    assert!(raw(&at(&src, &dest, &bundle)).is_some(), "{err}");
    assert!(relay.count("answered") > 3, "faults were injected");
    assert!(
        raw(&format!("{dest}/catalogs/operators:v1")).is_none(),
        "no catalog without its images"
    );
}

#[test]
fn a_destination_behind_a_private_ca_is_trusted_with_dest_cert_dir() {
    let src = Source::start();
    let ctx = Ctx::new();
    let ca = pki::Pki::new(&ctx.path("pki"));
    let dst = Registry::private_ca(&ca, false);
    let certs = ctx.path("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::copy(ca.dir.join("certs/ca.crt"), certs.join("ca.crt")).unwrap();
    let cfg = src.config(
        &ctx.path(""),
        &src.catalog(),
        "    skipDependencies: true\n",
    );
    let dest = format!("docker://{}/m", dst.host());
    let base = [
        "mirror",
        "--src-use-http",
        "--config",
        cfg.to_str().unwrap(),
        "--workspace",
    ];
    let ws = ctx.path("ws");
    let mut untrusted: Vec<&str> = base.to_vec();
    untrusted.extend([ws.to_str().unwrap(), &dest]);
    let (code, _, err) = ctx.run(&untrusted);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("certificate"),
        "names the certificate problem: {err}"
    );
    // Once, for the registry, before anything was copied: not once per image.
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains(&format!("registry {}", dst.host()))
            && errors[0].contains("nothing was copied"),
        "{err}"
    );
    let mut trusted: Vec<&str> = base.to_vec();
    trusted.extend([
        ws.to_str().unwrap(),
        "--dest-cert-dir",
        certs.to_str().unwrap(),
        &dest,
    ]);
    let (code, _, err) = ctx.run(&trusted);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn bad_input_is_one_line_and_copies_nothing() {
    let ctx = Ctx::new();
    let cfg = ctx.path("bad.yaml");
    std::fs::write(&cfg, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  helm:\n    repositories:\n    - name: x\n").unwrap();
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--config",
        cfg.to_str().unwrap(),
        "docker://127.0.0.1:1/x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.yaml") && err.contains("helm"), "{err}");
    let (code, _, err) = ctx.run(&["mirror", "--config", cfg.to_str().unwrap(), "http://x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("docker://REGISTRY"), "{err}");
}

/// The digests of the blob uploads the destination completed (their final PUT), from `from` on.
pub fn put_digests(f: &Faults, from: usize) -> Vec<String> {
    f.seen.lock().unwrap()[from..]
        .iter()
        .filter(|(s, _)| s.method == "PUT" && s.path.contains("/blobs/uploads/"))
        .filter_map(|(s, _)| {
            s.path
                .split("digest=")
                .nth(1)
                .map(|d| d.replace("%3A", ":"))
        })
        .map(|d| d.split('&').next().unwrap_or("").to_string())
        .collect()
}
