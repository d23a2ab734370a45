//! The catalog resources (CatalogSource, ClusterCatalog): names, templates, collisions.

use super::*;

fn only(files: &[(String, String)], prefix: &str) -> Value {
    let (_, text) = files.iter().find(|(n, _)| n.starts_with(prefix)).unwrap();
    docs(text).remove(0)
}

#[test]
fn catalog_source_and_cluster_catalog() {
    let files = render(&[], &[catalog("v4.15", None)], false).unwrap();
    let cs = only(&files, "cs-");
    assert_eq!(cs["metadata"]["name"], "cs-redhat-operator-index-v4-15");
    assert_eq!(cs["metadata"]["namespace"], "openshift-marketplace");
    assert_eq!(
        cs["spec"],
        json!({"sourceType": "grpc", "image": "myregistry/mynamespace/redhat/redhat-operator-index:v4.15"})
    );
    let cc = only(&files, "cc-");
    assert_eq!(cc["metadata"]["name"], "cc-redhat-operator-index-v4-15");
    assert!(cc["metadata"].get("namespace").is_none());
    assert_eq!(
        cc["spec"],
        json!({"priority": 0, "source": {"type": "Image", "image": {"ref": "myregistry/mynamespace/redhat/redhat-operator-index:v4.15"}}})
    );
}

#[test]
fn a_digest_as_tag_names_by_its_first_twelve() {
    let files = render(&[], &[catalog(SHA_E, None)], false).unwrap();
    assert_eq!(
        names(&files),
        [
            "cc-redhat-operator-index-7c4ef7434c97.yaml",
            "cs-redhat-operator-index-7c4ef7434c97.yaml"
        ]
    );
    let image = format!("myregistry/mynamespace/redhat/redhat-operator-index:{SHA_E}");
    assert_eq!(only(&files, "cs-")["spec"]["image"], image.as_str());
}

#[test]
fn catalog_names_follow_oc_mirror() {
    let name = |d: &str| resource_name("cs", d);
    assert_eq!(
        name(&format!("r/ns/index@sha256:{SHA_E}")).unwrap(),
        "cs-index-7c4ef7434c97"
    );
    assert_eq!(name("r/ns/my.index:V1_2").unwrap(), "cs-my-index-v1-2");
    assert_eq!(name("r/ns/my_index:latest").unwrap(), "cs-my-index-latest");
    assert!(name(&format!("r/ns/{}:v1", "a".repeat(60)))
        .unwrap_err()
        .to_string()
        .contains("not a DNS label"));
    assert!(name("r/ns/index:v1-")
        .unwrap_err()
        .to_string()
        .contains("not a DNS label"));
}

#[test]
fn two_catalogs_with_one_name_are_refused() {
    let mut other = catalog("v4.15", None);
    other.source = "quay.io/other/redhat-operator-index:v4.15".into();
    other.destination = "myregistry/other/redhat-operator-index:v4.15".into();
    let err = render(&[], &[catalog("v4.15", None), other], false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("would both be cs resource cs-redhat-operator-index-v4-15"),
        "{err}"
    );
}

const TEMPLATE: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: totalRubbish
  namespace: openshift-marketplace
spec:
  image: totalRubbish
  sourceType: grpc
  updateStrategy:
    registryPoll:
      interval: 30m0s";

fn template(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_template_keeps_its_fields_and_gets_name_and_image() {
    let dir = tempfile::tempdir().unwrap();
    let t = template(dir.path(), "cs.yaml", TEMPLATE);
    check_template(&t).unwrap();
    let files = render(&[], &[catalog("v4.15", Some(t))], false).unwrap();
    let cs = only(&files, "cs-");
    assert_eq!(cs["metadata"]["name"], "cs-redhat-operator-index-v4-15");
    assert_eq!(cs["metadata"]["namespace"], "openshift-marketplace");
    assert_eq!(
        cs["spec"],
        json!({
            "sourceType": "grpc",
            "image": "myregistry/mynamespace/redhat/redhat-operator-index:v4.15",
            "updateStrategy": {"registryPoll": {"interval": "30m0s"}},
        })
    );
}

#[test]
fn a_template_merges_annotations_and_sets_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let text = "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nmetadata:\n  annotations: {team: a, createdBy: me}\n  labels: {x: y}\n  creationTimestamp: null\nspec:\n  displayName: Mirrored\n  priority: -100\nstatus: {}\n";
    let t = template(dir.path(), "cs.yaml", text);
    let cs = from_template(&t, "cs-x-0", "r/x:0").unwrap();
    assert_eq!(cs["metadata"]["annotations"]["team"], "a");
    assert_eq!(cs["metadata"]["annotations"]["createdBy"], "opreg");
    assert_eq!(cs["metadata"]["labels"], json!({"x": "y"}));
    assert!(cs["metadata"].get("creationTimestamp").is_none());
    assert!(cs.get("status").is_none());
    assert_eq!(cs["spec"]["sourceType"], "grpc");
    assert_eq!(cs["spec"]["priority"], -100);
}

