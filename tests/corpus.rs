//! The real catalogs in ../shared/testdata/corpus through the whole pipeline: ingest,
//! render → ingest → render stability, and the documented real-world quirks that are true
//! violations of the FBC rules.

use crate::common;
use common::*;
use std::collections::BTreeSet;

fn count(db: &std::path::Path, table: &str) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// Ingests `src`, renders it, re-ingests the rendering and renders again: byte-identical.
fn ingest_and_roundtrip(
    src: &[std::path::PathBuf],
    tmp: &std::path::Path,
    name: &str,
) -> std::path::PathBuf {
    let db = tmp.join(format!("{name}.db"));
    let mut args = vec!["ingest".to_string()];
    args.extend(src.iter().map(|p| p.to_string_lossy().to_string()));
    args.extend(["-o".into(), db.to_string_lossy().to_string(), "-q".into()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = opreg(&a);
    assert_eq!(code, 0, "{name} failed to ingest:\n{err}");
    let (code, r1, err) = opreg(&["render", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let f = tmp.join(format!("{name}.json"));
    std::fs::write(&f, &r1).unwrap();
    let db2 = tmp.join(format!("{name}-2.db"));
    ingest_ok(&f, &db2);
    let (code, r2, err) = opreg(&["render", db2.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        r1 == r2,
        "{name}: render -> ingest -> render is not byte-identical"
    );
    db
}

/// The converted catalogs hold three package icons whose `base64data` is not valid base64.
/// Upstream decodes an FBC icon with Go's padded standard base64 and fails the whole catalog
/// (`parse package: illegal base64 data at input byte N`); opreg must say the same (issue 13).
/// (Two certified icons also hold stray `.` characters.) This checks that exactly `bad` are
/// reported, then writes a copy with those icons replaced by a valid one, for the round trip
/// (the same copy benchmarks and other tests use, `tests/common::corpus_valid`).
fn icons_repaired(rel: &str, bad: &[&str], tmp: &std::path::Path) -> std::path::PathBuf {
    let src = shared(rel);
    let (code, _, err) = opreg(&["validate", "-q", src.to_str().unwrap()]);
    assert_eq!(code, 1, "{rel}: the unpadded icons must be rejected");
    let got: BTreeSet<&str> = err
        .lines()
        .filter(|l| l.starts_with("error["))
        .map(|l| {
            assert!(
                l.starts_with("error[icon]") && l.contains("illegal base64 data at input byte"),
                "{rel}: unexpected error {l}"
            );
            l.split("package \"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(got, bad.iter().copied().collect(), "{rel}");
    let out = tmp.join(src.file_name().unwrap());
    let repaired = corpus::repair_icons(&src, &out).unwrap();
    assert_eq!(repaired, bad, "{rel}: the icons replaced in the copy");
    out
}

#[test]
fn community_and_certified_catalogs_ingest_and_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let community = icons_repaired(
        "corpus/community-operators.fbc.json",
        &["nlp-server"],
        tmp.path(),
    );
    let db = ingest_and_roundtrip(&[community], tmp.path(), "community");
    assert_eq!(
        (
            count(&db, "package"),
            count(&db, "bundle"),
            count(&db, "channel"),
            count(&db, "channel_entry")
        ),
        (333, 6467, 654, 10047)
    );
    let certified = icons_repaired(
        "corpus/certified-operators.fbc.json",
        &["exascaler-csi-driver-operator", "obi-prod-test-2"],
        tmp.path(),
    );
    let db = ingest_and_roundtrip(&[certified], tmp.path(), "certified");
    assert_eq!(
        (
            count(&db, "bundle"),
            count(&db, "channel"),
            count(&db, "channel_entry")
        ),
        (1963, 904, 4287)
    );
}

#[test]
fn red_hat_rendered_catalogs_ingest_package_by_package() {
    let tmp = tempfile::tempdir().unwrap();
    for (group, pkgs, bundles) in [
        ("community-operators-prod-v4.22", 29, 666),
        ("certified-operators-v4.22", 48, 413),
    ] {
        let dir = shared(&format!("corpus/rendered/{group}"));
        let mut srcs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        srcs.sort();
        let db = ingest_and_roundtrip(&srcs, tmp.path(), group);
        assert_eq!(
            (count(&db, "package"), count(&db, "bundle")),
            (pkgs, bundles)
        );
    }
}

#[test]
fn rendered_catalog_root_fails_on_its_non_fbc_file() {
    // Upstream parses every non-ignored file, hidden ones included: `.source-commit` is not FBC.
    let (code, _, err) = opreg(&[
        "validate",
        shared("corpus/rendered/certified-operators-v4.22")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(".source-commit (document 1)") && err.contains("error[schema]"),
        "{err}"
    );
}

#[test]
fn package_manifest_samples_ingest_and_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    for g in [
        "operatorhubio-2024",
        "package-manifests-2021",
        "package-manifests-2019-flat",
    ] {
        ingest_and_roundtrip(
            &[shared(&format!("corpus/bundles-sample/{g}"))],
            tmp.path(),
            g,
        );
    }
}

/// The bundle-directory samples carry real quirks (corpus/bundles-sample/README.md). Each is a
/// true violation of the FBC rules; the set of (package, rule) pairs must be exactly this.
#[test]
fn bundle_directory_samples_report_exactly_their_documented_violations() {
    let (code, _, err) = opreg(&[
        "validate",
        shared("corpus/bundles-sample/community-operators-prod")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(code, 1);
    let got: BTreeSet<(String, String)> = err
        .lines()
        .filter(|l| l.starts_with("error["))
        .map(|l| {
            let rule = l["error[".len()..l.find(']').unwrap()].to_string();
            let pkg = l
                .split("package \"")
                .nth(1)
                .map(|s| s[..s.find('"').unwrap()].to_string())
                .unwrap_or_default();
            (pkg, rule)
        })
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("alibaba-cloud-csi-operator", "stranded"),
        ("dotvirt-operator", "channel-head"),
        ("eclipse-amlen-operator", "channel-head"),
        ("eclipse-amlen-operator", "default-channel"),
        ("gitlab-runner-operator", "channel-head"),
        ("pulsar-resources-operator", "channel-head"),
        ("rabbitmq-messaging-topology-operator", "channel-head"),
        ("slurm-operator", "channel-head"),
        ("slurm-operator", "duplicate"),
    ]
    .iter()
    .map(|(p, r)| (p.to_string(), r.to_string()))
    .collect();
    assert_eq!(got, want, "full output:\n{err}");
}
