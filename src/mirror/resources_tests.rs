//! Cases ported from oc-mirror's `clusterresources_test.go` (same inputs and verdicts, with its
//! release-image kinds left out: opreg mirrors no releases), then opreg's own.
use super::*;

const SHA_A: &str = "a5d4f4467250074216eb1ba1c36e06a3ab797d81c431427fc2aca97ecaf4e9d8";
const SHA_B: &str = "d3016b1507515fc7712f9c47fd9082baf9ccb070aaab58ed0ef6e5abdedde8ba";
const SHA_C: &str = "f42337e7b85a46d83c94694638e2312e10ca16a03542399a65ba783c94a32b63";
const SHA_D: &str = "b93deceb59a58588d5b16429fc47f98920f84740a1f2ed6454e33275f0701b59";
const SHA_E: &str = "7c4ef7434c97c8aaf6cd310874790b915b3c61fc902eea255f9177058ea9aff3";

fn m(source: &str, destination: &str, kind: Kind) -> Mirrored {
    Mirrored {
        source: source.into(),
        destination: destination.into(),
        kind,
    }
}

/// oc-mirror's `imageListMixed`, less its release images.
fn mixed() -> Vec<Mirrored> {
    let d = "docker://myregistry/mynamespace";
    vec![
        m(
            "docker://gcr.io/kubebuilder/kube-rbac-proxy:v0.5.0",
            &format!("{d}/kubebuilder/kube-rbac-proxy:v0.5.0"),
            Kind::Operator,
        ),
        m(
            "docker://quay.io/cockroachdb/cockroach-helm-operator:6.0.0",
            &format!("{d}/cockroachdb/cockroach-helm-operator:6.0.0"),
            Kind::Operator,
        ),
        m(
            "docker://quay.io/helmoperators/cockroachdb:v5.0.3",
            &format!("{d}/helmoperators/cockroachdb:v5.0.3"),
            Kind::Operator,
        ),
        m(
            "docker://quay.io/helmoperators/cockroachdb:v5.0.4",
            &format!("{d}/helmoperators/cockroachdb:v5.0.4"),
            Kind::Operator,
        ),
        m(
            &format!("docker://quay.io/openshift-community-operators/cockroachdb@sha256:{SHA_A}"),
            &format!("{d}/openshift-community-operators/cockroachdb@sha256:{SHA_A}"),
            Kind::Operator,
        ),
        m(
            &format!("docker://quay.io/openshift-community-operators/cockroachdb@sha256:{SHA_B}"),
            &format!("{d}/openshift-community-operators/cockroachdb@sha256:{SHA_B}"),
            Kind::Operator,
        ),
        m(
            &format!("docker://quay.io/openshift/openshift-community-operators@sha256:{SHA_C}"),
            &format!("{d}/openshift/openshift-community-operators@sha256:{SHA_C}"),
            Kind::Catalog,
        ),
        m(
            "oci:///tmp/app1",
            &format!("{d}/openshift/redhat-operator-index@sha256:{SHA_C}"),
            Kind::Catalog,
        ),
        m(
            &format!("docker://registry.redhat.io/ubi8-minimal@sha256:{SHA_D}"),
            &format!("{d}/ubi8-minimal@sha256:{SHA_D}"),
            Kind::Operator,
        ),
        m(
            "docker://registry.redhat.io/ubi8/ubi:latest",
            &format!("{d}/ubi8/ubi:latest"),
            Kind::Additional,
        ),
    ]
}

fn entries(pairs: &[(&str, &[&str])]) -> Entries {
    pairs
        .iter()
        .map(|(s, ms)| (s.to_string(), ms.iter().map(|m| m.to_string()).collect()))
        .collect()
}

fn sets(list: &[Mirrored], mode: Mode, repo: bool) -> Vec<(&'static str, Entries)> {
    mirror_sets(list, mode, repo).unwrap()
}

#[test]
fn mixed_digests_map_namespaces() {
    assert_eq!(
        sets(&mixed(), Mode::Digest, false),
        vec![(
            "operator",
            entries(&[
                (
                    "quay.io/openshift-community-operators",
                    &["myregistry/mynamespace/openshift-community-operators"]
                ),
                ("registry.redhat.io", &["myregistry/mynamespace"]),
            ])
        )]
    );
}

