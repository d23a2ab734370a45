//! `opreg list packages|channels|bundles` with the real binary, on every SOURCE kind: a
//! file-based catalog the test writes, its built database (which must list the same rows
//! from the store), the shared package-manifest tree, the shared legacy index, and an OCI
//! image layout.

use crate::common;
use crate::registry_support;

use common::{opreg, shared};
use registry_support::ctx::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const TVO: &str = r#"---
schema: olm.package
name: tvo
defaultChannel: stable
---
schema: olm.channel
package: tvo
name: stable
entries:
  - name: tvo.v6.1.10
    replaces: tvo.v6.1.2
    skipRange: ">=6.0.0 <6.1.10"
  - name: tvo.v6.1.2
    skips: [tvo.v6.1.1, tvo.v6.1.0]
---
schema: olm.channel
package: tvo
name: fast
entries:
  - name: tvo.v6.1.10
---
schema: olm.bundle
package: tvo
name: tvo.v6.1.10
image: quay.io/x/tvo:6.1.10
properties:
  - type: olm.package
    value: {packageName: tvo, version: 6.1.10}
  - type: olm.csv.metadata
    value: {displayName: TVO Operator}
---
schema: olm.bundle
package: tvo
name: tvo.v6.1.2
image: quay.io/x/tvo:6.1.2
properties:
  - type: olm.package
    value: {packageName: tvo, version: 6.1.2}
---
schema: olm.package
name: abc
defaultChannel: a
---
schema: olm.channel
package: abc
name: a
entries:
  - name: abc.v1.0.0
---
schema: olm.bundle
package: abc
name: abc.v1.0.0
image: quay.io/x/abc:1.0.0
properties:
  - type: olm.package
    value: {packageName: abc, version: 1.0.0}
"#;

fn written(dir: &Path) -> PathBuf {
    let d = dir.join("catalog");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("catalog.yaml"), TVO).unwrap();
    d
}

fn list(args: &[&str]) -> String {
    let (code, out, err) = opreg(&[&["list"], args].concat());
    assert_eq!(code, 0, "opreg list {args:?}: {err}");
    out
}

fn json_of(args: &[&str]) -> Value {
    let out = list(&[args, &["-o", "json"]].concat());
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn fbc_and_its_database_list_the_same_aligned_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let src = written(tmp.path());
    let db = tmp.path().join("c.db");
    let (code, _, err) = opreg(&["ingest", src.to_str().unwrap(), "-o", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for s in [&src, &db] {
        let s = s.to_str().unwrap();
        assert_eq!(
            list(&["packages", s]),
            "NAME  DISPLAY NAME  DEFAULT CHANNEL\n\
             abc                 a\n\
             tvo   TVO Operator  stable\n"
        );
        assert_eq!(
            list(&["channels", s, "tvo"]),
            "PACKAGE  CHANNEL  HEAD\n\
             tvo      fast     tvo.v6.1.10\n\
             tvo      stable   tvo.v6.1.10\n"
        );
        // 6.1.2 before 6.1.10: versions sort as versions.
        assert_eq!(
            list(&["bundles", s, "tvo"]),
            "PACKAGE  CHANNEL  BUNDLE       VERSION  REPLACES    SKIPS                  SKIP RANGE       IMAGE\n\
             tvo      fast     tvo.v6.1.10  6.1.10                                                       quay.io/x/tvo:6.1.10\n\
             tvo      stable   tvo.v6.1.2   6.1.2                tvo.v6.1.1,tvo.v6.1.0                   quay.io/x/tvo:6.1.2\n\
             tvo      stable   tvo.v6.1.10  6.1.10   tvo.v6.1.2                         >=6.0.0 <6.1.10  quay.io/x/tvo:6.1.10\n"
        );
        assert_eq!(
            json_of(&["bundles", s, "tvo"])[2],
            json!({"package": "tvo", "channel": "stable", "name": "tvo.v6.1.10",
                   "version": "6.1.10", "replaces": "tvo.v6.1.2", "skips": [],
                   "skipRange": ">=6.0.0 <6.1.10", "image": "quay.io/x/tvo:6.1.10"})
        );
        assert_eq!(
            json_of(&["packages", s]),
            json!([{"name": "abc", "displayName": "", "defaultChannel": "a"},
                   {"name": "tvo", "displayName": "TVO Operator", "defaultChannel": "stable"}])
        );
        assert_eq!(
            json_of(&["channels", s])[0],
            json!({"package": "abc", "name": "a", "head": "abc.v1.0.0"})
        );
        let (code, _, err) = opreg(&["list", "bundles", s, "nope"]);
        assert_eq!(code, 1);
        assert!(
            err.starts_with("error: ") && err.contains("no package \"nope\""),
            "{err}"
        );
    }
}

#[test]
fn manifests_legacy_index_and_image_sources_list() {
    // Package manifests: etcd's display name comes from the CSV of the default channel's head.
    let etcd = shared("upstream-manifests/etcd");
    let pk = json_of(&["packages", etcd.to_str().unwrap()]);
    assert_eq!(pk[0]["name"], "etcd");
    assert_eq!(pk[0]["displayName"], "etcd");
    let chans = json_of(&["channels", etcd.to_str().unwrap()]);
    assert!(chans.as_array().unwrap().len() >= 2, "{chans}");

    // An upstream SQLite index.
    let legacy = shared("legacy-index/bundles.db");
    let rows = json_of(&["bundles", legacy.to_str().unwrap()]);
    let rows = rows.as_array().unwrap();
    assert!(!rows.is_empty());
    for w in rows.windows(2) {
        let key = |r: &Value| (r["package"].to_string(), r["channel"].to_string());
        assert!(key(&w[0]) <= key(&w[1]), "sorted by package and channel");
    }

    // An OCI image layout holding etcd's catalog lists what the local catalog lists.
    let ctx = Ctx::new();
    let dir = fbc_dir(&ctx, "etcd");
    let layout = ctx.path("layout");
    catalog_image(&dir).write_layout(&layout, "v1");
    let src = format!("oci:{}:v1", layout.display());
    assert_eq!(
        list(&["bundles", &src]),
        list(&["bundles", dir.to_str().unwrap()])
    );
    assert_eq!(
        list(&["bundles", &src]),
        list(&["bundles", etcd.to_str().unwrap()])
    );
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, err) = opreg(&["list", "things", "x"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = opreg(&["list", "packages"]);
    assert_eq!(code, 2);
    let (code, _, err) = opreg(&["list", "packages", "/nonexistent/catalog"]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("panicked"));
}
