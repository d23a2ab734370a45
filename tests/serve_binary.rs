//! `opreg serve` as the real binary: the demo catalog served without a SOURCE, a built database
//! served directly, a fatal start-up error's exit code and termination log, the cache flags
//! with opm's semantics, and answers from a built store (synthesized CSVs equal to the model's
//! wire form, the replacement closest to the head).

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use super::serve::{bundle, bundle_for_channel, collect, package, replacement};
use crate::common;
use common::*;
use opreg::api;
use serde_json::Value;
use std::collections::BTreeSet;
use tonic::Code;

#[test]
fn demo_catalog_is_served_without_a_source() {
    let server = Server::start(&[]);
    rt().block_on(async {
        let mut c = server.registry().await;
        let names: BTreeSet<String> = collect(
            c.list_packages(api::ListPackageRequest {})
                .await
                .unwrap()
                .into_inner(),
        )
        .await
        .into_iter()
        .map(|p| p.name)
        .collect();
        assert_eq!(
            names,
            BTreeSet::from(["cve-demo".into(), "example".into(), "zstream".into()])
        );
        let b = bundle_for_channel(&mut c, "example", "stable")
            .await
            .unwrap();
        assert_eq!(b.csv_name, "example.v3.0.0");
        // csvJson is synthesized from olm.csv.metadata.
        let csv: Value = serde_json::from_str(&b.csv_json).unwrap();
        assert_eq!(csv["kind"], "ClusterServiceVersion");
        assert_eq!(csv["apiVersion"], "operators.coreos.com/v1alpha1");
        assert_eq!(csv["spec"]["displayName"], "Example Operator");
        assert_eq!(csv["spec"]["version"], "3.0.0");
        assert_eq!(b.object.len(), 1);
        let r = replacement(&mut c, "example.v2.0.0", "example", "stable")
            .await
            .unwrap();
        assert_eq!(r.csv_name, "example.v3.0.0");
    });
}

#[test]
fn serving_a_built_database_directly() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    ingest_ok(&shared("upstream-manifests"), &db);
    let server = Server::start(&[db.to_str().unwrap()]);
    rt().block_on(async {
        let mut c = server.registry().await;
        let all = collect(
            c.list_bundles(api::ListBundlesRequest {})
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
        assert_eq!(all.len(), 20);
    });
    assert_eq!(server.terminate(), Some(0), "SIGTERM must exit 0");
}