#[test]
fn mixed_tags_map_namespaces_by_category() {
    assert_eq!(
        sets(&mixed(), Mode::Tag, false),
        vec![
            (
                "operator",
                entries(&[
                    (
                        "gcr.io/kubebuilder",
                        &["myregistry/mynamespace/kubebuilder"]
                    ),
                    (
                        "quay.io/cockroachdb",
                        &["myregistry/mynamespace/cockroachdb"]
                    ),
                    (
                        "quay.io/helmoperators",
                        &["myregistry/mynamespace/helmoperators"]
                    ),
                ])
            ),
            (
                "generic",
                entries(&[("registry.redhat.io/ubi8", &["myregistry/mynamespace/ubi8"])])
            ),
        ]
    );
}

#[test]
fn repository_scope_maps_repositories() {
    assert_eq!(
        sets(&mixed(), Mode::Digest, true),
        vec![(
            "operator",
            entries(&[
                (
                    "quay.io/openshift-community-operators/cockroachdb",
                    &["myregistry/mynamespace/openshift-community-operators/cockroachdb"]
                ),
                (
                    "registry.redhat.io/ubi8-minimal",
                    &["myregistry/mynamespace/ubi8-minimal"]
                ),
            ])
        )]
    );
}

#[test]
fn folded_paths_map_repositories() {
    // oc-mirror's imageListMaxNestedPaths: with or without the forced scope, the folded
    // destination does not end with the source path.
    let list = [m(
        "docker://quay.io/cockroachdb/cockroach-helm-operator:6.0.0",
        "docker://myregistry/mynamespace/cockroachdb-cockroach-helm-operator:6.0.0",
        Kind::Operator,
    )];
    let want = vec![(
        "operator",
        entries(&[(
            "quay.io/cockroachdb/cockroach-helm-operator",
            &["myregistry/mynamespace/cockroachdb-cockroach-helm-operator"],
        )]),
    )];
    assert_eq!(sets(&list, Mode::Tag, true), want);
    assert_eq!(sets(&list, Mode::Tag, false), want);
}

#[test]
fn digests_only_give_only_an_idms() {
    // oc-mirror's imageListDigestsOnly (release content there, operator images here), with
    // its repeated image.
    let hexes = [
        SHA_E,
        "6d76ffca7a233213325907bae611e835b49c5b933095be1328351f4f5fc67615",
        SHA_E,
    ];
    let list: Vec<Mirrored> = hexes
        .iter()
        .map(|h| {
            m(
                &format!("docker://quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{h}"),
                &format!("docker://myregistry/mynamespace/openshift-release-dev/ocp-v4.0-art-dev@sha256:{h}"),
                Kind::Operator,
            )
        })
        .collect();
    assert_eq!(
        sets(&list, Mode::Digest, false),
        vec![(
            "operator",
            entries(&[(
                "quay.io/openshift-release-dev",
                &["myregistry/mynamespace/openshift-release-dev"]
            )])
        )]
    );
    assert!(sets(&list, Mode::Tag, false).is_empty());
    let files = render(&list, &[], false).unwrap();
    assert_eq!(names(&files), [IDMS_FILE]);
}

#[test]
fn destination_naming_release_is_no_special_case() {
    // oc-mirror's OCPBUGS-47688: a destination path that merely contains the source's words.
    let list = [
        m("docker://quay.io/openshift-release-dev/ocp-release:4.17.9-x86_64", "docker://myregistry/openshift-release-dev/ocp-release/openshift/release-images:4.17.9-x86_64", Kind::Operator),
        m("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:024bb32ca49837b9ce58f0e1610e5bbb395df7ffaa90ddcffb8cf8ef1b3900dc", "docker://myregistry/openshift-release-dev/ocp-release/openshift/release:4.17.9-x86_64-tools", Kind::Operator),
    ];
    assert_eq!(
        sets(&list, Mode::Digest, false),
        vec![(
            "operator",
            entries(&[(
                "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
                &["myregistry/openshift-release-dev/ocp-release/openshift/release"]
            )])
        )]
    );
    assert_eq!(
        sets(&list, Mode::Tag, false),
        vec![(
            "operator",
            entries(&[(
                "quay.io/openshift-release-dev/ocp-release",
                &["myregistry/openshift-release-dev/ocp-release/openshift/release-images"]
            )])
        )]
    );
}

