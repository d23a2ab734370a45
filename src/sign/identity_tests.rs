//! containers/image's reference-matching cases (`policy_reference_match_test.go`): the same
//! inputs, the same verdicts.

use super::*;
use crate::imageref::DOCKER_HUB;

const FULL_RHEL: &str = "registry.access.redhat.com/rhel7/rhel:7.2.3";
const UNTAGGED_RHEL: &str = "registry.access.redhat.com/rhel7/rhel";
const D: &str = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const D2: &str = "@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn s(a: &str, b: &str) -> String {
    format!("{a}{b}")
}

/// Exact matches; symmetric.
fn exact_table() -> Vec<(String, String, bool)> {
    let t = |a: &str, b: &str, r| (a.to_string(), b.to_string(), r);
    vec![
        t("busybox:latest", "busybox:latest", true),
        t(FULL_RHEL, FULL_RHEL, true),
        t(&s("busybox", D), &s("busybox", D), true),
        t("library/busybox:latest", "busybox:latest", true),
        t("docker.io/library/busybox:latest", "busybox:latest", true),
        t(&s("library/busybox", D), &s("busybox", D), true),
        t("busybox:latest", "busybox:notlatest", false),
        t("busybox:latest", "notbusybox:latest", false),
        t(
            "busybox:latest",
            "hostname/library/busybox:notlatest",
            false,
        ),
        t(
            "hostname/library/busybox:latest",
            "busybox:notlatest",
            false,
        ),
        t("busybox:latest", FULL_RHEL, false),
        t(&s("busybox", D), &s("notbusybox", D), false),
        t("busybox:latest", &s("busybox", D), false),
        t(&s("busybox", D), &s("busybox", D2), false),
        t("busybox", "busybox:latest", false),
        t("busybox", &s("busybox", D), false),
        t("busybox", "busybox", false),
        t(&s("busybox:latest", D), &s("busybox:latest", D), true),
        t(&s("busybox:latest", D), &s("busybox:latest", D2), false),
        t(&s("busybox:latest", D), &s("busybox:notlatest", D), false),
        t(&s("busybox:latest", D), &s("busybox", D), false),
        t(&s("busybox:latest", D), "busybox:latest", false),
        t(
            "UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES",
            "busybox:latest",
            false,
        ),
        t("", "UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES", false),
        t("INVALID", "INVALID", false),
    ]
}

/// Repository matches; symmetric.
fn repository_table() -> Vec<(String, String, bool)> {
    let t = |a: &str, b: &str, r| (a.to_string(), b.to_string(), r);
    vec![
        t("busybox:latest", "busybox:latest", true),
        t(FULL_RHEL, FULL_RHEL, true),
        t(&s("busybox", D), &s("busybox", D), true),
        t("library/busybox:latest", "busybox:latest", true),
        t("docker.io/library/busybox:latest", "busybox:latest", true),
        t(&s("library/busybox", D), &s("busybox", D), true),
        t("busybox:latest", "busybox:notlatest", true),
        t(&s(FULL_RHEL, "tagsuffix"), FULL_RHEL, true),
        t("library/busybox:latest", "busybox:notlatest", true),
        t("busybox:latest", "library/busybox:notlatest", true),
        t(
            "docker.io/library/busybox:notlatest",
            "busybox:latest",
            true,
        ),
        t(
            "busybox:notlatest",
            "docker.io/library/busybox:latest",
            true,
        ),
        t("busybox:latest", &s("busybox", D), true),
        t(&s("busybox", D), &s("busybox", D2), true),
        t("busybox", "busybox:notlatest", true),
        t(FULL_RHEL, UNTAGGED_RHEL, true),
        t("busybox", &s("busybox", D), true),
        t("library/busybox", "busybox", true),
        t("docker.io/library/busybox", "busybox", true),
        t("busybox:latest", "notbusybox:latest", false),
        t(
            "hostname/library/busybox:latest",
            "busybox:notlatest",
            false,
        ),
        t("busybox:latest", FULL_RHEL, false),
        t(&s("busybox", D), &s("notbusybox", D), false),
        t(&s("busybox:latest", D), &s("busybox:latest", D), true),
        t(&s("busybox:latest", D), &s("busybox:latest", D2), true),
        t(&s("busybox:latest", D), &s("busybox:notlatest", D), true),
        t(&s("busybox:latest", D), &s("busybox", D), true),
        t(&s("busybox:latest", D), "busybox:latest", true),
        t(
            "UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES",
            "busybox:latest",
            false,
        ),
        t("", "UPPERCASE_IS_INVALID_IN_DOCKER_REFERENCES", false),
        t("INVALID", "INVALID", false),
    ]
}