#[test]
fn fatal_start_up_error_exits_1_with_termination_log() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&bad, "---\nschema: olm.package\nname: p\n").unwrap();
    let log = tmp.path().join("termination-log");
    let port = free_port().to_string();
    let out = std::process::Command::new(bin())
        .args([
            "serve",
            bad.to_str().unwrap(),
            "-p",
            &port,
            "-t",
            log.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let reason = std::fs::read_to_string(&log).unwrap();
    assert!(reason.contains("default channel must be set"), "{reason}");
    assert_eq!(reason.trim_end().lines().count(), 1, "one line: {reason}");
}

#[test]
fn cache_dir_flags_follow_opm_semantics() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let src = shared("upstream-manifests");
    let (s, c) = (src.to_str().unwrap(), cache.to_str().unwrap());
    // Enforced integrity (the default with --cache-dir) refuses a missing cache.
    let port = free_port().to_string();
    let (code, _, err) = opreg(&["serve", s, "--cache-dir", c, "-p", &port, "-t", "/dev/null"]);
    assert_eq!(code, 1);
    assert!(err.contains("integrity check failed"), "{err}");
    // --cache-only builds it and exits 0 without serving.
    let (code, _, err) = opreg(&["serve", s, "--cache-dir", c, "--cache-only"]);
    assert_eq!(code, 0, "{err}");
    assert!(cache.join("opreg-catalog.db").exists());
    // Now the enforced cache matches and is served.
    let server = Server::start(&[s, "--cache-dir", c]);
    rt().block_on(async {
        let mut cl = server.registry().await;
        let p = package(&mut cl, "etcd").await.unwrap();
        assert_eq!(p.default_channel_name, "alpha");
    });
    drop(server);
    // Another source against the same cache: enforced integrity refuses it.
    let (code, _, err) = opreg(&[
        "serve",
        fixture("deprecations").to_str().unwrap(),
        "--cache-dir",
        c,
        "-p",
        &port,
        "-t",
        "/dev/null",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("integrity check failed"), "{err}");
    // Without enforcement a stale cache is rebuilt.
    let server = Server::start(&[
        fixture("deprecations").to_str().unwrap(),
        "--cache-dir",
        c,
        "--cache-enforce-integrity=false",
    ]);
    rt().block_on(async {
        let mut cl = server.registry().await;
        assert!(cl
            .get_package(api::GetPackageRequest {
                name: "kiwi".into()
            })
            .await
            .is_ok());
    });
}

/// The store keeps only a marker for CSVs synthesized from olm.csv.metadata and builds them when
/// a bundle is read. What it serves must equal the wire form computed from the model, for real
/// bundles with icons, descriptions and related images: every 40th community bundle.
#[test]
fn synthesized_csvs_served_from_the_store_equal_the_model_wire_form() {
    let src = corpus_valid("community-operators.fbc.json");
    let cat = opreg::source::load_sources(std::slice::from_ref(&src), &mut Vec::new()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    ingest_ok(&src, &db);
    let server = Server::start(&[db.to_str().unwrap()]);
    let mut checked = 0;
    rt().block_on(async {
        let mut c = server.registry().await.max_decoding_message_size(64 << 20);
        let bundles = cat
            .packages
            .values()
            .flat_map(|p| p.bundles.values().map(move |b| (p, b)));
        for (pkg, b) in bundles.step_by(40) {
            let Some(ch) = pkg
                .channels
                .values()
                .find(|ch| ch.entries.iter().any(|e| e.name == b.name))
            else {
                continue;
            };
            let want = opreg::wire::full_wire(pkg, b);
            let got = bundle(&mut c, pkg.name.clone(), ch.name.clone(), b.name.clone())
                .await
                .unwrap();
            assert_eq!(got.csv_json, want.csv_json, "{}", b.name);
            assert_eq!(got.object, want.object, "{}", b.name);
            assert_eq!(got.properties, want.properties, "{}", b.name);
            if !want.csv_json.is_empty() {
                checked += 1;
            }
        }
    });
    assert!(checked > 100, "only {checked} bundles had a csvJson");
}

/// GetBundleThatReplaces, when several entries of the channel replace or skip the bundle:
/// the one closest to the channel head, whether it replaces or skips it (decided at ingest,
/// `graph::replacements`); an entry of another channel is not taken.
#[test]
fn the_replacement_closest_to_the_head_is_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = |name: &str, version: &str| {
        format!(
            "---\nschema: olm.bundle\nname: {name}\npackage: p\nimage: example.com/{name}:latest\nproperties:\n  - type: olm.package\n    value: {{packageName: p, version: {version}}}\n"
        )
    };
    // stable: p.v4 (head) skips p.v1; p.v3 replaces p.v2 and skips p.v1; p.v2 replaces p.v1.
    // fast: p.v5 replaces p.v1.
    let text = format!(
        "---\nschema: olm.package\nname: p\ndefaultChannel: stable\n\
         ---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: p.v1\n  - name: p.v2\n    replaces: p.v1\n  - name: p.v3\n    replaces: p.v2\n    skips: [p.v1]\n  - name: p.v4\n    replaces: p.v3\n    skips: [p.v1]\n\
         ---\nschema: olm.channel\npackage: p\nname: fast\nentries:\n  - name: p.v1\n  - name: p.v5\n    replaces: p.v1\n{}{}{}{}{}",
        bundle("p.v1", "1.0.0"),
        bundle("p.v2", "2.0.0"),
        bundle("p.v3", "3.0.0"),
        bundle("p.v4", "4.0.0"),
        bundle("p.v5", "5.0.0"),
    );
    std::fs::write(tmp.path().join("c.yaml"), text).unwrap();
    let server = InProcess::start(tmp.path());
    rt().block_on(async {
        let mut c = server.registry().await;
        for (name, channel, want) in [
            ("p.v1", "stable", "p.v4"),
            ("p.v2", "stable", "p.v3"),
            ("p.v3", "stable", "p.v4"),
            ("p.v1", "fast", "p.v5"),
        ] {
            let r = replacement(&mut c, name, "p", channel).await.unwrap();
            assert_eq!(r.csv_name, want, "replacement of {name} in {channel}");
            assert_eq!(r.channel_name, channel);
        }
        let err = replacement(&mut c, "p.v4", "p", "stable")
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::NotFound);
    });
}
