//! What a second run asks of the registries: nothing of the destination about an image an
//! earlier run completed (the workspace's record), the destination first for a source named by
//! digest (the source is not asked for a manifest the destination holds), signatures that
//! appeared at the source since still copied, and one connection per copying thread and side,
//! not one per image (the up-front check of each registry included).

use super::{mirror, raw, watch};
use crate::registry_support::ctx::Ctx;
use crate::registry_support::faults::Seen;
use crate::registry_support::throttle::Throttle;
use crate::registry_support::{sha, Entry, Image, Registry, OCI_MANIFEST};
use serde_json::json;

fn image(name: &str, arch: &'static str) -> Image {
    Image::new(&[("name", name)])
        .arch(arch)
        .layer(&[Entry::File(
            format!("app/{name}"),
            name.repeat(20).into_bytes(),
        )])
}

/// Pushes a cosign-style `.sig` tag for `digest` in `repo`; its tag and manifest digest.
fn sign(reg: &Registry, repo: &str, digest: &str) -> (String, String) {
    let payload = json!({"critical": {"image": {"docker-manifest-digest": digest},
        "type": "cosign container image signature"}})
    .to_string();
    let config = b"{}".to_vec();
    reg.push_blob(repo, payload.as_bytes());
    reg.push_blob(repo, &config);
    let sig = json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(&config), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": sha(payload.as_bytes()), "size": payload.len()}]})
    .to_string();
    let tag = format!("{}.sig", digest.replace(':', "-"));
    let d = reg.push_manifest(repo, &tag, OCI_MANIFEST, sig.as_bytes());
    (tag, d)
}