/// matchRepoDigestOrExact's own cases: image, signature; not symmetric.
fn repo_digest_or_exact_table() -> Vec<(String, String, bool)> {
    let t = |a: &str, b: &str, r| (a.to_string(), b.to_string(), r);
    vec![
        t("busybox:latest", "busybox:notlatest", false),
        t(&s(FULL_RHEL, "tagsuffix"), FULL_RHEL, false),
        t("library/busybox:latest", "busybox:notlatest", false),
        t("busybox:latest", "library/busybox:notlatest", false),
        t(
            "docker.io/library/busybox:notlatest",
            "busybox:latest",
            false,
        ),
        t(
            "busybox:notlatest",
            "docker.io/library/busybox:latest",
            false,
        ),
        t("busybox", "busybox:latest", false),
        t("busybox:latest", "busybox", false),
        t("busybox", &s("busybox", D), false),
        t(&s("busybox", D), "busybox", false),
        t(FULL_RHEL, UNTAGGED_RHEL, false),
        t("busybox", "busybox", false),
        t("busybox:latest", &s("busybox", D), false),
        t(&s("busybox", D), "busybox:latest", true),
        t(&s("busybox", D), &s("busybox", D2), true),
        t(&s("busybox:latest", D), "busybox:latest", false),
        t(&s("busybox:latest", D), "busybox:notlatest", false),
        t("busybox:latest", &s("busybox:latest", D), false),
        t(&s("busybox:latest", D), &s("busybox:latest", D2), false),
        t(&s("busybox:latest", D), &s("busybox:notlatest", D2), false),
    ]
}

/// Runs `rule` with the image `image` (skipped when it does not parse, as upstream's
/// testPossiblyInvalidImageAndSig does) and the signature `sig`.
fn check(rule: &SignedIdentity, image: &str, sig: &str, want: bool) {
    let Ok(intended) = Named::parse(image) else {
        return;
    };
    assert_eq!(
        rule.matches(&intended, sig),
        want,
        "{rule:?}: {image} vs. {sig}"
    );
}

#[test]
fn match_exact() {
    for (a, b, r) in exact_table() {
        check(&SignedIdentity::MatchExact, &a, &b, r);
        check(&SignedIdentity::MatchExact, &b, &a, r);
    }
}

#[test]
fn match_repository() {
    for (a, b, r) in repository_table() {
        check(&SignedIdentity::MatchRepository, &a, &b, r);
        check(&SignedIdentity::MatchRepository, &b, &a, r);
    }
}

#[test]
fn match_repo_digest_or_exact() {
    let rule = SignedIdentity::MatchRepoDigestOrExact;
    for (a, b, r) in exact_table().into_iter().filter(|t| t.2) {
        check(&rule, &a, &b, r);
        check(&rule, &b, &a, r);
    }
    for (a, b, r) in repository_table().into_iter().filter(|t| !t.2) {
        check(&rule, &a, &b, r);
        check(&rule, &b, &a, r);
    }
    for (a, b, r) in repo_digest_or_exact_table() {
        assert!(Named::parse(&a).is_ok());
        check(&rule, &a, &b, r);
    }
}

#[test]
fn exact_reference_and_exact_repository() {
    // The rule's own reference is used, whatever the image.
    let image = Named::parse("unrelated.example/x:1").unwrap();
    for (a, b, r) in exact_table() {
        assert_eq!(
            SignedIdentity::ExactReference(a.clone()).matches(&image, &b),
            r,
            "{a} vs {b}"
        );
        assert_eq!(
            SignedIdentity::ExactReference(b.clone()).matches(&image, &a),
            r,
            "{b} vs {a}"
        );
    }
    for (a, b, r) in repository_table() {
        assert_eq!(
            SignedIdentity::ExactRepository(a.clone()).matches(&image, &b),
            r,
            "{a} vs {b}"
        );
        assert_eq!(
            SignedIdentity::ExactRepository(b.clone()).matches(&image, &a),
            r,
            "{b} vs {a}"
        );
    }
}

