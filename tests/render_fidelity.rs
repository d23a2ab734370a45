//! `opreg render -o yaml` gives back, byte for byte, the catalogs Red Hat's pipeline rendered
//! with `opm render -o yaml` (the shared corpus's `rendered/` tree; its one hand-written file
//! is left out).

use crate::common;

use common::{opreg, shared};

#[test]
fn opm_rendered_catalogs_render_back_byte_for_byte() {
    let files = corpus_files(false);
    assert_eq!(files.len(), 76);
    let mut differ = Vec::new();
    for f in &files {
        let want = std::fs::read_to_string(f).unwrap();
        let (code, got, err) = opreg(&["render", f.to_str().unwrap(), "-o", "yaml"]);
        assert_eq!(code, 0, "{}: {err}", f.display());
        if let Some(d) = first_difference(&want, &got) {
            differ.push(format!("{}: {d}", f.display()));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of 76 differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// Every corpus package (the hand-written one too), against what opm writes for `-o json` as
/// built by an independent script (`tests/render_support/opm_json.py`: PyYAML and Python's
/// json module, with opm's struct field orders), not by opreg's writer.
#[test]
fn render_json_is_what_opm_writes() {
    let files = corpus_files(true);
    assert_eq!(files.len(), 77);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/render_support/opm_json.py");
    let mut differ = Vec::new();
    for f in &files {
        let py = std::process::Command::new("python3")
            .arg(&script)
            .arg(f)
            .output()
            .expect("python3");
        assert!(
            py.status.success(),
            "{}",
            String::from_utf8_lossy(&py.stderr)
        );
        let want = String::from_utf8(py.stdout).unwrap();
        let (code, got, err) = opreg(&["render", f.to_str().unwrap(), "-o", "json"]);
        assert_eq!(code, 0, "{}: {err}", f.display());
        if let Some(d) = first_difference(&want, &got) {
            differ.push(format!("{}: {d}", f.display()));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of 77 differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

fn corpus_files(with_hand_written: bool) -> Vec<std::path::PathBuf> {
    let root = shared("corpus/rendered");
    let mut files = Vec::new();
    for repo in std::fs::read_dir(&root).unwrap() {
        for pkg in std::fs::read_dir(repo.unwrap().path()).unwrap() {
            let p = pkg.unwrap().path();
            // Each repository's `.source-commit` file sits beside its package directories.
            if !p.is_dir() {
                continue;
            }
            // Written by hand, not by opm (see the corpus README).
            if !with_hand_written && p.ends_with("certified-operators-v4.22/linstor-operator") {
                continue;
            }
            files.push(p.join("catalog.yaml"));
        }
    }
    files.sort();
    files
}

fn first_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let line = want
        .lines()
        .zip(got.lines())
        .position(|(w, g)| w != g)
        .unwrap_or_else(|| want.lines().count().min(got.lines().count()));
    Some(format!(
        "line {}:\n  opm:   {:?}\n  opreg: {:?}",
        line + 1,
        want.lines().nth(line),
        got.lines().nth(line)
    ))
}

/// A bundle directory renders as what opm writes for it: one `olm.bundle` and nothing else,
/// with its declared `olm.package` in place of the derived one, every manifest as upstream's
/// JSON (sorted keys, `<>&` escaped, a 64-bit integer exact), the manifests last, and the
/// CSV's related images sorted by image with duplicates kept.
#[test]
fn a_bundle_directory_renders_as_one_bundle() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("etcd");
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::write(
        dir.join("manifests/etcd.csv.yaml"),
        r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: etcd.v0.9.4
  annotations:
    description: "<b>etcd</b> & more"
spec:
  version: 0.9.4
  relatedImages:
  - name: z
    image: quay.io/z:1
  - name: a
    image: quay.io/a:1
  - name: a-again
    image: quay.io/a:1
  install:
    strategy: deployment
    spec:
      deployments:
      - name: etcd-operator
        spec:
          template:
            spec:
              containers:
              - name: etcd
                image: quay.io/m:1
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("manifests/crd.yaml"),
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: etcdclusters.etcd.database.coreos.com
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          size:
            maximum: 9007199254740993
            type: integer
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/properties.yaml"),
        "properties:\n- type: olm.package\n  value:\n    packageName: etcd\n    version: 0.9.5\n",
    )
    .unwrap();
    let (code, out, err) = opreg(&["render", dir.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&out)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(docs.len(), 1, "only the olm.bundle: {out}");
    let b = &docs[0];
    assert_eq!(b["schema"], "olm.bundle");
    let props = b["properties"].as_array().unwrap();
    let packages: Vec<_> = props
        .iter()
        .filter(|p| p["type"] == "olm.package")
        .collect();
    assert_eq!(packages.len(), 1, "{out}");
    assert_eq!(packages[0]["value"]["version"], "0.9.5");
    let types: Vec<&str> = props.iter().map(|p| p["type"].as_str().unwrap()).collect();
    let first_object = types
        .iter()
        .position(|t| *t == "olm.bundle.object")
        .unwrap();
    assert!(
        types[first_object..]
            .iter()
            .all(|t| *t == "olm.bundle.object"),
        "{types:?}"
    );
    let objects: Vec<String> = props
        .iter()
        .filter(|p| p["type"] == "olm.bundle.object")
        .map(|p| {
            use base64::Engine;
            let data = p["value"]["data"].as_str().unwrap();
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap(),
            )
            .unwrap()
        })
        .collect();
    assert!(
        objects
            .iter()
            .any(|o| o.contains(r#"{"maximum":9007199254740993,"type":"integer"}"#)),
        "{objects:?}"
    );
    assert!(
        objects
            .iter()
            .any(|o| o.contains(r#""\u003cb\u003eetcd\u003c/b\u003e \u0026 more""#)),
        "{objects:?}"
    );
    let related: Vec<(String, String)> = b["relatedImages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().into(),
                r["image"].as_str().unwrap().into(),
            )
        })
        .collect();
    let pair = |n: &str, i: &str| (n.to_string(), i.to_string());
    assert_eq!(
        related,
        [
            pair("a", "quay.io/a:1"),
            pair("a-again", "quay.io/a:1"),
            pair("", "quay.io/m:1"),
            pair("z", "quay.io/z:1"),
        ]
    );
    // Flags opm scripts pass.
    let (code, yaml, err) = opreg(&[
        "render",
        dir.to_str().unwrap(),
        "--output",
        "yaml",
        "--migrate",
        "--alpha-image-ref-template",
        "quay.io/x/{{.Package}}:v{{.Version}}",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        yaml.starts_with("---\nimage: quay.io/x/etcd:v0.9.5\nname: etcd.v0.9.4\n"),
        "{yaml}"
    );
    assert!(yaml.contains("type: olm.csv.metadata"), "{yaml}");
    assert!(!yaml.contains("olm.bundle.object"), "{yaml}");
}
