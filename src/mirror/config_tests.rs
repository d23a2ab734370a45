use super::*;

const FULL: &str = r#"
apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
archiveSize: 4
mirror:
  operators:
  - catalog: registry.redhat.io/redhat/redhat-operator-index:v4.18
    targetCatalog: my/ops
    targetTag: v1
    skipDependencies: true
    platforms:
    - {os: linux, architecture: amd64}
    packages:
    - name: aws-load-balancer-operator
      defaultChannel: stable-v1
      channels:
      - name: stable-v1
        minVersion: 1.1.0
        maxVersion: 1.2.0
    - name: 3scale-operator
      minVersion: 0.10.0
  additionalImages:
  - name: registry.redhat.io/ubi8/ubi:latest
    targetRepo: base/ubi
    targetTag: "8"
  blockedImages:
  - name: .*/alpine.*
"#;

#[test]
fn oc_mirrors_fields_are_read() {
    let c = parse(FULL).unwrap();
    assert_eq!(c.archive_size, Some(4));
    let op = &c.mirror.operators[0];
    assert_eq!(op.target_catalog, "my/ops");
    assert!(op.skip_dependencies && !op.full);
    assert_eq!(op.platforms[0].architecture, "amd64");
    assert_eq!(op.packages[0].channels[0].max_version, "1.2.0");
    assert_eq!(op.packages[1].min_version, "0.10.0");
    assert_eq!(c.mirror.additional_images[0].target_repo, "base/ubi");
    assert_eq!(c.mirror.blocked_images[0].name, ".*/alpine.*");
    assert_eq!(unique_name(op), "my/ops:v1");
}

#[test]
fn sections_opreg_does_not_mirror_are_refused_by_name() {
    let text = FULL.replace(
        "mirror:\n",
        "mirror:\n  platform:\n    channels:\n    - {name: stable-4.18}\n  helm:\n    repositories: [{name: x, url: y}]\n",
    );
    let e = parse(&text).unwrap_err().to_string();
    assert_eq!(
        e,
        "mirror.platform, mirror.helm not supported: opreg mirrors operator catalogs and additional images only"
    );
    // Empty ones are no sections.
    let text = FULL.replace("mirror:\n", "mirror:\n  helm: {}\n  samples: []\n");
    assert!(parse(&text).is_ok());
}

#[test]
fn the_kind_and_version_are_checked() {
    let e = parse("apiVersion: mirror.openshift.io/v1alpha2\nkind: ImageSetConfiguration\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("v1alpha2"), "{e}");
    assert!(parse("- a\n").is_err());
    let e = parse("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operator: []\n").unwrap_err().to_string();
    assert_eq!(e, "line 4, column 3: mirror.operator: unknown field");
}

#[test]
fn every_unknown_field_is_reported_with_its_line_and_column() {
    let text = "apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
archivesize: 4
mirror:
  operators:
  - catalog: quay.io/c:v1
    packges: []
    packages:
    - name: a
      bundles:
      - name: a.v1.0.0
      channels:
      - name: stable
        minVersoin: 1.0.0
";
    let e = parse(text).unwrap_err().to_string();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 4, "{e}");
    assert_eq!(lines[0], "line 3, column 1: archivesize: unknown field");
    assert_eq!(
        lines[1],
        "line 7, column 5: mirror.operators.0.packges: unknown field"
    );
    assert!(
        lines[2].starts_with("line 10, column 7: mirror.operators.0.packages.0.bundles: unknown field: selecting bundles by name")
            && lines[2].contains("minVersion and maxVersion"),
        "{e}"
    );
    assert_eq!(
        lines[3],
        "line 14, column 9: mirror.operators.0.packages.0.channels.0.minVersoin: unknown field"
    );
}

#[test]
fn validation_reports_every_problem_as_oc_mirror_words_it() {
    let text = r#"
apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: quay.io/c:v1
    packages:
    - name: a
      minVersion: one
      channels:
      - name: s
        maxVersion: 2.0.0
      - name: s
    - name: a
  - catalog: quay.io/c:v1
    full: true
    packages:
    - name: b
      maxVersion: 1.0.0
  blockedImages:
  - name: "(unclosed"
"#;
    let e = parse(text).unwrap_err().to_string();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            r#"catalog "quay.io/c:v1": operator "a": minVersion "one" must respect semantic versioning notation"#,
            r#"catalog "quay.io/c:v1": operator "a": mixing both filtering by minVersion/maxVersion and filtering by channel minVersion/maxVersion is not allowed"#,
            r#"catalog "quay.io/c:v1": operator "a": duplicate channel entry "s""#,
            r#"catalog "quay.io/c:v1": duplicate package entry "a""#,
            r#"catalog "quay.io/c:v1": duplicate found in configuration"#,
            r#"catalog "quay.io/c:v1": operator "b": full: true cannot be mixed with minVersion/maxVersion"#,
            r#"blocked image "(unclosed": invalid regular expression: error: unclosed group"#,
        ]
    );
}

