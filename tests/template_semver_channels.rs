//! The semver template's channel rules on upstream's own test tables (operator-registry
//! `alpha/template/semver/semver_test.go`): linking successive channels, generating major and
//! minor channels with their replaces and skips, with the same expected channels and entries.

use super::template_semver::{as_expected, owned, tuple, unlinked, v, Expected};
use opreg::model::Channel;
use opreg::template::semver::{self, Archetype, Stream, Template, Versions};
use std::collections::BTreeMap;
use Archetype::{Candidate, Stable};
use Stream::Major;

#[test]
fn link_channels_no_edges_between_successive_major_channels() {
    let t = |n, p, i, ver| tuple(Stable, Major, n, p, i, ver);
    let entries = vec![
        t("a-v0.1.0", "stable-v0", 0, "0.1.0"),
        t("a-v0.1.1", "stable-v0", 1, "0.1.1"),
        t("a-v1.1.0", "stable-v1", 0, "1.1.0"),
        t("a-v1.2.1", "stable-v1", 1, "1.2.1"),
        t("a-v1.3.1", "stable-v1", 2, "1.3.1"),
        t("a-v2.1.0", "stable-v2", 0, "2.1.0"),
        t("a-v2.1.1", "stable-v2", 1, "2.1.1"),
        t("a-v2.3.1", "stable-v2", 2, "2.3.1"),
        t("a-v2.3.2", "stable-v2", 3, "2.3.2"),
    ];
    let chs = unlinked(&[
        ("stable-v0", &["a-v0.1.0", "a-v0.1.1"]),
        ("stable-v1", &["a-v1.1.0", "a-v1.2.1", "a-v1.3.1"]),
        (
            "stable-v2",
            &["a-v2.1.0", "a-v2.1.1", "a-v2.3.1", "a-v2.3.2"],
        ),
    ]);
    let want: Expected = vec![
        (
            "stable-v0",
            vec![("a-v0.1.0", "", vec![]), ("a-v0.1.1", "", vec!["a-v0.1.0"])],
        ),
        (
            "stable-v1",
            vec![
                ("a-v1.1.0", "", vec![]),
                ("a-v1.2.1", "a-v1.1.0", vec![]),
                ("a-v1.3.1", "a-v1.2.1", vec!["a-v1.1.0"]),
            ],
        ),
        (
            "stable-v2",
            vec![
                ("a-v2.1.0", "", vec![]),
                ("a-v2.1.1", "", vec!["a-v2.1.0"]),
                ("a-v2.3.1", "", vec![]),
                ("a-v2.3.2", "a-v2.1.1", vec!["a-v2.1.0", "a-v2.3.1"]),
            ],
        ),
    ];
    assert_eq!(
        as_expected(&semver::link_channels(chs, entries)),
        owned(&want)
    );
}

#[test]
fn link_channels_last_edge_is_an_x_change() {
    let t = |n, p, i, ver| tuple(Stable, Major, n, p, i, ver);
    let entries = vec![
        t("a-v0.1.0", "stable-v0", 0, "0.1.0"),
        t("a-v0.1.1", "stable-v0", 1, "0.1.1"),
        t("a-v1.1.0", "stable-v1", 0, "1.1.0"),
        t("a-v1.2.1", "stable-v1", 1, "1.2.1"),
        t("a-v1.3.1", "stable-v1", 2, "1.3.1"),
        t("a-v2.1.0", "stable-v2", 0, "2.1.0"),
    ];
    let chs = unlinked(&[
        ("stable-v0", &["a-v0.1.0", "a-v0.1.1"]),
        ("stable-v1", &["a-v1.1.0", "a-v1.2.1", "a-v1.3.1"]),
        ("stable-v2", &["a-v2.1.0"]),
    ]);
    let want: Expected = vec![
        (
            "stable-v0",
            vec![("a-v0.1.0", "", vec![]), ("a-v0.1.1", "", vec!["a-v0.1.0"])],
        ),
        (
            "stable-v1",
            vec![
                ("a-v1.1.0", "", vec![]),
                ("a-v1.2.1", "a-v1.1.0", vec![]),
                ("a-v1.3.1", "a-v1.2.1", vec!["a-v1.1.0"]),
            ],
        ),
        ("stable-v2", vec![("a-v2.1.0", "", vec![])]),
    ];
    assert_eq!(
        as_expected(&semver::link_channels(chs, entries)),
        owned(&want)
    );
}

