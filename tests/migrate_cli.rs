//! `opreg migrate` through the real binary: opm's layout (OUTDIR/PACKAGE/catalog.json or
//! .yaml, a root catalog for metas without a package), each file the bytes `opreg render`
//! writes for that package, and opm's refusal of a non-empty OUTDIR and of bundles. Upstream's
//! TestMigrate cases run on its test inputs (tests/fixtures/authoring/migrate/), the image ones
//! pushed to a real registry (Debian's `docker-registry`) on loopback.

use crate::common;
use crate::registry_support;
use common::opreg;
use registry_support::ctx::{one_error_line, Ctx};
use registry_support::{dir_entries, Entry, Image, Registry, CONFIGS};
use std::fs;
use std::path::{Path, PathBuf};

const FBC: &str = r#"{"schema":"olm.package","name":"foo","defaultChannel":"s"}
{"schema":"olm.channel","name":"s","package":"foo","entries":[{"name":"foo.v1"}]}
{"schema":"olm.bundle","name":"foo.v1","package":"foo","image":"q/foo:1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},{"type":"olm.bundle.object","value":{"data":"eyJraW5kIjoiQ2x1c3RlclNlcnZpY2VWZXJzaW9uIiwibWV0YWRhdGEiOnsibmFtZSI6ImZvby52MSJ9LCJzcGVjIjp7ImRpc3BsYXlOYW1lIjoiRm9vIn19"}}]}
{"schema":"olm.package","name":"bar","defaultChannel":"s"}
{"schema":"olm.channel","name":"s","package":"bar","entries":[{"name":"bar.v1"}]}
{"schema":"olm.bundle","name":"bar.v1","package":"bar","image":"q/bar:1","properties":[{"type":"olm.package","value":{"packageName":"bar","version":"1.0.0"}}]}
{"schema":"example.other","name":"loose"}
"#;

#[test]
fn migrate_writes_one_directory_per_package_with_renders_bytes() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    fs::create_dir_all(src.join("x")).unwrap();
    fs::write(src.join("x/catalog.json"), FBC).unwrap();
    let out = d.path().join("out");
    let level = ["--migrate-level", "bundle-object-to-csv-metadata"];
    let (code, _, err) = opreg(
        &[
            &["migrate", src.to_str().unwrap(), out.to_str().unwrap()][..],
            &level,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    let mut names: Vec<String> = walkdir::WalkDir::new(&out)
        .min_depth(1)
        .into_iter()
        .map(|e| {
            e.unwrap()
                .path()
                .strip_prefix(&out)
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "bar",
            "bar/catalog.json",
            "catalog.json",
            "foo",
            "foo/catalog.json"
        ]
    );
    // Each package's file is what `opreg render` writes for that package alone.
    let foo = fs::read_to_string(out.join("foo/catalog.json")).unwrap();
    let only_foo: String = FBC
        .lines()
        .filter(|l| l.contains("\"foo"))
        .map(|l| format!("{l}\n"))
        .collect();
    let f = d.path().join("foo.json");
    fs::write(&f, only_foo).unwrap();
    let (code, rendered, _) = opreg(&[&["render", f.to_str().unwrap()][..], &level].concat());
    assert_eq!(code, 0);
    assert_eq!(foo, rendered);
    assert!(
        foo.contains("\"type\": \"olm.csv.metadata\"") && !foo.contains("olm.bundle.object"),
        "{foo}"
    );
    let root = fs::read_to_string(out.join("catalog.json")).unwrap();
    assert_eq!(
        root,
        "{\n    \"name\": \"loose\",\n    \"schema\": \"example.other\"\n}\n"
    );
    // YAML: catalog.yaml files.
    let yout = d.path().join("yout");
    let (code, _, err) = opreg(&[
        "migrate",
        src.to_str().unwrap(),
        yout.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    let bar = fs::read_to_string(yout.join("bar/catalog.yaml")).unwrap();
    assert!(
        bar.starts_with("---\ndefaultChannel: s\nname: bar\nschema: olm.package\n---\n"),
        "{bar}"
    );
}

#[test]
fn migrate_refuses_a_non_empty_outdir_and_leaves_it_untouched() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("catalog.json"), FBC).unwrap();
    let out = d.path().join("out");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("keep"), "x").unwrap();
    let (code, _, err) = opreg(&["migrate", src.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("must be empty"), "{err}");
    assert_eq!(fs::read_dir(&out).unwrap().count(), 1);
    // An empty OUTDIR is filled; an unreadable source leaves nothing behind.
    let empty = d.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let (code, _, err) = opreg(&["migrate", src.to_str().unwrap(), empty.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(empty.join("foo/catalog.json").is_file());
    fs::write(src.join("broken.json"), "{not json").unwrap();
    let none = d.path().join("none");
    let (code, _, _) = opreg(&["migrate", src.to_str().unwrap(), none.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(!none.exists());
    let leftovers = fs::read_dir(d.path()).unwrap().filter(|e| {
        e.as_ref()
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".opreg-migrate")
    });
    assert_eq!(leftovers.count(), 0);
}

/// An input of upstream's TestMigrate.
fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/authoring/migrate")
        .join(rel)
}

/// Upstream's expected output of its foo catalog: exactly one file, `foo/catalog.yaml`, with
/// the bytes upstream expects.
fn assert_upstreams_foo_catalog(out: &Path) {
    let files: Vec<String> = walkdir::WalkDir::new(out)
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(out).unwrap().display().to_string())
        .collect();
    assert_eq!(files, ["foo/catalog.yaml"]);
    let want = fs::read_to_string(fixture("foo-catalog.yaml")).unwrap();
    assert_eq!(
        fs::read_to_string(out.join("foo/catalog.yaml")).unwrap(),
        want
    );
}

/// Upstream's TestMigrate "DeclcfgDir/Success": its foo catalog directory, migrated with no
/// migration to YAML, is upstream's expected catalog.
#[test]
fn upstream_declcfg_dir_migrates_to_upstreams_bytes() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let src = fixture("foo-index-v0.2.0-declcfg");
    let (code, _, err) = opreg(&[
        "migrate",
        src.to_str().unwrap(),
        out.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_upstreams_foo_catalog(&out);
}

/// Upstream's TestMigrate "DeclcfgImage/Success": the same directory in a catalog image
/// (`index.configs.v1=/foo`, the directory's files under /foo) pulled from a registry gives the
/// same catalog.
#[test]
fn upstream_declcfg_image_migrates_to_upstreams_bytes() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let img = Image::new(&[(CONFIGS, "/foo")])
        .layer(&dir_entries(&fixture("foo-index-v0.2.0-declcfg"), "foo"));
    reg.push("foo-operator/foo-index-declcfg", "v0.2.0", &img);
    let reference = format!("{}/foo-operator/foo-index-declcfg:v0.2.0", reg.host());
    let out = ctx.path("out");
    let (code, _, err) = ctx.run(&[
        "migrate",
        &reference,
        out.to_str().unwrap(),
        "-o",
        "yaml",
        "--use-http",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_upstreams_foo_catalog(&out);
}

/// The labels a bundle.Dockerfile sets (`LABEL key=value` lines).
fn dockerfile_labels(dockerfile: &Path) -> Vec<(String, String)> {
    fs::read_to_string(dockerfile)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("LABEL "))
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect()
}

/// Runs `opreg migrate SOURCE OUTDIR` and checks the refusal of a bundle: exit 1, nothing on
/// stdout, one error line (returned), and OUTDIR as it was (missing, or empty) with nothing left
/// beside it.
fn assert_bundle_refused(ctx: &Ctx, source: &str, extra: &[&str]) -> String {
    let mut line = String::new();
    for existing in [false, true] {
        let parent = ctx.path(if existing { "empty-parent" } else { "parent" });
        fs::create_dir_all(&parent).unwrap();
        let out = parent.join("out");
        if existing {
            fs::create_dir_all(&out).unwrap();
        }
        let args = [&["migrate", source, out.to_str().unwrap()][..], extra].concat();
        let (code, stdout, err) = ctx.run(&args);
        line = one_error_line(code, &err, source);
        assert_eq!(stdout, "");
        if existing {
            assert_eq!(fs::read_dir(&out).unwrap().count(), 0, "OUTDIR stays empty");
            assert_eq!(fs::read_dir(&parent).unwrap().count(), 1);
        } else {
            assert!(!out.exists(), "OUTDIR is not created");
            assert_eq!(fs::read_dir(&parent).unwrap().count(), 0);
        }
    }
    line
}

/// Upstream's TestMigrate "BundleImage/Failure": a bundle image is not a catalog, and migrate
/// refuses it. Upstream's image has the package label only; the same files with the labels of
/// their bundle.Dockerfile are refused the same way. `opreg render` reads either as one bundle,
/// so the refusal is migrate's rule and not a broken image.
#[test]
fn upstream_bundle_image_is_refused_and_outdir_stays_empty() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let dir = fixture("foo-bundle-v0.1.0");
    let mut entries = dir_entries(&dir.join("manifests"), "manifests");
    entries.extend(dir_entries(&dir.join("metadata"), "metadata"));
    let dockerfile = dir.join("bundle.Dockerfile");
    entries.push(Entry::File(
        "bundle.Dockerfile".into(),
        fs::read(&dockerfile).unwrap(),
    ));
    let package_only = vec![(
        "operators.operatorframework.io.bundle.package.v1".to_string(),
        "foo".to_string(),
    )];
    let labelled = dockerfile_labels(&dockerfile);
    assert_eq!(labelled.len(), 5, "{labelled:?}");
    for (tag, labels) in [("v0.1.0", package_only), ("v0.1.0-labelled", labelled)] {
        let labels: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        reg.push(
            "foo-operator/foo-bundle",
            tag,
            &Image::new(&labels).layer(&entries),
        );
        let reference = format!("{}/foo-operator/foo-bundle:{tag}", reg.host());
        let line = assert_bundle_refused(&ctx, &reference, &["--use-http"]);
        assert_eq!(
            line,
            format!("error: {reference}: a bundle, not a catalog; only catalogs can be migrated")
        );
        let (code, out, err) = ctx.run(&["render", &reference, "--use-http"]);
        assert_eq!(code, 0, "{err}");
        let docs: Vec<serde_json::Value> = common::json_lines(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(docs.len(), 1, "{out}");
        assert_eq!(docs[0]["schema"], "olm.bundle");
        assert_eq!(docs[0]["name"], "foo.v0.1.0");
        assert_eq!(docs[0]["image"], reference.as_str());
    }
}

/// The same bundle as a directory is refused the same way.
#[test]
fn bundle_directory_is_refused_and_outdir_stays_empty() {
    let ctx = Ctx::new();
    let dir = fixture("foo-bundle-v0.1.0");
    let source = dir.to_str().unwrap();
    let line = assert_bundle_refused(&ctx, source, &[]);
    assert_eq!(
        line,
        format!("error: {source}: a bundle, not a catalog; only catalogs can be migrated")
    );
}