#[test]
fn tag_and_digest_go_in_both_sets() {
    // oc-mirror's OCPBUGS-85331.
    let list = [m(
        "docker://nvcr.io/nvidia/k8s/container-toolkit:v1.19.1@sha256:c927adbc9b7755c5cb90022fdcc5c1295f5fe5fe1f38200a2dc65e85632b029c",
        "docker://myregistry/mynamespace/nvidia/k8s/container-toolkit:v1.19.1",
        Kind::Operator,
    )];
    let want = vec![(
        "operator",
        entries(&[("nvcr.io/nvidia/k8s", &["myregistry/mynamespace/nvidia/k8s"])]),
    )];
    assert_eq!(sets(&list, Mode::Digest, false), want);
    assert_eq!(sets(&list, Mode::Tag, false), want);
    assert_eq!(
        names(&render(&list, &[], false).unwrap()),
        [IDMS_FILE, ITMS_FILE]
    );
}

#[test]
fn nothing_mirrored_writes_nothing() {
    assert!(render(&[], &[], false).unwrap().is_empty());
}

fn names(files: &[(String, String)]) -> Vec<&str> {
    files.iter().map(|(n, _)| n.as_str()).collect()
}

fn docs(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    yaml_serde::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

fn file<'a>(files: &'a [(String, String)], name: &str) -> &'a str {
    &files
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

#[test]
fn every_file_is_yaml_of_its_kind_without_status() {
    let files = render(&mixed(), &[catalog("v4.15", None)], false).unwrap();
    assert_eq!(
        names(&files),
        [
            "cc-redhat-operator-index-v4-15.yaml",
            "cs-redhat-operator-index-v4-15.yaml",
            IDMS_FILE,
            ITMS_FILE
        ]
    );
    let want = [
        ("cc-", CC_API, "ClusterCatalog"),
        ("cs-", CS_API, "CatalogSource"),
        ("idms", CONFIG_API, "ImageDigestMirrorSet"),
        ("itms", CONFIG_API, "ImageTagMirrorSet"),
    ];
    for ((name, text), (prefix, api, kind)) in files.iter().zip(want) {
        assert!(name.starts_with(prefix));
        for d in docs(text) {
            assert_eq!(d["apiVersion"], api, "{name}");
            assert_eq!(d["kind"], kind, "{name}");
            assert!(d.get("status").is_none(), "{name}");
            assert!(d["metadata"].get("creationTimestamp").is_none(), "{name}");
            assert_eq!(d["metadata"]["annotations"]["createdBy"], "opreg");
        }
    }
    let itms = docs(file(&files, ITMS_FILE));
    let names: Vec<&str> = itms
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["itms-operator-0", "itms-generic-0"]);
    assert_eq!(
        itms[1]["spec"]["imageTagMirrors"],
        json!([{"source": "registry.redhat.io/ubi8", "mirrors": ["myregistry/mynamespace/ubi8"]}])
    );
    let idms = docs(file(&files, IDMS_FILE));
    assert_eq!(idms.len(), 1);
    assert_eq!(idms[0]["metadata"]["name"], "idms-operator-0");
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let a = render(&mixed(), &[catalog("v4.15", None)], false).unwrap();
    let mut reversed = mixed();
    reversed.reverse();
    let b = render(&reversed, &[catalog("v4.15", None)], false).unwrap();
    assert_eq!(a, b);
    assert!(file(&a, IDMS_FILE)
        .starts_with("---\napiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\n"));
}

fn catalog(tag: &str, template: Option<PathBuf>) -> CatalogResource {
    CatalogResource {
        source: format!("registry.redhat.io/redhat/redhat-operator-index:{tag}"),
        destination: format!("docker://myregistry/mynamespace/redhat/redhat-operator-index:{tag}"),
        template,
    }
}

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
        .contains("not a DNS label"));
    assert!(name("r/ns/index:v1-")
        .unwrap_err()
        .contains("not a DNS label"));
}

#[test]
fn two_catalogs_with_one_name_are_refused() {
    let mut other = catalog("v4.15", None);
    other.source = "quay.io/other/redhat-operator-index:v4.15".into();
    other.destination = "myregistry/other/redhat-operator-index:v4.15".into();
    let err = render(&[], &[catalog("v4.15", None), other], false).unwrap_err();
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
        let err = check_template(&path).unwrap_err();
        assert!(
            err.contains(want) && err.contains(&path.display().to_string()),
            "{err}"
        );
        let err = render(&[], &[catalog("v4.15", Some(path))], false).unwrap_err();
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
    .unwrap_err();
    assert!(err.contains("quay.io/A/b:1"), "{err}");
    let err = render(
        &[m("quay.io/a/b:1", "reg/a/b:", Kind::Operator)],
        &[],
        false,
    )
    .unwrap_err();
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
    let err = write(&out, &[("../x.yaml".into(), String::new())]).unwrap_err();
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