#[test]
fn link_channels_last_edge_is_an_archetype_change() {
    let t = |n, p, i, ver| tuple(Stable, Major, n, p, i, ver);
    let entries = vec![
        t("a-v1.1.0", "stable-v1", 0, "1.1.0"),
        t("a-v1.2.1", "stable-v1", 1, "1.2.1"),
        t("a-v1.3.1", "stable-v1", 2, "1.3.1"),
        t("a-v2.1.0", "stable-v2", 0, "2.1.0"),
        t("a-v2.1.1", "stable-v2", 1, "2.1.1"),
        t("a-v2.3.1", "stable-v2", 2, "2.3.1"),
        tuple(Candidate, Major, "a-v2.3.2", "candidate-v2", 0, "2.3.2"),
    ];
    let chs = unlinked(&[
        ("candidate-v2", &["a-v2.3.2"]),
        ("stable-v1", &["a-v1.1.0", "a-v1.2.1", "a-v1.3.1"]),
        ("stable-v2", &["a-v2.1.0", "a-v2.1.1", "a-v2.3.1"]),
    ]);
    let want: Expected = vec![
        ("candidate-v2", vec![("a-v2.3.2", "", vec![])]),
        (
            "stable-v1",
            vec![
                ("a-v1.1.0", "", vec![]),
                ("a-v1.2.1", "a-v1.1.0", vec![]),
                ("a-v1.3.1", "a-v1.2.1", vec!["a-v1.1.0"]),
            ],
        ),
        (
            "stable-v2",
            vec![
                ("a-v2.1.0", "", vec![]),
                ("a-v2.1.1", "", vec!["a-v2.1.0"]),
                ("a-v2.3.1", "a-v2.1.1", vec!["a-v2.1.0"]),
            ],
        ),
    ];
    assert_eq!(
        as_expected(&semver::link_channels(chs, entries)),
        owned(&want)
    );
}

#[test]
fn link_channels_minimum_viable_major_channel() {
    let entries = vec![tuple(Stable, Major, "a-v0.1.0", "stable-v0.1", 0, "0.1.0")];
    let chs = unlinked(&[("stable-v0", &["a-v0.1.0"])]);
    let want: Expected = vec![("stable-v0", vec![("a-v0.1.0", "", vec![])])];
    assert_eq!(
        as_expected(&semver::link_channels(chs, entries)),
        owned(&want)
    );
}

/// Upstream's `channelOperatorVersions`: every bundle in Stable.
fn generate_versions() -> Versions {
    let names = [
        "0.1.0",
        "0.1.1",
        "1.1.0",
        "1.2.1",
        "1.3.1",
        "2.1.0",
        "1.3.1-beta",
        "2.1.1",
        "2.3.1",
        "2.3.2",
        "3.1.0",
        "3.1.1",
        "1.3.1-alpha",
        "1.4.1",
        "1.4.1-beta1",
        "1.4.1-beta2",
    ];
    let stable = names.iter().map(|n| (format!("a-v{n}"), v(n))).collect();
    BTreeMap::from([(Stable, stable)])
}

fn major_linked() -> Expected {
    vec![
        (
            "stable-v0",
            vec![("a-v0.1.0", "", vec![]), ("a-v0.1.1", "", vec!["a-v0.1.0"])],
        ),
        (
            "stable-v1",
            vec![
                ("a-v1.1.0", "", vec![]),
                ("a-v1.2.1", "a-v1.1.0", vec![]),
                ("a-v1.3.1-alpha", "", vec![]),
                ("a-v1.3.1-beta", "", vec![]),
                (
                    "a-v1.3.1",
                    "a-v1.2.1",
                    vec!["a-v1.1.0", "a-v1.3.1-alpha", "a-v1.3.1-beta"],
                ),
                ("a-v1.4.1-beta1", "", vec![]),
                ("a-v1.4.1-beta2", "", vec![]),
                (
                    "a-v1.4.1",
                    "a-v1.3.1",
                    vec![
                        "a-v1.1.0",
                        "a-v1.2.1",
                        "a-v1.3.1-alpha",
                        "a-v1.3.1-beta",
                        "a-v1.4.1-beta1",
                        "a-v1.4.1-beta2",
                    ],
                ),
            ],
        ),
        (
            "stable-v2",
            vec![
                ("a-v2.1.0", "", vec![]),
                ("a-v2.1.1", "", vec!["a-v2.1.0"]),
                ("a-v2.3.1", "", vec![]),
                ("a-v2.3.2", "a-v2.1.1", vec!["a-v2.1.0", "a-v2.3.1"]),
            ],
        ),
        (
            "stable-v3",
            vec![("a-v3.1.0", "", vec![]), ("a-v3.1.1", "", vec!["a-v3.1.0"])],
        ),
    ]
}

