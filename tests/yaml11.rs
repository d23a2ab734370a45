//! YAML 1.1 scalars with the real binary: a catalog whose plain `on` is a string to opreg and
//! a boolean to opm validates with a `warning[yaml11]` naming the file, the line and the
//! scalar; `--warnings-as-errors` refuses it; quoting it removes the warning; a bundle
//! directory's manifests are checked too.

use crate::common;

use common::opreg;

const CATALOG: &str = r#"schema: olm.package
name: p
defaultChannel: stable
---
schema: olm.channel
package: p
name: stable
entries:
- name: p.v1.0.0
---
schema: olm.bundle
package: p
name: p.v1.0.0
image: example.com/p:1
properties:
- type: olm.package
  value:
    packageName: p
    version: 1.0.0
- type: custom.flag
  value:
    enabled: on
"#;

#[test]
fn a_plain_yaml11_boolean_warns_and_fails_under_warnings_as_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.yaml");
    std::fs::write(&file, CATALOG).unwrap();
    let f = file.to_str().unwrap();

    let (code, _, err) = opreg(&["validate", f]);
    assert_eq!(code, 0, "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("warning[yaml11]"))
        .unwrap_or_else(|| panic!("no yaml11 warning: {err}"));
    assert!(line.contains(f), "{line}");
    assert!(
        line.contains("line 22: the plain scalar on is a string to opreg but the boolean true"),
        "{line}"
    );

    let (code, _, err) = opreg(&["validate", f, "--warnings-as-errors"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("warning[yaml11]"), "{err}");

    // Structured output carries it too, with its help.
    let (code, out, err) = opreg(&["validate", f, "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("yaml11") && out.contains("quote it"), "{out}");

    std::fs::write(&file, CATALOG.replace("enabled: on", "enabled: \"on\"")).unwrap();
    let (code, _, err) = opreg(&["validate", f, "--warnings-as-errors"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("yaml11"), "{err}");
}

#[test]
fn bundle_manifests_are_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("bundle");
    std::fs::create_dir_all(b.join("manifests")).unwrap();
    std::fs::create_dir_all(b.join("metadata")).unwrap();
    std::fs::write(
        b.join("manifests/p.csv.yaml"),
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: p.v1.0.0\n  annotations:\n    example.com/debug: yes\nspec:\n  version: 1.0.0\n",
    )
    .unwrap();
    std::fs::write(
        b.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
    )
    .unwrap();
    let (code, _, err) = opreg(&["validate", b.to_str().unwrap()]);
    let line = err
        .lines()
        .find(|l| l.starts_with("warning[yaml11]"))
        .unwrap_or_else(|| panic!("no yaml11 warning (exit {code}): {err}"));
    assert!(line.contains("p.csv.yaml"), "{line}");
    assert!(line.contains("line 6: the plain scalar yes"), "{line}");
}
