//! `opreg render-template` through the real binary: bundle directories the tests write, the
//! shared bundles sample's own `catalog-templates/`, errors and exit codes. The rendered
//! catalogs must pass `opreg validate`.

use crate::common;
use common::{opreg, shared};
use std::fs;
use std::path::Path;

/// Writes a bundle directory `dir/<name>` for package `pkg` at `version`, in `channels`.
fn bundle_dir(
    dir: &Path,
    name: &str,
    pkg: &str,
    version: &str,
    channels: &str,
    replaces: Option<&str>,
) {
    let b = dir.join(name);
    fs::create_dir_all(b.join("manifests")).unwrap();
    fs::create_dir_all(b.join("metadata")).unwrap();
    let replaces = replaces
        .map(|r| format!("  replaces: {r}\n"))
        .unwrap_or_default();
    fs::write(
        b.join(format!("manifests/{pkg}.clusterserviceversion.yaml")),
        format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {pkg}.v{version}\nspec:\n  version: {version}\n  description: {pkg} at {version}\n{replaces}"
        ),
    )
    .unwrap();
    fs::write(
        b.join("metadata/annotations.yaml"),
        format!(
            "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.package.v1: {pkg}\n  operators.operatorframework.io.bundle.channels.v1: {channels}\n"
        ),
    )
    .unwrap();
}

/// The rendered catalog passes `opreg validate` (written to `dir/out.json`).
fn assert_validates(dir: &Path, rendered: &str) {
    let out = dir.join("out.json");
    fs::write(&out, rendered).unwrap();
    let (code, _, err) = opreg(&["validate", out.to_str().unwrap()]);
    assert_eq!(code, 0, "rendered catalog does not validate: {err}");
}

/// The JSON lines of `out` with schema `schema`.
fn metas(out: &str, schema: &str) -> Vec<serde_json::Value> {
    common::json_lines(out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["schema"] == schema)
        .collect()
}

