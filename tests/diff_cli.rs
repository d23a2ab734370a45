//! `opreg diff OLD NEW` with the real binary, on catalogs the tests write: the stranding gate
//! (a removed middle version with and without a covering skip or skipRange, a removed channel,
//! a removed package, a clean upgrade), its exit codes, JSON shape, and new downgrade hops;
//! `opreg upgrade` marking a downgrade hop.

use crate::common;

use common::opreg;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// One bundle of package `p`.
fn bundle(pkg: &str, v: &str) -> String {
    format!(
        "---\nschema: olm.bundle\npackage: {pkg}\nname: {pkg}.v{v}\nimage: quay.io/x/{pkg}:{v}\n\
         properties:\n  - type: olm.package\n    value: {{packageName: {pkg}, version: {v}}}\n"
    )
}

/// A catalog: package `p` with `channels` (name, entries YAML), bundles `versions`, and,
/// when `other` is set, a second package `q`.
pub(crate) fn catalog(
    dir: &Path,
    name: &str,
    channels: &[(&str, &str)],
    versions: &[&str],
    other: bool,
) -> PathBuf {
    let mut y = format!(
        "---\nschema: olm.package\nname: p\ndefaultChannel: {}\n",
        channels[0].0
    );
    for (ch, entries) in channels {
        y += &format!("---\nschema: olm.channel\npackage: p\nname: {ch}\nentries:\n{entries}");
    }
    for v in versions {
        y += &bundle("p", v);
    }
    if other {
        y += "---\nschema: olm.package\nname: q\ndefaultChannel: c\n\
              ---\nschema: olm.channel\npackage: q\nname: c\nentries:\n  - name: q.v1.0.0\n";
        y += &bundle("q", "1.0.0");
    }
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("catalog.yaml"), y).unwrap();
    d
}

const CHAIN: &str = "  - name: p.v1.0.0\n  - name: p.v1.1.0\n    replaces: p.v1.0.0\n  - name: p.v1.2.0\n    replaces: p.v1.1.0\n";
const FAST: &str = "  - name: p.v1.2.0\n";

fn old(dir: &Path) -> PathBuf {
    catalog(
        dir,
        "old",
        &[("stable", CHAIN), ("fast", FAST)],
        &["1.0.0", "1.1.0", "1.2.0"],
        true,
    )
}

fn diff(old: &Path, new: &Path, extra: &[&str]) -> (i32, Value, String) {
    let (code, out, err) = opreg(
        &[
            &[
                "diff",
                old.to_str().unwrap(),
                new.to_str().unwrap(),
                "-o",
                "json",
            ],
            extra,
        ]
        .concat(),
    );
    assert!(!err.contains("panicked"), "{err}");
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v, err)
}