fn minor_linked() -> Expected {
    vec![
        (
            "stable-v0.1",
            vec![("a-v0.1.0", "", vec![]), ("a-v0.1.1", "", vec!["a-v0.1.0"])],
        ),
        ("stable-v1.1", vec![("a-v1.1.0", "", vec![])]),
        ("stable-v1.2", vec![("a-v1.2.1", "a-v1.1.0", vec![])]),
        (
            "stable-v1.3",
            vec![
                ("a-v1.3.1-alpha", "", vec![]),
                ("a-v1.3.1-beta", "", vec![]),
                (
                    "a-v1.3.1",
                    "a-v1.2.1",
                    vec!["a-v1.1.0", "a-v1.3.1-alpha", "a-v1.3.1-beta"],
                ),
            ],
        ),
        (
            "stable-v1.4",
            vec![
                ("a-v1.4.1-beta1", "", vec![]),
                ("a-v1.4.1-beta2", "", vec![]),
                (
                    "a-v1.4.1",
                    "a-v1.3.1",
                    vec![
                        "a-v1.1.0",
                        "a-v1.2.1",
                        "a-v1.3.1-alpha",
                        "a-v1.3.1-beta",
                        "a-v1.4.1-beta1",
                        "a-v1.4.1-beta2",
                    ],
                ),
            ],
        ),
        (
            "stable-v2.1",
            vec![("a-v2.1.0", "", vec![]), ("a-v2.1.1", "", vec!["a-v2.1.0"])],
        ),
        (
            "stable-v2.3",
            vec![
                ("a-v2.3.1", "", vec![]),
                ("a-v2.3.2", "a-v2.1.1", vec!["a-v2.1.0", "a-v2.3.1"]),
            ],
        ),
        (
            "stable-v3.1",
            vec![("a-v3.1.0", "", vec![]), ("a-v3.1.1", "", vec!["a-v3.1.0"])],
        ),
    ]
}

fn combined_linked() -> Expected {
    let mut all = minor_linked();
    all.extend(major_linked());
    all.sort_by(|a, b| a.0.cmp(b.0));
    all
}

fn generate(minor: bool, major: bool, preference: Stream) -> (Vec<Channel>, String) {
    let t = Template {
        generate_major: major,
        generate_minor: minor,
        preference,
        bundles: BTreeMap::new(),
    };
    semver::generate_channels(&generate_versions(), &t)
}

#[test]
fn generate_channels_upstream_table() {
    use Stream::Minor;
    let cases: [(&str, bool, bool, Stream, &str, Expected); 6] = [
        (
            "Edges between minor channels",
            true,
            false,
            Minor,
            "stable-v3.1",
            minor_linked(),
        ),
        (
            "No edges between major channels",
            false,
            true,
            Major,
            "stable-v3",
            major_linked(),
        ),
        (
            "Preference for minor default channel",
            true,
            true,
            Minor,
            "stable-v3.1",
            combined_linked(),
        ),
        (
            "Preference for major default channel",
            true,
            true,
            Major,
            "stable-v3",
            combined_linked(),
        ),
        (
            "Mismatch generate/preference minor/major default channel",
            true,
            false,
            Major,
            "stable-v3.1",
            minor_linked(),
        ),
        (
            "Mismatch generate/preference major/minor default channel",
            false,
            true,
            Minor,
            "stable-v3",
            major_linked(),
        ),
    ];
    for (name, minor, major, pref, default, want) in cases {
        let (chs, dc) = generate(minor, major, pref);
        assert_eq!(as_expected(&chs), owned(&want), "{name}");
        assert_eq!(dc, default, "{name}");
    }
}
