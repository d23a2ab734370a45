//! The per-call log of a server (one line per call: method, status, duration, bytes, messages),
//! against the real binary: every call is logged exactly once, in order, and the lines reach
//! stderr without further traffic (a server batches them: src/cli/log_sink.rs); a burst larger
//! than the batch is logged whole; `--no-call-log` logs none.

use crate::common;
use common::*;
use opreg::api;
use std::time::{Duration, Instant};

const GET_PACKAGE: &str = "method=/api.Registry/GetPackage ";

fn call_lines(log: &str, method: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("grpc call") && l.contains(method))
        .map(str::to_string)
        .collect()
}

/// Waits up to 5 s for `n` lines of `method`; returns them.
fn wait_for_lines(server: &Server, method: &str, n: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let lines = call_lines(&server.log(), method);
        if lines.len() >= n || start.elapsed() > Duration::from_secs(5) {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn get_package(server: &Server, name: &str) -> Result<api::Package, tonic::Status> {
    let mut c = server.registry().await;
    c.get_package(api::GetPackageRequest { name: name.into() })
        .await
        .map(|r| r.into_inner())
}

#[test]
fn every_call_is_logged_once_in_order_without_further_traffic() {
    let server = Server::start(&[]); // the demo catalog
    let bundles = rt().block_on(async {
        get_package(&server, "example").await.unwrap();
        assert!(get_package(&server, "no-such-package").await.is_err());
        get_package(&server, "example").await.unwrap();
        let mut c = server.registry().await;
        let s = c.list_bundles(api::ListBundlesRequest {}).await.unwrap();
        count_stream(s.into_inner()).await
    });
    // No call after these: the lines must still arrive.
    let lines = wait_for_lines(&server, GET_PACKAGE, 3);
    let statuses: Vec<bool> = lines.iter().map(|l| l.contains(" status=OK ")).collect();
    assert_eq!(statuses, [true, false, true], "{lines:#?}");
    assert!(lines[1].contains(" status=NotFound "), "{}", lines[1]);
    for l in &lines {
        assert!(l.contains(" INFO "), "{l}");
        assert!(l.contains("duration_ms="), "{l}");
        assert!(l.contains(" bytes=") && l.contains(" messages="), "{l}");
    }
    let list = wait_for_lines(&server, "method=/api.Registry/ListBundles ", 1);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert!(
        list[0].contains(&format!("messages={bundles}")),
        "{} should count {bundles} messages",
        list[0]
    );
    // Once each, also after more time has passed.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(call_lines(&server.log(), GET_PACKAGE).len(), 3);
}

#[test]
fn a_burst_larger_than_the_batch_is_logged_whole() {
    let server = Server::start(&[]);
    // About 150 bytes a line: 400 lines are several batches of 16 KiB.
    const CALLS: usize = 400;
    rt().block_on(async {
        let mut c = server.registry().await;
        for _ in 0..CALLS {
            c.get_package(api::GetPackageRequest {
                name: "example".into(),
            })
            .await
            .unwrap();
        }
    });
    let lines = wait_for_lines(&server, GET_PACKAGE, CALLS);
    assert_eq!(lines.len(), CALLS);
    // Whole lines only: every line ends with its last field.
    assert!(lines.iter().all(|l| l.trim_end().ends_with("messages=1")));
}

#[test]
fn no_call_log_logs_no_calls() {
    let server = Server::start(&["--no-call-log"]);
    rt().block_on(async { get_package(&server, "example").await.unwrap() });
    std::thread::sleep(Duration::from_millis(600));
    let log = server.log();
    assert!(call_lines(&log, "method=").is_empty(), "{log}");
    assert!(
        log.contains("serving"),
        "the other lines are still logged: {log}"
    );
}