fn stranded(v: &Value) -> Vec<(String, String, String)> {
    v["stranded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["channel"].as_str().unwrap().to_string(),
                s["bundle"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn t(c: &str, b: &str, r: &str) -> (String, String, String) {
    (c.into(), b.into(), r.into())
}

#[test]
fn removed_middle_version_strands_unless_skipped_or_covered() {
    let tmp = tempfile::tempdir().unwrap();
    let old = old(tmp.path());
    let vs = ["1.0.0", "1.2.0"];
    let bare = "  - name: p.v1.0.0\n  - name: p.v1.2.0\n    replaces: p.v1.0.0\n";
    let new = catalog(
        tmp.path(),
        "bare",
        &[("stable", bare), ("fast", FAST)],
        &vs,
        true,
    );
    for sem in ["classic", "v1"] {
        let (code, v, _) = diff(&old, &new, &["--semantics", sem]);
        assert_eq!(code, 1, "{sem}: {v}");
        assert_eq!(
            stranded(&v),
            vec![t("stable", "p.v1.1.0", "no-upgrade")],
            "{sem}"
        );
        let s = &v["stranded"][0];
        assert_eq!(
            (s["package"].as_str(), s["version"].as_str()),
            (Some("p"), Some("1.1.0"))
        );
    }
    let (_, v, _) = diff(&old, &new, &[]);
    assert_eq!(
        v["bundles"]["removed"],
        json!([{"package": "p", "channel": "stable", "name": "p.v1.1.0"}])
    );
    assert_eq!(
        v["edges"]["added"],
        json!([{"package": "p", "channel": "stable", "from": "p.v1.0.0", "to": "p.v1.2.0", "kind": "replaces"}])
    );
    // The text summary puts the stranded version first.
    let (code, out, _) = opreg(&["diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.starts_with("STRANDED: 1 installed version(s)"), "{out}");
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .contains("p/stable p.v1.1.0 (1.1.0): no bundle"),
        "{out}"
    );

    let skips =
        "  - name: p.v1.0.0\n  - name: p.v1.2.0\n    replaces: p.v1.0.0\n    skips: [p.v1.1.0]\n";
    let range = "  - name: p.v1.0.0\n  - name: p.v1.2.0\n    replaces: p.v1.0.0\n    skipRange: '>=1.0.0 <1.2.0'\n";
    for (name, entries) in [("skips", skips), ("range", range)] {
        let new = catalog(
            tmp.path(),
            name,
            &[("stable", entries), ("fast", FAST)],
            &vs,
            true,
        );
        for sem in ["classic", "v1"] {
            let (code, v, err) = diff(&old, &new, &["--semantics", sem]);
            assert_eq!(code, 0, "{name} {sem}: {v} {err}");
            assert_eq!(stranded(&v), vec![], "{name} {sem}");
        }
    }
}

#[test]
fn removed_channel_and_removed_package_strand_every_version() {
    let tmp = tempfile::tempdir().unwrap();
    let old = old(tmp.path());
    let all = ["1.0.0", "1.1.0", "1.2.0"];
    let new = catalog(tmp.path(), "nofast", &[("stable", CHAIN)], &all, true);
    let (code, v, _) = diff(&old, &new, &[]);
    assert_eq!(code, 1);
    assert_eq!(stranded(&v), vec![t("fast", "p.v1.2.0", "channel-removed")]);
    assert_eq!(
        v["channels"]["removed"],
        json!([{"package": "p", "name": "fast"}])
    );

    let new = catalog(
        tmp.path(),
        "noq",
        &[("stable", CHAIN), ("fast", FAST)],
        &all,
        false,
    );
    let (code, v, _) = diff(&old, &new, &[]);
    assert_eq!(code, 1);
    assert_eq!(stranded(&v), vec![t("c", "q.v1.0.0", "package-removed")]);
    assert_eq!(v["packages"], json!({"added": [], "removed": ["q"]}));
}

#[test]
fn clean_upgrade_exits_0_and_reports_the_new_head() {
    let tmp = tempfile::tempdir().unwrap();
    let old = old(tmp.path());
    let chain = format!("{CHAIN}  - name: p.v1.3.0\n    replaces: p.v1.2.0\n");
    let new = catalog(
        tmp.path(),
        "next",
        &[("stable", &chain), ("fast", FAST)],
        &["1.0.0", "1.1.0", "1.2.0", "1.3.0"],
        true,
    );
    let (code, v, err) = diff(&old, &new, &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["stranded"], json!([]));
    assert_eq!(
        v["heads"],
        json!([{"package": "p", "channel": "stable", "old": "p.v1.2.0", "new": "p.v1.3.0"}])
    );
    assert_eq!(
        v["bundles"]["added"],
        json!([{"package": "p", "channel": "stable", "name": "p.v1.3.0"}])
    );
    assert_eq!(v["newDowngrades"], json!([]));
    // Identical catalogs: nothing at all.
    let (code, out, _) = opreg(&["diff", old.to_str().unwrap(), old.to_str().unwrap()]);
    assert_eq!(
        (code, out.as_str()),
        (0, "no installed version is stranded (classic rules)\n")
    );
}

#[test]
fn a_new_downgrade_is_reported_and_upgrade_marks_the_hop() {
    let tmp = tempfile::tempdir().unwrap();
    let old = old(tmp.path());
    // 1.1.0's open-ended range covers the newer head 1.2.0.
    let chain = "  - name: p.v1.0.0\n  - name: p.v1.1.0\n    replaces: p.v1.0.0\n    skipRange: '>=1.0.0'\n  - name: p.v1.2.0\n    replaces: p.v1.1.0\n";
    let new = catalog(
        tmp.path(),
        "down",
        &[("stable", chain), ("fast", FAST)],
        &["1.0.0", "1.1.0", "1.2.0"],
        true,
    );
    let (_, v, _) = diff(&old, &new, &[]);
    assert_eq!(
        v["newDowngrades"],
        json!([{"package": "p", "channel": "stable", "bundle": "p.v1.1.0", "version": "1.1.0",
                "skipRange": ">=1.0.0", "covers": "p.v1.2.0", "coversVersion": "1.2.0"}])
    );
    let n = new.to_str().unwrap();
    let (code, out, err) = opreg(&[
        "upgrade",
        n,
        "-p",
        "p",
        "--from",
        "p.v1.2.0",
        "--channel",
        "stable",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("p.v1.2.0 -> p.v1.1.0 (1.1.0) in channel stable via skipRange DOWNGRADE"),
        "{out}"
    );
    let (_, out, _) = opreg(&["upgrade", n, "-p", "p", "--from", "p.v1.2.0", "-o", "json"]);
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["next"]["downgrade"], json!(true));
    let (_, out, _) = opreg(&["upgrade", n, "-p", "p", "--from", "p.v1.0.0", "-o", "json"]);
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["next"]["downgrade"], json!(false));
    // validate --upgrades names both bundles and the range.
    let (_, _, err) = opreg(&["validate", n, "--upgrades"]);
    assert!(
        err.contains(
            "p.v1.1.0 (1.1.0) has skipRange \">=1.0.0\", which covers the newer p.v1.2.0 (1.2.0)"
        ),
        "{err}"
    );
}

#[test]
fn usage_and_unreadable_sources() {
    let (code, _, _) = opreg(&["diff", "only-one"]);
    assert_eq!(code, 2);
    let tmp = tempfile::tempdir().unwrap();
    let old = old(tmp.path());
    let (code, _, _) = opreg(&[
        "diff",
        old.to_str().unwrap(),
        old.to_str().unwrap(),
        "--semantics",
        "semver",
    ]);
    assert_eq!(code, 2);
    let (code, _, err) = opreg(&["diff", old.to_str().unwrap(), "/nonexistent/new"]);
    assert_eq!(
        code, 3,
        "an unreadable SOURCE is not a stranded version: {err}"
    );
    assert!(
        err.contains("/nonexistent/new") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
#[ignore = "heavy tier: reads the 85 MB community catalog twice"]
fn community_catalog_against_its_own_build_strands_nothing() {
    let src = common::corpus_valid("community-operators.fbc.json");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    let (code, _, err) = opreg(&["ingest", src.to_str().unwrap(), "-o", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let t = std::time::Instant::now();
    let (code, v, err) = diff(&db, &src, &[]);
    eprintln!(
        "diff of the community catalog with its build: {:?}",
        t.elapsed()
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["stranded"], json!([]));
    assert_eq!(v["edges"], json!({"added": [], "removed": []}));
}