#[test]
fn a_template_that_cannot_be_used_is_an_error() {
    // oc-mirror's catalog-source_template_KO.yaml (another kind), _KO2.yaml (not YAML) and a
    // missing file: oc-mirror falls back to no template with a log line; opreg refuses, naming
    // the file, so that settings asked for are never dropped silently.
    let dir = tempfile::tempdir().unwrap();
    let other_kind = TEMPLATE
        .replace("operators.coreos.com/v1alpha1", "config.openshift.io/v1")
        .replace("CatalogSource", "ImageDigestMirrorSet");
    let not_yaml = other_kind.replace("\n  image:", "\nimage:");
    let cases = [
        (
            template(dir.path(), "ko.yaml", &other_kind),
            "not a CatalogSource",
        ),
        (
            template(dir.path(), "ko2.yaml", &not_yaml),
            "not a YAML document",
        ),
        (dir.path().join("doesnt_exist.yaml"), "No such file"),
        (
            template(
                dir.path(),
                "cm.yaml",
                &format!("{TEMPLATE}\n  configMap: x"),
            ),
            "spec.configMap is set",
        ),
        (
            template(
                dir.path(),
                "st.yaml",
                &TEMPLATE.replace("sourceType: grpc", "sourceType: configmap"),
            ),
            "spec.sourceType",
        ),
        (
            template(
                dir.path(),
                "note.yaml",
                &TEMPLATE.replace("  name: totalRubbish", "  annotations: {n: 1}"),
            ),
            "metadata.annotations.n is not a string",
        ),
        (
            template(
                dir.path(),
                "typo.yaml",
                &format!("{TEMPLATE}\n  updateStrategey: {{}}"),
            ),
            "spec.updateStrategey is not a CatalogSource field",
        ),
    ];
    for (path, want) in cases {
        let err = check_template(&path).unwrap_err().to_string();
        assert!(
            err.contains(want) && err.contains(&path.display().to_string()),
            "{err}"
        );
        let err = render(&[], &[catalog("v4.15", Some(path))], false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn docker_hub_sources_and_partial_suffixes() {
    let list = [
        m(
            "busybox:1.36",
            "reg:5000/p/library/busybox:1.36",
            Kind::Additional,
        ),
        // The destination ends with the source's text but not with its components.
        m("quay.io/a/b:1", "reg:5000/xa/b:1", Kind::Operator),
    ];
    assert_eq!(
        sets(&list, Mode::Tag, false),
        vec![
            ("operator", entries(&[("quay.io/a/b", &["reg:5000/xa/b"])])),
            (
                "generic",
                entries(&[("docker.io/library", &["reg:5000/p/library"])])
            ),
        ]
    );
}

#[test]
fn one_source_many_mirrors_keeps_the_first_order() {
    let list = [
        m("quay.io/a/b:1", "reg/one/a/b:1", Kind::Operator),
        m("quay.io/a/c:1", "reg/two/a/c:1", Kind::Operator),
        m("quay.io/a/d:1", "reg/one/a/d:1", Kind::Operator),
    ];
    assert_eq!(
        sets(&list, Mode::Tag, false),
        vec![(
            "operator",
            entries(&[("quay.io/a", &["reg/one/a", "reg/two/a"])])
        )]
    );
}

#[test]
fn a_bad_reference_is_named() {
    let err = render(
        &[m("quay.io/A/b:1", "reg/a/b:1", Kind::Operator)],
        &[],
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("quay.io/A/b:1"), "{err}");
    let err = render(
        &[m("quay.io/a/b:1", "reg/a/b:", Kind::Operator)],
        &[],
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("destination reg/a/b:"), "{err}");
}

#[test]
fn write_replaces_the_resources_atomically() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cluster-resources");
    let first = render(&mixed(), &[catalog("v1", None)], false).unwrap();
    write(&out, &first).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let second = render(&mixed()[..1], &[catalog("v2", None)], false).unwrap();
    write(&out, &second).unwrap();
    let mut listed: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "cc-redhat-operator-index-v2.yaml",
            "cs-redhat-operator-index-v2.yaml",
            ITMS_FILE,
            "notes.txt"
        ]
    );
    for (name, text) in &second {
        assert_eq!(&std::fs::read_to_string(out.join(name)).unwrap(), text);
        let mode = std::fs::metadata(out.join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "{name}");
    }
    let err = write(&out, &[("../x.yaml".into(), String::new())])
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a cluster resource file name"), "{err}");
}

#[test]
fn the_files_read_as_oc_mirrors_do() {
    let list = [
        m(
            &format!("quay.io/ns/op@sha256:{SHA_A}"),
            &format!("reg:5000/p/ns/op@sha256:{SHA_A}"),
            Kind::Operator,
        ),
        m(
            "quay.io/ns/proxy:v1",
            "reg:5000/p/ns/proxy:v1",
            Kind::Operator,
        ),
    ];
    let files = render(&list, &[catalog("v4.15", None)], false).unwrap();
    let v = env!("CARGO_PKG_VERSION");
    let meta = format!("metadata:\n  annotations:\n    createdBy: opreg\n    opreg_version: {v}\n");
    assert_eq!(
        file(&files, IDMS_FILE),
        format!("---\napiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\n{meta}  name: idms-operator-0\nspec:\n  imageDigestMirrors:\n  - mirrors:\n    - reg:5000/p/ns\n    source: quay.io/ns\n")
    );
    assert_eq!(
        file(&files, "cs-redhat-operator-index-v4-15.yaml"),
        format!("apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\n{meta}  name: cs-redhat-operator-index-v4-15\n  namespace: openshift-marketplace\nspec:\n  image: myregistry/mynamespace/redhat/redhat-operator-index:v4.15\n  sourceType: grpc\n")
    );
    assert_eq!(
        file(&files, "cc-redhat-operator-index-v4-15.yaml"),
        format!("apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\n{meta}  name: cc-redhat-operator-index-v4-15\nspec:\n  priority: 0\n  source:\n    image:\n      ref: myregistry/mynamespace/redhat/redhat-operator-index:v4.15\n    type: Image\n")
    );
}
