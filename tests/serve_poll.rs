//! `opreg serve IMAGE --poll-interval D` against a real registry (Debian's `docker-registry` on
//! loopback): a catalog image pushed under a tag is served; another pushed under the same tag
//! is served after the next polls, and polls that find the tag unchanged pull nothing.

use crate::common;
use crate::registry_support;

use registry_support::ctx::*;
use registry_support::*;
use std::time::{Duration, Instant};

/// Package names, or `None` when the call failed: a call sent in the instant a swap's GOAWAY
/// reaches its fresh connection is refused unprocessed (grpc-go would send it again; tonic
/// does not, see tests/swap.rs), and this loop only waits for the new content.
fn try_list_packages(server: &common::Server) -> Option<Vec<String>> {
    let rt = common::rt();
    rt.block_on(async {
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

#[test]
fn a_moved_tag_is_reloaded_and_an_unchanged_one_is_not_pulled() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    let both = ctx.path("both");
    std::fs::create_dir_all(&both).unwrap();
    std::fs::copy(etcd.join("catalog.json"), both.join("etcd.json")).unwrap();
    let prom = fbc_dir(&ctx, "prometheus");
    std::fs::copy(prom.join("catalog.json"), both.join("prometheus.json")).unwrap();

    reg.push("catalogs/poll", "latest", &catalog_image(&etcd));
    let reference = format!("{}/catalogs/poll:latest", reg.host());
    let server = common::Server::start(&[
        &reference,
        "--use-http",
        "--no-image-cache",
        "--poll-interval",
        "500ms",
    ]);
    assert_eq!(list_packages(&server), vec!["etcd".to_string()]);

    let v2 = reg.push("catalogs/poll", "latest", &catalog_image(&both));
    let start = Instant::now();
    loop {
        let names = try_list_packages(&server).unwrap_or_default();
        if names == vec!["etcd".to_string(), "prometheus".to_string()] {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the new image was not served within 60 s ({names:?}):\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = server.log();
    assert!(log.contains("the image tag moved"), "{log}");
    assert!(log.contains(&v2), "the reload names the new digest: {log}");
    let moved = log
        .lines()
        .find(|l| l.contains("the image tag moved"))
        .unwrap();
    assert!(
        !moved.contains("Some(") && moved.contains("served=sha256:"),
        "the digest served, as a digest: {moved}"
    );
    // More polls of the unchanged tag: no further pull (one at start-up, one reload).
    std::thread::sleep(Duration::from_secs(2));
    let log = server.log();
    assert_eq!(log.matches("image resolved").count(), 2, "{log}");
    assert_eq!(
        log.matches("reloaded: serving the new version").count(),
        1,
        "{log}"
    );
    assert_eq!(list_packages(&server), vec!["etcd", "prometheus"]);
    assert_eq!(server.terminate(), Some(0));
}

#[test]
fn poll_interval_needs_an_image_source_and_a_duration() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, _, err) = common::opreg(&["serve", d, "--poll-interval", "1s", "-t", "/dev/null"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--poll-interval needs an image SOURCE"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    for bad in ["1", "soon", "10ms", "0s"] {
        let (code, _, err) =
            common::opreg(&["serve", "quay.io/x/y:latest", "--poll-interval", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--poll-interval"), "{err}");
    }
}
