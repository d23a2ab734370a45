//! Serving at benchmark scale (issue 7): the synthetic catalogs of `benches/harness` are
//! deterministic and valid; ListBundles pages through hundreds of entries completely and in
//! order; GetPackage and ListPackages, answered from the server's in-memory package index,
//! agree with the database; `--threads` / `OPREG_THREADS` are checked; the planner statistics
//! that set the server's query plans are gathered in full.

use crate::common;
#[path = "../benches/harness/synth.rs"]
#[allow(dead_code)]
mod synth;

use common::{fixture, opreg, rt, shared, Server};
use std::path::{Path, PathBuf};
use std::process::Command;
use tokio_stream::StreamExt;

fn synthetic(dir: &Path, seed: u64, packages: usize) -> PathBuf {
    let p = dir.join(format!("synth-{seed}-{packages}.json"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    synth::write_catalog(&mut f, seed, packages).unwrap();
    std::io::Write::flush(&mut f).unwrap();
    p
}

fn ingest(sources: &[&Path], db: &Path) {
    let mut args = vec!["ingest"];
    args.extend(sources.iter().map(|s| s.to_str().unwrap()));
    args.extend(["-o", db.to_str().unwrap(), "-q"]);
    let (code, _, err) = opreg(&args);
    assert_eq!(code, 0, "{err}");
}

fn db_conn(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

#[test]
fn synthetic_catalogs_are_deterministic_prefix_stable_and_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let a = std::fs::read(synthetic(tmp.path(), 7, 6)).unwrap();
    let sub = tmp.path().join("again");
    std::fs::create_dir(&sub).unwrap();
    let again = std::fs::read(synthetic(&sub, 7, 6)).unwrap();
    assert_eq!(a, again, "same seed, same bytes");
    let other = std::fs::read(synthetic(tmp.path(), 8, 6)).unwrap();
    assert_ne!(a, other, "another seed, another catalog");
    // A larger scale starts with exactly the packages of a smaller one.
    let bigger = std::fs::read(synthetic(tmp.path(), 7, 9)).unwrap();
    assert!(bigger.len() > a.len() && bigger.starts_with(&a));

    let file = synthetic(tmp.path(), 7, 40);
    let (code, out, err) = opreg(&["validate", file.to_str().unwrap()]);
    assert_eq!(code, 0, "the synthetic catalog must be valid:\n{out}{err}");
    // Its shape: skips (some to bundles not in the catalog), skipRanges, several channels,
    // deprecations, bundle objects and CSV metadata, a 250-bundle package.
    let text = String::from_utf8(std::fs::read(&file).unwrap()).unwrap();
    for needle in [
        "\"skips\"",
        "-hotfix\"",
        "\"skipRange\"",
        "\"name\":\"fast\"",
        "olm.deprecations",
        "olm.bundle.object",
        "olm.csv.metadata",
        ".v",
    ] {
        assert!(
            text.contains(needle),
            "no {needle} in the synthetic catalog"
        );
    }
    let mut bundles = std::collections::BTreeMap::<String, usize>::new();
    let mut first = None;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["schema"] == "olm.bundle" {
            let p = v["package"].as_str().unwrap().to_string();
            first.get_or_insert_with(|| p.clone());
            *bundles.entry(p).or_default() += 1;
        }
    }
    assert_eq!(bundles.len(), 40);
    assert_eq!(bundles[&first.unwrap()], 250, "package 0 is the long chain");
}

#[test]
fn list_bundles_streams_every_entry_once_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let src = synthetic(tmp.path(), 3, 6);
    let db = tmp.path().join("c.db");
    ingest(&[&src], &db);
    let expected: Vec<(String, String, String)> = db_conn(&db)
        .prepare(
            "SELECT channel, package, bundle FROM channel_entry ORDER BY channel, package, bundle",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        expected.len() > 400,
        "{} entries: several pages",
        expected.len()
    );

    let server = Server::start(&[db.to_str().unwrap()]);
    let got: Vec<(String, String, String)> = rt().block_on(async {
        let mut c = server.registry().await;
        let mut s = c
            .list_bundles(opreg::api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut v = Vec::new();
        while let Some(b) = s.next().await {
            let b = b.unwrap();
            v.push((b.channel_name, b.package_name, b.csv_name));
        }
        v
    });
    assert_eq!(got.len(), expected.len());
    assert!(
        got == expected,
        "ListBundles order differs from (channel, package, bundle)"
    );
}

#[test]
fn package_answers_match_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let src = synthetic(tmp.path(), 5, 4);
    let db = tmp.path().join("c.db");
    let (deprecations, upstream) = (fixture("deprecations"), shared("upstream-manifests"));
    ingest(&[&src, &deprecations, &upstream], &db);
    let conn = db_conn(&db);
    let names: Vec<String> = conn
        .prepare("SELECT name FROM package ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut deprecated_packages = 0;
    let mut deprecated_channels = 0;
    let server = Server::start(&[db.to_str().unwrap()]);
    rt().block_on(async {
        let mut c = server.registry().await;
        let mut listed = Vec::new();
        let mut s = c
            .list_packages(opreg::api::ListPackageRequest {})
            .await
            .unwrap()
            .into_inner();
        while let Some(p) = s.next().await {
            listed.push(p.unwrap().name);
        }
        assert_eq!(listed, names);
        for name in &names {
            let (default_channel, deprecation): (String, Option<String>) = conn
                .query_row(
                    "SELECT default_channel, deprecation FROM package WHERE name = ?1",
                    [name],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            let channels: Vec<(String, String, Option<String>)> = conn
                .prepare(
                    "SELECT name, head, deprecation FROM channel WHERE package = ?1 ORDER BY name",
                )
                .unwrap()
                .query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let p = c
                .get_package(opreg::api::GetPackageRequest { name: name.clone() })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(&p.name, name);
            assert_eq!(p.default_channel_name, default_channel, "{name}");
            assert_eq!(p.deprecation.map(|d| d.message), deprecation, "{name}");
            deprecated_packages += usize::from(deprecation.is_some());
            let got: Vec<(String, String, Option<String>)> = p
                .channels
                .into_iter()
                .map(|ch| (ch.name, ch.csv_name, ch.deprecation.map(|d| d.message)))
                .collect();
            deprecated_channels += got.iter().filter(|c| c.2.is_some()).count();
            assert_eq!(got, channels, "{name}");
        }
        let missing = c
            .get_package(opreg::api::GetPackageRequest {
                name: "no-such-package".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(missing.code(), tonic::Code::NotFound);
    });
    assert!(deprecated_packages > 0 && deprecated_channels > 0);
}

#[test]
fn worker_threads_are_set_by_flag_or_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    ingest(&[&fixture("deprecations")], &db);
    let server = Server::start(&[db.to_str().unwrap(), "--threads", "1"]);
    rt().block_on(async {
        let mut c = server.registry().await;
        c.list_packages(opreg::api::ListPackageRequest {})
            .await
            .unwrap();
    });
    drop(server);
    for (args, env) in [
        (vec!["--threads", "0"], None),
        (vec![], Some("0")),
        (vec![], Some("many")),
    ] {
        let mut cmd = Command::new(common::bin());
        cmd.arg("serve")
            .arg(&db)
            .args(&args)
            .args(["-t", "/dev/null"]);
        if let Some(v) = env {
            cmd.env("OPREG_THREADS", v);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?} {env:?}: a usage error"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--threads"), "{err}");
    }
}

/// Ingest gathers the query planner's statistics of its largest tables from a sample
/// (`store::build`'s `SAMPLED_TABLES`), but those that set the server's plans in full: sampled,
/// the statistics of `channel_entry` and of the index `edge_to` changed plans (channel entries
/// found through the stream index instead of the primary key). They must read as a full
/// ANALYZE writes them, on a catalog large enough for a sample to differ.
#[test]
fn planner_statistics_that_set_plans_are_gathered_in_full() {
    let tmp = tempfile::tempdir().unwrap();
    let src = synthetic(tmp.path(), 20240601, 64);
    let db = tmp.path().join("catalog.db");
    ingest(&[&src], &db);
    let stats = |c: &rusqlite::Connection| -> Vec<(String, String, String)> {
        c.prepare(
            "SELECT tbl, idx, stat FROM sqlite_stat1
             WHERE tbl = 'channel_entry' OR idx = 'edge_to' ORDER BY tbl, idx",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let stored = stats(&db_conn(&db));
    assert_eq!(stored.len(), 3, "{stored:?}");
    let copy = tmp.path().join("reanalyzed.db");
    std::fs::copy(&db, &copy).unwrap();
    let c = rusqlite::Connection::open(&copy).unwrap();
    c.execute_batch("PRAGMA analysis_limit = 0; ANALYZE channel_entry; ANALYZE edge_to;")
        .unwrap();
    assert_eq!(stored, stats(&c), "statistics differ from a full ANALYZE");
    c.execute_batch("PRAGMA analysis_limit = 1000; ANALYZE channel_entry; ANALYZE edge_to;")
        .unwrap();
    assert_ne!(
        stored,
        stats(&c),
        "a sample gives the same statistics here, so the check above proves nothing"
    );
}