fn remap(prefix: &str, signed: &str) -> SignedIdentity {
    SignedIdentity::RemapIdentity {
        prefix: prefix.into(),
        signed_prefix: signed.into(),
    }
}

#[test]
fn remap_identity_rewrites() {
    let cases = [
        (
            "mirror.example",
            "vendor.example",
            "mirror.example/ns/image:tag",
            "vendor.example/ns/image:tag",
        ),
        (
            "mirror.example",
            "vendor.example",
            "different.com/ns/image:tag",
            "different.com/ns/image:tag",
        ),
        (
            "mirror.example/ns",
            "vendor.example/vendor-ns",
            "mirror.example/different-ns/image:tag",
            "mirror.example/different-ns/image:tag",
        ),
        (
            DOCKER_HUB,
            "not-docker-signed.example/ns",
            "busybox",
            "not-docker-signed.example/ns/library/busybox",
        ),
        (
            "example.com/mirror",
            "example.com/vendor",
            "example.com/mirror/image:tag",
            "example.com/vendor/image:tag",
        ),
        (
            "example.com/ns/mirror",
            "example.com/ns/vendor",
            "example.com/ns/mirror:tag",
            "example.com/ns/vendor:tag",
        ),
        (
            "mirror.example",
            "vendor.example",
            "prefixmirror.example/ns/image:tag",
            "prefixmirror.example/ns/image:tag",
        ),
        (
            DOCKER_HUB,
            "not-docker-signed.example",
            "busybox",
            "not-docker-signed.example/library/busybox",
        ),
        (
            "docker.io/library",
            "not-docker-signed.example/ns",
            "busybox",
            "not-docker-signed.example/ns/busybox",
        ),
        (
            "docker.io/library/busybox",
            "not-docker-signed.example/ns/notbusybox",
            "busybox",
            "not-docker-signed.example/ns/notbusybox",
        ),
        (
            "mirror.example",
            "vendor.example",
            "mirror.example/image",
            "vendor.example/image",
        ),
        (
            "mirror.example",
            "vendor.example",
            "mirror.example/image:tag",
            "vendor.example/image:tag",
        ),
        (
            "mirror.example",
            "vendor.example",
            &s("mirror.example/image", D),
            &s("vendor.example/image", D),
        ),
        (
            "mirror.example",
            "vendor.example",
            &s("mirror.example/image:tag", D),
            &s("vendor.example/image:tag", D),
        ),
        (
            "mirror.example/ns/image",
            "vendor.example:5000",
            "mirror.example/ns/image:tag",
            "",
        ),
        (
            "mirror.example/ns/image",
            "vendor.example:5000",
            &s("mirror.example/ns/image", D),
            "",
        ),
        (
            "mirror.example/ns/image",
            "notlocalhost",
            "mirror.example/ns/image:tag",
            "",
        ),
    ];
    for (prefix, signed, image, want) in cases {
        assert!(
            valid_remap_prefix(prefix) && valid_remap_prefix(signed),
            "{prefix} {signed}"
        );
        let got = super::remap(&Named::parse(image).unwrap(), prefix, signed).map(|n| n.full());
        let want = (!want.is_empty()).then(|| want.to_string());
        assert_eq!(got, want, "{prefix} -> {signed} on {image}");
    }
}

#[test]
fn remap_identity_prefix_matches_whole_components() {
    let cases = [
        ("docker.io/image", DOCKER_HUB, true),
        ("docker.io/image", "example.com", false),
        ("example.com:5000/image", "example.com:5000", true),
        ("example.com:50000/image", "example.com:5000", false),
        ("example.com:5000/image", "example.com", false),
        ("example.com/foo", "example.com", true),
        ("example.com/foo/bar", "example.com", true),
        ("example.com/foo/bar:baz", "example.com", true),
        ("docker.io/ns/image", "docker.io/library", false),
        ("example.com/library", "docker.io/library", false),
        ("docker.io/libraryy/image", "docker.io/library", false),
        ("docker.io/library/busybox", "docker.io/library", true),
        ("example.com/ns/image", "example.com/ns", true),
        ("example.com/ns2/image", "example.com/ns", false),
        ("example.com/n2/image", "example.com/ns", false),
        ("example.com/ns/image", "example.com:5000/ns", false),
        (
            "docker.io/library/busybox",
            "docker.io/library/busybox",
            true,
        ),
        (
            "docker.io/library/busybox2",
            "docker.io/library/busybox",
            false,
        ),
        ("example.com/ns/imagee", "example.com/ns/image", false),
        ("example.com/ns/image:tag", "example.com/ns/image", true),
    ];
    let signed = "docker.io/library/signed-prefix";
    for (image, prefix, want) in cases {
        let n = Named::parse(image).unwrap();
        let got = super::remap(&n, prefix, signed).unwrap().name != n.name;
        assert_eq!(got, want, "{image} vs. {prefix}");
    }
}

