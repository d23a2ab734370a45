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

#[path = "resources_catalog_tests.rs"]
mod catalog_resources;
