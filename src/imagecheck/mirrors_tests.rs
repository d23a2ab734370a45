//! One test per rule of [`super`]: digest-only and tag-only mirrors, wildcards, the most
//! specific source, merging, NeverContactSource, path boundaries, and refused input.

use super::*;

const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn mirrors(text: &str) -> Mirrors {
    let mut m = Mirrors::default();
    m.add("test.yaml", text).unwrap();
    m
}

fn at(m: &Mirrors, r: &str) -> Vec<String> {
    m.locations(r)
        .into_iter()
        .map(|l| {
            if l.mirror {
                l.reference
            } else {
                format!("source {}", l.reference)
            }
        })
        .collect()
}

fn idms(source: &str, mirrors: &[&str], policy: &str) -> String {
    format!(
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: x}}\n\
         spec:\n  imageDigestMirrors:\n  - source: {source}\n    mirrors: [{}]\n{policy}",
        mirrors.join(", ")
    )
}

fn itms(source: &str, mirrors: &[&str]) -> String {
    format!(
        "kind: ImageTagMirrorSet\nspec:\n  imageTagMirrors:\n  - source: {source}\n    mirrors: [{}]\n",
        mirrors.join(", ")
    )
}

#[test]
fn idms_mirrors_serve_digest_references_only() {
    let m = mirrors(&idms("quay.io/ns", &["mirror.local:5000/ns"], ""));
    assert_eq!(
        at(&m, &format!("quay.io/ns/op@{D}")),
        vec![
            format!("mirror.local:5000/ns/op@{D}"),
            format!("source quay.io/ns/op@{D}")
        ]
    );
    // A tag and a digest: pulled by digest.
    assert_eq!(
        at(&m, &format!("quay.io/ns/op:v1@{D}"))[0],
        format!("mirror.local:5000/ns/op@{D}")
    );
    assert_eq!(at(&m, "quay.io/ns/op:v1"), vec!["source quay.io/ns/op:v1"]);
}

#[test]
fn itms_mirrors_serve_tag_references_only() {
    let m = mirrors(&itms("quay.io/ns/op", &["mirror.local/staging/op"]));
    assert_eq!(
        at(&m, "quay.io/ns/op:v1"),
        vec!["mirror.local/staging/op:v1", "source quay.io/ns/op:v1"]
    );
    assert_eq!(
        at(&m, "quay.io/ns/op"),
        vec![
            "mirror.local/staging/op:latest",
            "source quay.io/ns/op:latest"
        ]
    );
    assert_eq!(
        at(&m, &format!("quay.io/ns/op@{D}")),
        vec![format!("source quay.io/ns/op@{D}")]
    );
}

#[test]
fn icsp_serves_digests_and_has_no_source_policy() {
    let text = "kind: ImageContentSourcePolicy\napiVersion: operator.openshift.io/v1alpha1\n\
                spec:\n  repositoryDigestMirrors:\n  - source: registry.redhat.io\n    \
                mirrors: [mirror.local]\n";
    let m = mirrors(text);
    assert_eq!(
        at(&m, &format!("registry.redhat.io/a/b@{D}"))[0],
        format!("mirror.local/a/b@{D}")
    );
    assert_eq!(at(&m, "registry.redhat.io/a/b:1").len(), 1);
    let with_policy = format!("{text}    mirrorSourcePolicy: NeverContactSource\n");
    let e = Mirrors::default()
        .add("icsp.yaml", &with_policy)
        .unwrap_err();
    assert!(e.to_string().contains("icsp.yaml: document 1: repositoryDigestMirrors[0]: ImageContentSourcePolicy has no mirrorSourcePolicy"), "{e}");
}

#[test]
fn a_wildcard_source_matches_every_host_below_its_domain() {
    let m = mirrors(&idms("'*.example.com'", &["mirror.local/ex"], ""));
    assert_eq!(
        at(&m, &format!("a.example.com/ns/op@{D}")),
        vec![
            format!("mirror.local/ex/ns/op@{D}"),
            format!("source a.example.com/ns/op@{D}")
        ]
    );
    assert_eq!(
        at(&m, &format!("b.a.example.com:5000/op@{D}"))[0],
        format!("mirror.local/ex/op@{D}")
    );
    // The domain itself is not below it; nor is a host that merely ends in its letters.
    assert_eq!(at(&m, &format!("example.com/op@{D}")).len(), 1);
    assert_eq!(at(&m, &format!("notexample.com/op@{D}")).len(), 1);
}

#[test]
fn the_most_specific_source_wins_and_only_its_mirrors_are_tried() {
    let text = [
        idms("quay.io", &["m.local/all"], ""),
        idms("quay.io/ns/op", &["m.local/op"], ""),
        idms("quay.io/ns", &["m.local/ns"], ""),
        idms("'*.quay.io'", &["m.local/wild"], ""),
    ]
    .join("---\n");
    let m = mirrors(&text);
    assert_eq!(
        at(&m, &format!("quay.io/ns/op@{D}"))[..1],
        [format!("m.local/op@{D}")]
    );
    assert_eq!(
        at(&m, &format!("quay.io/ns/other@{D}")),
        vec![
            format!("m.local/ns/other@{D}"),
            format!("source quay.io/ns/other@{D}")
        ]
    );
    assert_eq!(
        at(&m, &format!("quay.io/x/y@{D}"))[0],
        format!("m.local/all/x/y@{D}")
    );
    assert_eq!(
        at(&m, &format!("cdn.quay.io/x@{D}"))[0],
        format!("m.local/wild/x@{D}")
    );
}