#[test]
fn remap_identity_matches() {
    let cases = [
        (
            "does-not-match.com",
            "does-not-match.rewritten",
            "busybox:latest",
            "busybox:latest",
            true,
        ),
        (
            "does-not-match.com",
            "does-not-match.rewritten",
            "busybox:latest",
            "notbusybox:latest",
            false,
        ),
        (
            "mirror.example",
            "public.com",
            "mirror.example/busybox:1",
            "public.com/busybox:1",
            true,
        ),
        (
            "mirror.example",
            "public.com",
            "mirror.example/busybox:1",
            "public.com/busybox:not1",
            false,
        ),
        (
            "mirror.example",
            "docker.io/library",
            "mirror.example/busybox:latest",
            "busybox:latest",
            true,
        ),
        (
            "mirror.example",
            "docker.io/library",
            "mirror.example/alpine:latest",
            "busybox:latest",
            false,
        ),
        (
            "docker.io/library",
            "original.com",
            "copied:latest",
            "original.com/copied:latest",
            true,
        ),
        (
            "docker.io/library",
            "original.com",
            "copied:latest",
            "original.com/ns/copied:latest",
            false,
        ),
        (
            "busybox",
            "example.com/busybox",
            "busybox:latest",
            "example.com/busybox:latest",
            false,
        ),
        (
            "docker.io/library/busybox",
            "busybox",
            "docker.io/library/busybox:latest",
            "busybox:latest",
            false,
        ),
        (
            "UPPERCASE",
            "example.com",
            "example.com/foo:latest",
            "example.com/foo:latest",
            true,
        ),
        (
            "example.com",
            "UPPERCASE",
            "example.com/foo:latest",
            "UPPERCASE/foo:latest",
            false,
        ),
    ];
    for (prefix, signed, image, sig, want) in cases {
        check(&remap(prefix, signed), image, sig, want);
    }
    // Otherwise the same as matchRepoDigestOrExact when nothing is rewritten.
    let rule = remap(
        "never-causes-a-rewrite.example",
        "never-causes-a-rewrite.example",
    );
    for (a, b, r) in repo_digest_or_exact_table() {
        check(&rule, &a, &b, r);
    }
}

#[test]
fn remap_prefixes_are_checked() {
    for ok in [
        "example.com",
        "example.com:5000",
        "example.com/ns",
        "docker.io/library/busybox",
        "localhost",
        "busybox",
        "UPPERCASE",
        "foo/bar",
    ] {
        assert!(valid_remap_prefix(ok), "{ok}");
    }
    for bad in [
        "",
        "example.com/",
        "example.com/ns:tag",
        "example.com/NS",
        "-bad.com",
        "a:b:c",
    ] {
        assert!(!valid_remap_prefix(bad), "{bad}");
    }
}

#[test]
fn scopes_from_most_to_least_specific() {
    let n = Named::parse("registry.example.com:5000/ns/sub/cat:v1").unwrap();
    assert_eq!(n.identity(), "registry.example.com:5000/ns/sub/cat:v1");
    assert_eq!(
        n.namespaces(),
        [
            "registry.example.com:5000/ns/sub/cat",
            "registry.example.com:5000/ns/sub",
            "registry.example.com:5000/ns",
            "registry.example.com:5000",
            "*.example.com",
            "*.com"
        ]
    );
    let b = Named::parse(&s("busybox", D)).unwrap();
    assert_eq!(b.identity(), s("docker.io/library/busybox", D));
    assert_eq!(
        b.namespaces(),
        [
            "docker.io/library/busybox",
            "docker.io/library",
            DOCKER_HUB,
            "*.io"
        ]
    );
}