#[test]
fn basic_template_renders_local_bundle_directories_and_keeps_other_entries() {
    let d = tempfile::tempdir().unwrap();
    bundle_dir(d.path(), "b1", "p", "1.0.0", "stable", None);
    bundle_dir(d.path(), "b2", "p", "1.1.0", "stable", Some("p.v1.0.0"));
    let t = d.path().join("basic.yaml");
    fs::write(
        &t,
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: p\n  defaultChannel: stable\n- schema: olm.channel\n  package: p\n  name: stable\n  entries:\n  - name: p.v1.0.0\n  - name: p.v1.1.0\n    replaces: p.v1.0.0\n- schema: olm.bundle\n  image: b1\n- schema: olm.bundle\n  image: b2\n",
    )
    .unwrap();
    let (code, out, err) = opreg(&["render-template", "basic", t.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let bundles = metas(&out, "olm.bundle");
    let names: Vec<_> = bundles
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p.v1.0.0", "p.v1.1.0"]);
    assert!(bundles.iter().all(|b| b["properties"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["type"] == "olm.package")));
    let ch = &metas(&out, "olm.channel")[0];
    assert_eq!(ch["entries"][1]["replaces"], "p.v1.0.0");
    assert_eq!(metas(&out, "olm.package")[0]["defaultChannel"], "stable");
    assert_validates(d.path(), &out);
    // YAML output is the same catalog.
    let (code, yaml, _) = opreg(&[
        "render-template",
        "basic",
        t.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    assert_eq!(code, 0);
    assert!(yaml.starts_with("---\n") && !yaml.contains("schema: olm.template.basic"));
    assert!(yaml.contains("name: p.v1.1.0"), "{yaml}");
}

/// Five bundle directories of package `a` and a semver template (major channels only) listing
/// them; the template's path.
fn semver_sample(dir: &Path) -> std::path::PathBuf {
    for v in ["0.1.0", "0.1.1", "1.1.0", "1.2.1", "1.3.1"] {
        bundle_dir(dir, &format!("a-{v}"), "a", v, "ignored", None);
    }
    let t = dir.join("semver.yaml");
    fs::write(
        &t,
        "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: false\ncandidate:\n  bundles:\n  - image: a-1.3.1\nstable:\n  bundles:\n  - image: a-0.1.0\n  - image: a-0.1.1\n  - image: a-1.1.0\n  - image: a-1.2.1\n  - image: a-1.3.1\n",
    )
    .unwrap();
    t
}

#[test]
fn semver_template_generates_upstreams_channels_from_bundle_directories() {
    let d = tempfile::tempdir().unwrap();
    let t = semver_sample(d.path());
    let (code, out, err) = opreg(&["render-template", "semver", t.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let chans: Vec<String> = metas(&out, "olm.channel")
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(
        chans,
        [
            r#"{"entries":[{"name":"a.v1.3.1"}],"name":"candidate-v1","package":"a","schema":"olm.channel"}"#,
            r#"{"entries":[{"name":"a.v0.1.0"},{"name":"a.v0.1.1","skips":["a.v0.1.0"]}],"name":"stable-v0","package":"a","schema":"olm.channel"}"#,
            r#"{"entries":[{"name":"a.v1.1.0"},{"name":"a.v1.2.1","replaces":"a.v1.1.0"},{"name":"a.v1.3.1","replaces":"a.v1.2.1","skips":["a.v1.1.0"]}],"name":"stable-v1","package":"a","schema":"olm.channel"}"#,
        ]
    );
    let pkg = &metas(&out, "olm.package")[0];
    assert_eq!(pkg["defaultChannel"], "stable-v1");
    assert_eq!(
        pkg["description"], "a at 1.3.1",
        "the default channel head's CSV describes the package"
    );
    assert_eq!(metas(&out, "olm.bundle").len(), 5, "each bundle once");
    assert_validates(d.path(), &out);
}

#[test]
fn errors_are_one_line_naming_the_file_with_stable_exit_codes() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t.yaml");
    let run = |text: &str, kind: &str| {
        fs::write(&t, text).unwrap();
        opreg(&["render-template", kind, t.to_str().unwrap()])
    };
    let one_error = |code: i32, err: &str, want: &str| {
        assert_eq!(code, 1, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(t.to_str().unwrap()), "names the file: {err}");
        assert!(err.contains(want), "{err}");
    };
    let (code, _, err) = run("schema: olm.semver\n", "basic");
    one_error(
        code,
        &err,
        r#"template has unknown schema ("olm.semver"), should be "olm.template.basic""#,
    );
    let (code, _, err) = run("schema: olm.template.basic\n", "semver");
    one_error(
        code,
        &err,
        r#"input file has unknown schema "olm.template.basic", should be "olm.semver""#,
    );
    let (code, _, err) = run(
        "schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  image: x\n  package: p\n",
        "basic",
    );
    one_error(
        code,
        &err,
        "unexpected fields present in basic template bundle",
    );
    let (code, _, err) = run(
        "schema: olm.semver\nstable:\n  bundles:\n  - image: ./nowhere\n",
        "semver",
    );
    one_error(code, &err, r#"bundle "./nowhere""#);
    let (code, _, err) = run("schema: olm.semver\nbogus: 1\n", "semver");
    one_error(code, &err, r#"unknown field "bogus""#);
    let (code, _, err) = run("schema: [olm.semver\n", "semver");
    one_error(code, &err, "decoding template");
    fs::write(
        &t,
        "schema: olm.semver\nstable:\n  bundles:\n  - image: quay.io/o/p:9.9.9\n",
    )
    .unwrap();
    let (code, out, err) = opreg(&[
        "render-template",
        "semver",
        t.to_str().unwrap(),
        "--bundles-dir",
        d.path().to_str().unwrap(),
    ]);
    assert!(out.is_empty());
    one_error(
        code,
        &err,
        r#"bundle "quay.io/o/p:9.9.9": no bundle directory "#,
    );
    assert!(
        err.trim_end().ends_with("9.9.9 (from --bundles-dir)"),
        "{err}"
    );
    let (code, _, err) = run("", "basic");
    one_error(code, &err, "decoding template: the template is empty");
    let missing = d.path().join("missing.yaml");
    let (code, _, err) = opreg(&["render-template", "basic", missing.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("missing.yaml"), "{err}");
    // An unknown template kind is a usage error.
    let (code, _, err) = opreg(&["render-template", "composite", t.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("composite"), "{err}");
}

#[test]
fn help_explains_references_and_bundles_dir() {
    let (code, out, _) = opreg(&["render-template", "--help"]);
    assert_eq!(code, 0);
    for s in [
        "olm.template.basic",
        "olm.semver",
        "stable-v1.2",
        "--bundles-dir",
        "DIR/TAG",
        "Exit codes",
    ] {
        assert!(out.contains(s), "help lacks {s}: {out}");
    }
}

const SAMPLE: &str = "corpus/bundles-sample/community-operators-prod/operators";

/// The shared sample's templates whose bundle references are tagged with their version
/// directory render offline with `--bundles-dir` and validate.
#[test]
fn shared_sample_templates_render_and_validate() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        ("slurm-operator", "basic", "basic.yaml", 6, "release-1.0"),
        ("dotvirt-operator", "semver", "semver.yaml", 4, "stable-v0"),
    ];
    for (pkg, kind, file, n, default) in cases {
        let dir = shared(&format!("{SAMPLE}/{pkg}"));
        let t = dir.join("catalog-templates").join(file);
        let (code, out, err) = opreg(&[
            "render-template",
            kind,
            t.to_str().unwrap(),
            "--bundles-dir",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{pkg}: {err}");
        let bundles = metas(&out, "olm.bundle");
        assert_eq!(bundles.len(), n, "{pkg}");
        for b in &bundles {
            let image = b["image"].as_str().unwrap();
            assert!(
                image.starts_with(&format!("quay.io/community-operator-pipeline-prod/{pkg}:")),
                "{image}"
            );
        }
        assert_eq!(
            metas(&out, "olm.package")[0]["defaultChannel"],
            default,
            "{pkg}"
        );
        assert_validates(d.path(), &out);
    }
    // dotvirt's major channel: every 0.0.z in one Y-stream, so the head skips the rest.
    let dir = shared(&format!("{SAMPLE}/dotvirt-operator"));
    let (_, out, _) = opreg(&[
        "render-template",
        "semver",
        dir.join("catalog-templates/semver.yaml").to_str().unwrap(),
        "--bundles-dir",
        dir.to_str().unwrap(),
    ]);
    let ch = &metas(&out, "olm.channel")[0];
    assert_eq!(
        ch["entries"][3].to_string(),
        r#"{"name":"dotvirt-operator.v0.0.32","skips":["dotvirt-operator.v0.0.27","dotvirt-operator.v0.0.28","dotvirt-operator.v0.0.29"]}"#
    );
}

/// rabbitmq-messaging-topology-operator's templates pin most bundles by digest: they cannot
/// be mapped to the sample's directories, and say so.
#[test]
fn digest_pinned_references_cannot_be_mapped_to_directories() {
    let dir = shared(&format!("{SAMPLE}/rabbitmq-messaging-topology-operator"));
    for v in ["v4.17", "v4.18", "v4.19", "v4.20", "v4.21"] {
        let t = dir.join(format!("catalog-templates/{v}.yaml"));
        let (code, out, err) = opreg(&[
            "render-template",
            "basic",
            t.to_str().unwrap(),
            "--bundles-dir",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{v}: {err}");
        assert!(out.is_empty());
        assert!(
            err.contains("@sha256:") && err.contains("pinned by digest"),
            "{err}"
        );
    }
}

/// Upstream's semver template README example (11 testoperator versions across Candidate, Fast
/// and Stable), with bundle directories in place of its images (`--bundles-dir`, each
/// directory named by the image's tag), and its documented channels and default channels.
#[test]
fn semver_readme_example_renders_upstreams_channels() {
    let d = tempfile::tempdir().unwrap();
    let all = [
        "0.1.0", "0.1.1", "0.1.2", "0.1.3", "0.2.0", "0.2.1", "0.2.2", "0.3.0", "1.0.0", "1.0.1",
        "1.1.0",
    ];
    for v in all {
        bundle_dir(
            d.path(),
            &format!("testoperator.v{v}"),
            "testoperator",
            v,
            "x",
            None,
        );
    }
    let list = |vs: &[&str]| -> String {
        vs.iter()
            .map(|v| format!("  - Image: quay.io/foo/olm:testoperator.v{v}\n"))
            .collect()
    };
    let template = |major: bool, minor: bool| {
        format!(
            "Schema: olm.semver\nGenerateMajorChannels: {major}\nGenerateMinorChannels: {minor}\nCandidate:\n  Bundles:\n{}Fast:\n  Bundles:\n{}Stable:\n  Bundles:\n{}",
            list(&all),
            list(&["0.2.1", "0.2.2", "0.3.0", "1.0.1", "1.1.0"]),
            list(&["1.0.1"])
        )
    };
    let render = |major: bool, minor: bool| {
        let t = d.path().join("t.yaml");
        fs::write(&t, template(major, minor)).unwrap();
        let (code, out, err) = opreg(&[
            "render-template",
            "semver",
            t.to_str().unwrap(),
            "--bundles-dir",
            d.path().to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let default = metas(&out, "olm.package")[0]["defaultChannel"]
            .as_str()
            .unwrap()
            .to_string();
        let chans: Vec<String> = metas(&out, "olm.channel")
            .iter()
            .map(|c| {
                let es: Vec<String> = c["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| {
                        let n = |v: &serde_json::Value| {
                            v.as_str()
                                .unwrap_or("")
                                .trim_start_matches("testoperator.v")
                                .to_string()
                        };
                        let skips: Vec<String> = e["skips"]
                            .as_array()
                            .map(|s| s.iter().map(n).collect())
                            .unwrap_or_default();
                        format!(
                            "{} r={} s=[{}]",
                            n(&e["name"]),
                            n(&e["replaces"]),
                            skips.join(",")
                        )
                    })
                    .collect();
                format!("{}: {}", c["name"].as_str().unwrap(), es.join("; "))
            })
            .collect();
        assert_validates(d.path(), &out);
        (default, chans)
    };
    let (default, chans) = render(true, false);
    assert_eq!(default, "stable-v1");
    assert_eq!(
        chans,
        [
            "candidate-v0: 0.1.0 r= s=[]; 0.1.1 r= s=[]; 0.1.2 r= s=[]; 0.1.3 r= s=[0.1.0,0.1.1,0.1.2]; 0.2.0 r= s=[]; 0.2.1 r= s=[]; 0.2.2 r=0.1.3 s=[0.1.0,0.1.1,0.1.2,0.2.0,0.2.1]; 0.3.0 r=0.2.2 s=[0.1.0,0.1.1,0.1.2,0.1.3,0.2.0,0.2.1]",
            "candidate-v1: 1.0.0 r= s=[]; 1.0.1 r= s=[1.0.0]; 1.1.0 r=1.0.1 s=[1.0.0]",
            "fast-v0: 0.2.1 r= s=[]; 0.2.2 r= s=[0.2.1]; 0.3.0 r=0.2.2 s=[0.2.1]",
            "fast-v1: 1.0.1 r= s=[]; 1.1.0 r=1.0.1 s=[]",
            "stable-v1: 1.0.1 r= s=[]",
        ]
    );
    let (default, chans) = render(false, true);
    assert_eq!(default, "stable-v1.0");
    assert_eq!(
        chans,
        [
            "candidate-v0.1: 0.1.0 r= s=[]; 0.1.1 r= s=[]; 0.1.2 r= s=[]; 0.1.3 r= s=[0.1.0,0.1.1,0.1.2]",
            "candidate-v0.2: 0.2.0 r= s=[]; 0.2.1 r= s=[]; 0.2.2 r=0.1.3 s=[0.1.0,0.1.1,0.1.2,0.2.0,0.2.1]",
            "candidate-v0.3: 0.3.0 r=0.2.2 s=[0.1.0,0.1.1,0.1.2,0.1.3,0.2.0,0.2.1]",
            "candidate-v1.0: 1.0.0 r= s=[]; 1.0.1 r= s=[1.0.0]",
            "candidate-v1.1: 1.1.0 r=1.0.1 s=[1.0.0]",
            "fast-v0.2: 0.2.1 r= s=[]; 0.2.2 r= s=[0.2.1]",
            "fast-v0.3: 0.3.0 r=0.2.2 s=[0.2.1]",
            "fast-v1.0: 1.0.1 r= s=[]",
            "fast-v1.1: 1.1.0 r=1.0.1 s=[]",
            "stable-v1.0: 1.0.1 r= s=[]",
        ]
    );
}

#[test]
fn the_template_can_come_from_standard_input() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let d = tempfile::tempdir().unwrap();
    bundle_dir(d.path(), "b1", "p", "1.0.0", "stable", None);
    let b1 = d.path().join("b1");
    let template = format!(
        "schema: olm.semver\nstable:\n  bundles:\n  - image: {}\n",
        b1.display()
    );
    for args in [
        &["render-template", "semver", "-"][..],
        &["render-template", "semver"][..],
    ] {
        let mut child = Command::new(common::bin())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(template.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            metas(&stdout, "olm.package")[0]["defaultChannel"],
            "stable-v1.0"
        );
    }
}

#[test]
fn mermaid_output_is_upstreams_text_for_upstreams_catalog() {
    let d = tempfile::tempdir().unwrap();
    for (p, v) in [
        ("anakin", "0.0.1"),
        ("anakin", "0.1.0"),
        ("anakin", "0.1.1"),
        ("boba-fett", "1.0.0"),
        ("boba-fett", "2.0.0"),
    ] {
        bundle_dir(d.path(), &format!("{p}-{v}"), p, v, "ignored", None);
    }
    let t = d.path().join("basic.yaml");
    // Upstream's mermaid test catalog (operator-registry's `TestWriteMermaidChannels`) as a
    // basic template over the bundle directories.
    fs::copy(common::fixture("authoring/mermaid/upstream.basic.yaml"), &t).unwrap();
    let t = t.to_str().unwrap();
    // Upstream's `SuccessNoFilters` expected text, verbatim (the draw unit test's too).
    let want =
        fs::read_to_string(common::fixture("authoring/mermaid/upstream-no-filters.mmd")).unwrap();
    for args in [
        &["render-template", "basic", t, "-o", "mermaid"][..],
        &["render-template", t, "--output-format", "mermaid"][..],
    ] {
        let (code, out, err) = opreg(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(out, want, "{args:?}");
        assert_eq!(err, "", "{args:?}");
    }
    let (code, out, _) = opreg(&["render-template", t]);
    assert_eq!(code, 0);
    assert!(out.starts_with('{'), "JSON stays the default: {out}");
}

#[test]
fn semver_mermaid_output_draws_the_generated_channels() {
    let d = tempfile::tempdir().unwrap();
    let t = semver_sample(d.path());
    let (code, out, err) = opreg(&["render-template", t.to_str().unwrap(), "-o", "mermaid"]);
    assert_eq!(code, 0, "{err}");
    // By upstream's rules: channels by name, entries newest first, a bundle skipped by a newer
    // entry marked.
    let want = fs::read_to_string(common::fixture("authoring/mermaid/semver-major.mmd")).unwrap();
    assert_eq!(out, want);
}