#[test]
fn a_source_matches_at_a_path_boundary_after_docker_hub_normalisation() {
    let m = mirrors(&idms("quay.io/ns", &["m.local/ns"], ""));
    assert_eq!(at(&m, &format!("quay.io/nsx/op@{D}")).len(), 1);
    let m = mirrors(&idms("docker.io/busybox", &["m.local/busybox"], ""));
    assert_eq!(
        at(&m, &format!("busybox@{D}"))[0],
        format!("m.local/busybox@{D}")
    );
    assert_eq!(m.sources(), vec!["docker.io/library/busybox"]);
}

#[test]
fn entries_with_the_same_source_merge_in_order() {
    let mut m = Mirrors::default();
    m.add(
        "a.yaml",
        &[
            idms("quay.io/ns", &["m1.local/ns", "m2.local/ns"], ""),
            idms("quay.io/ns", &["m3.local/ns", "m1.local/ns"], ""),
        ]
        .join("---\n"),
    )
    .unwrap();
    m.add("b.yaml", &itms("quay.io/ns", &["t.local/ns"]))
        .unwrap();
    m.add("c.yaml", &idms("quay.io/ns", &["m4.local/ns"], ""))
        .unwrap();
    let got: Vec<String> = at(&m, &format!("quay.io/ns/op@{D}"))
        .into_iter()
        .map(|r| r.split('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        got,
        vec![
            "m1.local",
            "m2.local",
            "m3.local",
            "m4.local",
            "source quay.io"
        ]
    );
    assert_eq!(at(&m, "quay.io/ns/op:1")[0], "t.local/ns/op:1");
    assert_eq!(m.sources().len(), 1);
}

#[test]
fn never_contact_source_leaves_only_the_mirrors() {
    let policy = "    mirrorSourcePolicy: NeverContactSource\n";
    let m = mirrors(&idms("quay.io/ns", &["m.local/ns"], policy));
    assert_eq!(
        at(&m, &format!("quay.io/ns/op@{D}")),
        vec![format!("m.local/ns/op@{D}")]
    );
    // The policy is the source's: a tag reference has no mirror and no source to go to.
    assert_eq!(at(&m, "quay.io/ns/op:1"), Vec::<String>::new());
    let allow = "    mirrorSourcePolicy: AllowContactingSource\n";
    let m = mirrors(&idms("quay.io/ns", &["m.local/ns"], allow));
    assert_eq!(at(&m, &format!("quay.io/ns/op@{D}")).len(), 2);
}

#[test]
fn lists_empty_documents_and_unmatched_references() {
    let list = format!(
        "kind: List\nitems:\n- {}\n",
        itms("quay.io/a", &["m.local/a"]).replace('\n', "\n  ")
    );
    let m = mirrors(&format!("---\n---\n{list}"));
    assert_eq!(at(&m, "quay.io/a/b:1")[0], "m.local/a/b:1");
    assert_eq!(at(&m, "ghcr.io/a/b:1"), vec!["source ghcr.io/a/b:1"]);
    assert_eq!(at(&m, "NOT A REF"), vec!["source NOT A REF"]);
    assert!(mirrors("").is_empty());
}

#[test]
fn bad_files_are_refused_naming_file_document_and_entry() {
    let cases = [
        ("kind: ConfigMap\n", "document 1: kind ConfigMap is not"),
        ("spec: {}\n", "document 1: no kind"),
        (
            &idms("quay.io/ns:v1", &["m.local"], ""),
            "imageDigestMirrors[0]: \"quay.io/ns:v1\"",
        ),
        (&idms("quay.io/ns@sha256:00", &["m.local"], ""), "digest"),
        (
            &idms("quay.io", &["'*.m.local'"], ""),
            "cannot be a wildcard",
        ),
        (&idms("'*.x/y'", &["m.local"], ""), "wildcard"),
        (&idms("nodot/ns", &["m.local"], ""), "dot or a port"),
        (&idms("", &["m.local"], ""), "empty"),
        (
            &idms(
                "quay.io",
                &["m.local"],
                "    mirrorSourcePolicy: Sometimes\n",
            ),
            "\"Sometimes\" is not",
        ),
        ("kind: [\n", "document 1"),
        (&"[".repeat(5000), "nest"),
    ];
    for (text, want) in cases {
        let e = Mirrors::default().add("bad.yaml", text).unwrap_err();
        assert!(
            e.to_string().starts_with("bad.yaml: ") && e.to_string().contains(want),
            "{text:?}: {e}"
        );
    }
    let e = Mirrors::read(&["/nonexistent/idms.yaml"]).unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/idms.yaml: "), "{e}");
}
