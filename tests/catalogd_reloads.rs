//! catalogd's HTTP API across reloads, against the real binary (`opreg serve --http-port`):
//! SIGHUP reloads and an invalid version is kept out; `--watch` lands changes within 5 s and
//! survives a deleted directory. The catalog and clients are tests/catalogd_http.rs's.

use super::catalogd_http::{catalogd_lines, get, metric, start, CATALOG};
use crate::common;
use std::time::{Duration, Instant};

/// Waits until `/all` answers something other than `old`; returns it and the wait.
fn wait_change(url: &str, old: &str, limit: Duration) -> (String, Duration) {
    let start = Instant::now();
    loop {
        let body = common::rt().block_on(async { get(url, reqwest::Method::GET, &[]).await.2 });
        if body != old {
            return (body, start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "content did not change within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn sighup_reloads_and_an_invalid_version_is_kept_out() {
    let s = start(&[]);
    let url = format!("http://127.0.0.1:{}/catalogs/catalog/api/v1/all", s.http);
    let before = catalogd_lines(&s.src);
    let lm = |h: &reqwest::header::HeaderMap| httpdate_secs(h["last-modified"].to_str().unwrap());
    let (_, h0, _) = common::rt().block_on(async { get(&url, reqwest::Method::GET, &[]).await });
    // A valid change: a second channel.
    std::fs::write(
        s.src.join("c.yaml"),
        CATALOG.to_string()
            + "---\nschema: olm.channel\npackage: webhook-operator-test\nname: beta\nentries:\n  - name: bundle.v0.0.1\n",
    )
    .unwrap();
    common::unsafe_kill(s.server.child.id() as i32, 1);
    let (after, _) = wait_change(&url, &before, Duration::from_secs(20));
    assert_eq!(after, catalogd_lines(&s.src));
    let (_, h1, _) = common::rt().block_on(async { get(&url, reqwest::Method::GET, &[]).await });
    assert!(lm(&h1) > lm(&h0), "Last-Modified moves forward");
    // gRPC sees the new channel too.
    common::rt().block_on(async {
        let mut reg = s.server.registry().await;
        let p = reg
            .get_package(opreg::api::GetPackageRequest {
                name: "webhook-operator-test".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.channels.len(), 2);
    });
    // An invalid change: logged, counted, not served.
    std::fs::write(
        s.src.join("c.yaml"),
        CATALOG.replace("defaultChannel: preview_test", "defaultChannel: nope"),
    )
    .unwrap();
    common::unsafe_kill(s.server.child.id() as i32, 1);
    let metrics = format!("http://127.0.0.1:{}/metrics", s.http);
    let start = Instant::now();
    loop {
        let text =
            common::rt().block_on(async { get(&metrics, reqwest::Method::GET, &[]).await.2 });
        if metric(&text, "opreg_catalog_reloads_total{result=\"invalid\"}") == Some(1.0) {
            assert_eq!(
                metric(&text, "opreg_catalog_last_reload_success"),
                Some(0.0)
            );
            assert_eq!(
                metric(&text, "opreg_catalog_reloads_total{result=\"ok\"}"),
                Some(1.0)
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "invalid reload not counted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let still = common::rt().block_on(async { get(&url, reqwest::Method::GET, &[]).await.2 });
    assert_eq!(still, after);
}

fn httpdate_secs(s: &str) -> u64 {
    httpdate::parse_http_date(s)
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn watch_lands_changes_within_5s_and_survives_a_deleted_dir() {
    let s = start(&["--watch"]);
    let url = format!("http://127.0.0.1:{}/catalogs/catalog/api/v1/all", s.http);
    let before = catalogd_lines(&s.src);
    std::thread::sleep(Duration::from_millis(300));
    // A storm of writes: debounced into few builds.
    for i in 0..20 {
        std::fs::write(
            s.src.join("c.yaml"),
            CATALOG.replace("arbitrary-info", &format!("info-{i}")),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let (after, waited) = wait_change(&url, &before, Duration::from_secs(5));
    assert!(after.contains("info-19") || waited < Duration::from_secs(5));
    let (after, _) = if after.contains("info-19") {
        (after, waited)
    } else {
        wait_change(&url, &after, Duration::from_secs(5))
    };
    assert!(after.contains("info-19"), "the last write wins");
    // Deleting the watched directory keeps the served version.
    std::fs::remove_dir_all(&s.src).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let (code, _, body) =
        common::rt().block_on(async { get(&url, reqwest::Method::GET, &[]).await });
    assert_eq!((code, body), (200, after));
    let metrics = format!("http://127.0.0.1:{}/metrics", s.http);
    let text = common::rt().block_on(async { get(&metrics, reqwest::Method::GET, &[]).await.2 });
    let ok = metric(&text, "opreg_catalog_reloads_total{result=\"ok\"}").unwrap_or(0.0);
    assert!(
        (1.0..=4.0).contains(&ok),
        "debounced: {ok} builds for 20 writes\n{text}"
    );
}