#[test]
fn ranges_are_masterminds_text() {
    assert_eq!(range("", ""), None);
    assert_eq!(range("1.0.0", ""), Some(">=1.0.0".into()));
    assert_eq!(range("", "2.0.0"), Some("<=2.0.0".into()));
    assert_eq!(range("1.0.0", "2.0.0"), Some(">=1.0.0 <=2.0.0".into()));
    assert!(
        semver_ok("v1.2") && semver_ok("1.2.3-rc.1+b") && !semver_ok("1.2.3.4") && !semver_ok("x")
    );
}

/// oc-mirror's `tests/unit/testdata/delete-isc.yaml`, as it is.
const OC_MIRROR_DELETE_ISC: &str = "# This config demonstrates how to mirror a version range\n# in the specified channel for an OpenShift release.\n---\napiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  platform:\n    architectures:\n      - \"amd64\"\n    channels:\n      - name: stable-4.14\n        minVersion: 4.14.1\n        maxVersion: 4.12.2\n  operators:\n    - catalog: registry.redhat.io/redhat/redhat-operator-index:v4.12\n      packages:\n      - name: aws-load-balancer-operator\n        channels: \n        - name: stable-v0\n  \n  additionalImages: \n    - name: registry.redhat.io/ubi8/ubi:latest  \n";

#[test]
fn oc_mirrors_delete_configuration_is_read_without_its_platform_section() {
    let e = parse_delete(OC_MIRROR_DELETE_ISC).unwrap_err().to_string();
    assert_eq!(
        e,
        "delete.platform not supported: opreg mirrors operator catalogs and additional images only"
    );
    let start = OC_MIRROR_DELETE_ISC.find("  platform:").unwrap();
    let end = OC_MIRROR_DELETE_ISC.find("  operators:").unwrap();
    let text = format!(
        "{}{}",
        &OC_MIRROR_DELETE_ISC[..start],
        &OC_MIRROR_DELETE_ISC[end..]
    );
    let cfg = parse_delete(&text).unwrap();
    let op = &cfg.mirror.operators[0];
    assert_eq!(
        op.catalog,
        "registry.redhat.io/redhat/redhat-operator-index:v4.12"
    );
    assert_eq!(op.packages[0].name, "aws-load-balancer-operator");
    assert_eq!(op.packages[0].channels[0].name, "stable-v0");
    assert_eq!(
        cfg.mirror.additional_images[0].name,
        "registry.redhat.io/ubi8/ubi:latest"
    );
    // oc-mirror's own delete document names v1alpha2.
    let older = text.replace("v2alpha1", "v1alpha2");
    assert_eq!(parse_delete(&older).unwrap().mirror, cfg.mirror);
}

#[test]
fn a_delete_configuration_refuses_what_oc_mirror_refuses_and_unknown_fields() {
    let head = "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\n";
    let e = |body: &str| {
        parse_delete(&format!("{head}{body}"))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        e("delete: {}\nmirror: {}\n"),
        "mirror: is not allowed in DeleteImageSetConfiguration"
    );
    assert_eq!(
        e("remove: {}\n"),
        "the DeleteImageSetConfiguration has no `delete` section"
    );
    let unknown = e("delete:\n  foo: bar\n  blockedImages:\n  - name: x\narchiveSize: 4\n");
    assert!(
        unknown.contains("line 4, column 3: delete.foo: unknown field"),
        "{unknown}"
    );
    assert!(
        unknown.contains("delete.blockedImages: unknown field"),
        "{unknown}"
    );
    assert!(unknown.contains("archiveSize: unknown field"), "{unknown}");
    let e = parse_delete(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror: {}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("not a DeleteImageSetConfiguration"), "{e}");
    // And the mirror form refuses a delete section.
    let e = parse(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\ndelete: {}\n",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "delete: is not allowed in ImageSetConfiguration");
}
