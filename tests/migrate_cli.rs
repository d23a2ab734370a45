//! `opreg migrate` through the real binary: opm's layout (OUTDIR/PACKAGE/catalog.json or
//! .yaml, a root catalog for metas without a package), each file the bytes `opreg render`
//! writes for that package, and opm's refusal of a non-empty OUTDIR.

use crate::common;
use common::opreg;
use std::fs;

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

/// Upstream's TestMigrate "DeclcfgDir/Success": its foo catalog directory, migrated with no
/// migration to YAML, is exactly one file, `foo/catalog.yaml`, with upstream's expected bytes.
#[test]
fn upstream_declcfg_dir_migrates_to_upstreams_bytes() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/authoring/migrate");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let src = fixtures.join("foo-index-v0.2.0-declcfg");
    let (code, _, err) = opreg(&[
        "migrate",
        src.to_str().unwrap(),
        out.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    let files: Vec<String> = walkdir::WalkDir::new(&out)
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(&out).unwrap().display().to_string())
        .collect();
    assert_eq!(files, ["foo/catalog.yaml"]);
    let want = fs::read_to_string(fixtures.join("foo-catalog.yaml")).unwrap();
    assert_eq!(
        fs::read_to_string(out.join("foo/catalog.yaml")).unwrap(),
        want
    );
}