fn config(ctx: &Ctx, images: &[String]) -> String {
    let mut text = String::from(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n",
    );
    for i in images {
        text.push_str(&format!("  - name: {i}\n"));
    }
    let p = ctx.path("imageset.yaml");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

/// The requests a relay saw from `from` on, as `METHOD PATH`.
fn requests(seen: &[(Seen, &'static str)], from: usize) -> Vec<String> {
    seen[from..]
        .iter()
        .map(|(s, _)| format!("{} {}", s.method, s.path))
        .collect()
}

#[test]
fn a_rerun_finds_digest_sources_at_the_destination_and_still_copies_new_signatures() {
    let src = Registry::http();
    let src_relay = watch(&src);
    let dst = Registry::http();
    let dst_relay = watch(&dst);
    let (h, dest) = (
        format!("127.0.0.1:{}", src_relay.port),
        format!("127.0.0.1:{}/m", dst_relay.port),
    );
    let single = src.push("app/single", "v1", &image("single", "amd64"));
    let (amd, arm) = (image("multi", "amd64"), image("multi", "arm64"));
    let index = src.push_index(
        "app/multi",
        "v1",
        &[("linux", "amd64", &amd), ("linux", "arm64", &arm)],
    );
    let child = sha(&amd.manifest());
    src.push("app/tagged", "v1", &image("tagged", "amd64"));
    let ctx = Ctx::new();
    let cfg = config(
        &ctx,
        &[
            format!("{h}/app/single@{single}"),
            format!("{h}/app/multi@{index}"),
            format!("{h}/app/tagged:v1"),
        ],
    );
    let ws = ctx.path("ws");
    let args = [
        "--config",
        cfg.as_str(),
        "--workspace",
        ws.to_str().unwrap(),
        &format!("docker://{dest}"),
    ];
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");

    // Signed at the source after the first run: the single image, and one platform of the index.
    let (single_sig, single_sig_digest) = sign(&src, "app/single", &single);
    let (child_sig, child_sig_digest) = sign(&src, "app/multi", &child);
    let from = src_relay.seen.lock().unwrap().len();
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    let asked = requests(&src_relay.seen.lock().unwrap(), from);
    for (repo, digest) in [("app/single", &single), ("app/multi", &index)] {
        let path = format!("/v2/{repo}/manifests/{digest}");
        assert!(
            !asked.iter().any(|r| r.ends_with(&path)),
            "{repo}@{digest} is at the destination: the source is not asked for it: {asked:#?}"
        );
    }
    assert!(
        asked.iter().any(|r| r == "GET /v2/app/tagged/manifests/v1"),
        "a tag may have moved: the source is asked for it: {asked:#?}"
    );
    for (repo, tag, digest) in [
        ("app/single", &single_sig, &single_sig_digest),
        ("app/multi", &child_sig, &child_sig_digest),
    ] {
        let there = raw(&format!("{dest}/{repo}:{tag}"))
            .unwrap_or_else(|| panic!("{repo}:{tag}, signed since the first run, is copied"));
        assert_eq!(&sha(&there), digest);
    }

    // Nothing new: nothing sent, and the source asked for the tag, the tag lists and the
    // signatures they name.
    let (from, dst_from) = (
        src_relay.seen.lock().unwrap().len(),
        dst_relay.seen.lock().unwrap().len(),
    );
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    let sent: Vec<String> = requests(&dst_relay.seen.lock().unwrap(), dst_from)
        .into_iter()
        .filter(|r| !r.starts_with("GET ") && !r.starts_with("HEAD "))
        .collect();
    assert!(sent.is_empty(), "a rerun sends nothing: {sent:#?}");
    // The images are in the workspace's record of what was completed: the destination is asked
    // once whether it answers at all (its API root, before the work), then only whether it has
    // the signatures found at the source.
    let dst_asked = requests(&dst_relay.seen.lock().unwrap(), dst_from);
    assert_eq!(dst_asked.first().map(String::as_str), Some("GET /v2/"));
    assert!(
        dst_asked[1..]
            .iter()
            .all(|r| r.starts_with("HEAD ") && r.ends_with(".sig")),
        "{dst_asked:#?}"
    );
    assert!(ws.join("completed.tsv").is_file());
    let mut asked = requests(&src_relay.seen.lock().unwrap(), from);
    asked.retain(|r| !r.contains("/referrers/"));
    asked.sort();
    let mut want = vec![
        // The registry, once, before the work.
        "GET /v2/".to_string(),
        "GET /v2/app/multi/tags/list?n=1000".to_string(),
        "GET /v2/app/single/tags/list?n=1000".to_string(),
        "GET /v2/app/tagged/manifests/v1".to_string(),
        "GET /v2/app/tagged/tags/list?n=1000".to_string(),
        // The signature tags the lists name, for their digests.
        format!("HEAD /v2/app/multi/manifests/{child_sig}"),
        format!("HEAD /v2/app/single/manifests/{single_sig}"),
    ];
    want.sort();
    assert_eq!(asked, want);
}

/// Mirrors `count` images, `parallel` at a time, through counting relays, then again: the
/// connections the second run made to the source and to the destination.
fn rerun_connections(count: usize, parallel: &str) -> (usize, usize) {
    let src = Registry::http();
    let src_relay = Throttle::start(src.port, 0);
    let dst = Registry::http();
    let dst_relay = Throttle::start(dst.port, 0);
    let images: Vec<String> = (0..count)
        .map(|i| {
            let repo = format!("app/image{i}");
            src.push(&repo, "v1", &image(&repo, "amd64"));
            format!("{}/{repo}:v1", src_relay.host())
        })
        .collect();
    let ctx = Ctx::new();
    let cfg = config(&ctx, &images);
    let ws = ctx.path("ws");
    let args = [
        "--parallel-images",
        parallel,
        "--config",
        cfg.as_str(),
        "--workspace",
        ws.to_str().unwrap(),
        &format!("docker://{}/m", dst_relay.host()),
    ];
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    let (src_before, dst_before) = (src_relay.connections(), dst_relay.connections());
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    (
        src_relay.connections() - src_before,
        dst_relay.connections() - dst_before,
    )
}

#[test]
fn the_images_of_a_run_share_connections() {
    // Two images at a time: a connection each to either side, kept from image to image.
    let (to_src, to_dst) = rerun_connections(8, "2");
    assert!(
        to_src <= 3 && to_dst <= 3,
        "8 images, 2 at a time, made {to_src} connections to the source and {to_dst} to the destination"
    );
}

#[test]
fn the_up_front_check_leaves_its_connection_for_the_images() {
    // Each registry's API root is asked first; the rest of the run goes over that connection.
    assert_eq!(
        rerun_connections(1, "1"),
        (1, 1),
        "one image, one at a time: connections made to the source and to the destination"
    );
}
