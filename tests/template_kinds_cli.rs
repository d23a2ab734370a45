//! `render-template` without a kind (detected from the file's `schema`, as opm does), the
//! substitutes template, and `convert-template`, through the real binary.

use crate::common;
use common::opreg;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes a bundle directory `dir/<name>` of package `p` at `version`.
fn bundle_dir(dir: &Path, name: &str, version: &str) {
    let b = dir.join(name);
    fs::create_dir_all(b.join("manifests")).unwrap();
    fs::create_dir_all(b.join("metadata")).unwrap();
    fs::write(
        b.join("manifests/p.clusterserviceversion.yaml"),
        format!("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: p.v{version}\nspec:\n  version: {version}\n"),
    )
    .unwrap();
    fs::write(
        b.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.package.v1: p\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
    )
    .unwrap();
}

const BASIC: &str = "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: p\n  defaultChannel: stable\n- schema: olm.channel\n  package: p\n  name: stable\n  entries:\n  - name: p.v1.0.0\n- schema: olm.bundle\n  image: b1\n";

fn stdin_run(args: &[&str], input: &str) -> (i32, String, String) {
    let mut c = Command::new(common::bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn kind_is_detected_from_the_schema_and_a_lone_kind_reads_stdin() {
    let d = tempfile::tempdir().unwrap();
    bundle_dir(d.path(), "b1", "1.0.0");
    let t = d.path().join("t.yaml");
    fs::write(&t, BASIC).unwrap();
    let t = t.to_str().unwrap();
    let (code, named, err) = opreg(&["render-template", "basic", t]);
    assert_eq!(code, 0, "{err}");
    let (code, detected, err) = opreg(&["render-template", t]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(named, detected);
    assert!(detected.contains("\"name\": \"p.v1.0.0\""), "{detected}");
    // `basic` alone is the kind; the template comes from standard input (bundle paths are then
    // taken from the working directory).
    let abs = BASIC.replace(
        "image: b1",
        &format!("image: {}", d.path().join("b1").display()),
    );
    let (code, piped, err) = stdin_run(&["render-template", "basic"], &abs);
    assert_eq!((code, piped.as_str()), (0, named.as_str()), "{err}");
    let (code, piped, err) = stdin_run(&["render-template"], &abs);
    assert_eq!((code, piped.as_str()), (0, named.as_str()), "{err}");
}

#[test]
fn detection_errors() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        ("schema: olm.nope\n", "unknown template schema: olm.nope"),
        (
            "entries: []\n",
            "template input missing required 'schema' field",
        ),
    ];
    for (text, want) in cases {
        let t = d.path().join("t.yaml");
        fs::write(&t, text).unwrap();
        let (code, out, err) = opreg(&["render-template", t.to_str().unwrap()]);
        assert_eq!((code, out.as_str()), (1, ""), "{err}");
        assert!(
            err.contains("auto-detecting template type") && err.contains(want),
            "{err}"
        );
    }
    // Two arguments: the first must be a kind.
    let (code, _, err) = opreg(&["render-template", "nope", "t.yaml"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid template type \"nope\""), "{err}");
    // A named kind whose file declares another schema: the kind's own error.
    let t = d.path().join("t.yaml");
    fs::write(&t, BASIC).unwrap();
    let (code, _, err) = opreg(&["render-template", "substitutes", t.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("template has unknown schema (\"olm.template.basic\"), should be \"olm.template.substitutes\""), "{err}");
}

#[test]
fn substitutes_template_puts_the_substitute_in_its_base_place() {
    let d = tempfile::tempdir().unwrap();
    bundle_dir(d.path(), "b2", "1.1.0");
    let t = d.path().join("subs.yaml");
    fs::write(
        &t,
        "schema: olm.template.substitutes\nentries:\n- schema: olm.package\n  name: p\n  defaultChannel: stable\n- schema: olm.channel\n  package: p\n  name: stable\n  entries:\n  - name: p.v0.9.0\n  - name: p.v1.0.0\n    replaces: p.v0.9.0\n- schema: olm.bundle\n  name: p.v0.9.0\n  package: p\n  image: q/p:0.9.0\n  properties:\n  - type: olm.package\n    value: {packageName: p, version: 0.9.0}\n- schema: olm.bundle\n  name: p.v1.0.0\n  package: p\n  image: q/p:1.0.0\n  properties:\n  - type: olm.package\n    value: {packageName: p, version: 1.0.0}\nsubstitutions:\n- name: b2\n  base: p.v1.0.0\n",
    )
    .unwrap();
    let (code, out, err) = opreg(&["render-template", t.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let channel = out
        .split("}\n{")
        .find(|o| o.contains("\"schema\": \"olm.channel\""))
        .unwrap();
    let entries: String = channel.split_whitespace().collect();
    assert!(
        entries.contains(r#""entries":[{"name":"p.v0.9.0"},{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v0.9.0","skips":["p.v1.0.0"]}]"#),
        "{channel}"
    );
    assert!(out.contains("\"name\": \"p.v1.1.0\""), "{out}");
    // A substitute that is not newer than its base is refused, naming the file.
    let older = fs::read_to_string(&t).unwrap().replace(
        "base: p.v1.0.0",
        "base: p.v1.0.0\n- name: b2\n  base: p.v0.9.0",
    );
    fs::write(&t, older).unwrap();
    let (code, _, err) = opreg(&["render-template", t.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("subs.yaml") && err.contains("cannot reuse the same substitution \"b2\""),
        "{err}"
    );
}

const FBC: &str = "{\"schema\":\"olm.package\",\"name\":\"foo\",\"description\":\"a <b> & c\",\"defaultChannel\":\"s\"}\n{\"schema\":\"olm.bundle\",\"name\":\"foo.v1\",\"package\":\"foo\",\"image\":\"q/foo:1\",\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"foo\",\"version\":\"1.0.0\"}}]}\n";

#[test]
fn convert_template_basic_writes_go_json_with_bundle_images_only() {
    let (code, out, err) = stdin_run(&["convert-template", "basic"], FBC);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "{\n    \"schema\": \"olm.template.basic\",\n    \"entries\": [\n        {\n            \"defaultChannel\": \"s\",\n            \"description\": \"a \\u003cb\\u003e \\u0026 c\",\n            \"name\": \"foo\",\n            \"schema\": \"olm.package\"\n        },\n        {\n            \"schema\": \"olm.bundle\",\n            \"image\": \"q/foo:1\"\n        }\n    ]\n}\n"
    );
    let (code, out, _) = stdin_run(&["convert-template", "basic", "-o", "yaml"], FBC);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "---\nentries:\n- defaultChannel: s\n  description: a <b> & c\n  name: foo\n  schema: olm.package\n- image: q/foo:1\n  schema: olm.bundle\nschema: olm.template.basic\n\n"
    );
}

#[test]
fn convert_template_substitutes_keeps_entries_whole() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("catalog.json");
    fs::write(&f, FBC).unwrap();
    let (code, out, err) = opreg(&[
        "convert-template",
        "substitutes",
        f.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("---\nentries:\n"), "{out}");
    assert!(
        out.ends_with("schema: olm.template.substitutes\nsubstitutions: []\n\n"),
        "{out}"
    );
    assert!(
        out.contains("  properties:\n  - type: olm.package\n"),
        "{out}"
    );
    let (code, out, _) = stdin_run(&["convert-template", "substitutes"], "");
    assert_eq!(code, 0);
    assert_eq!(out, "{\n    \"schema\": \"olm.template.substitutes\",\n    \"entries\": null,\n    \"substitutions\": []\n}\n");
    let (code, out, err) = opreg(&["convert-template", "basic", "/nonexistent/catalog.json"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("/nonexistent/catalog.json"), "{err}");
    assert_eq!(opreg(&["convert-template", "semver"]).0, 2);
}
