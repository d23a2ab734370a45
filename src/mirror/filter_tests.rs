//! catalog-filter's channel cases (its `newChannel` and `filterByVersionRange` tests: same
//! inputs, same verdicts), through [`filter`] on a one-package catalog, and the selection rules
//! oc-mirror documents.

use super::*;
use crate::model::{Bundle, Property};

/// Package `foo` with one channel `stable` (the default) of `entries`, given as
/// (name, replaces, skips), and a bundle per name in `versions` (an unversioned bundle has
/// version "").
fn catalog(entries: &[(&str, &str, &[&str])], versions: &[(&str, &str)]) -> Catalog {
    let mut p = Package {
        name: "foo".into(),
        default_channel: "stable".into(),
        ..Default::default()
    };
    p.channels.insert(
        "stable".into(),
        Channel {
            name: "stable".into(),
            entries: entries
                .iter()
                .map(|(n, r, s)| ChannelEntry {
                    name: n.to_string(),
                    replaces: r.to_string(),
                    skips: s.iter().map(|x| x.to_string()).collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
    );
    for (name, version) in versions {
        p.bundles.insert(
            name.to_string(),
            Bundle {
                name: name.to_string(),
                package: "foo".into(),
                properties: vec![Property {
                    r#type: "olm.package".into(),
                    value: format!(r#"{{"packageName":"foo","version":"{version}"}}"#),
                }],
                ..Default::default()
            },
        );
    }
    let mut c = Catalog::default();
    c.packages.insert("foo".into(), p);
    c
}

fn op(range: Option<(&str, &str)>, full: bool) -> Operator {
    let mut pkg = config::Package {
        name: "foo".into(),
        ..Default::default()
    };
    if let Some((min, max)) = range {
        pkg.channels.push(config::Channel {
            name: "stable".into(),
            min_version: min.into(),
            max_version: max.into(),
        });
    }
    Operator {
        catalog: "c".into(),
        full,
        packages: vec![pkg],
        ..Default::default()
    }
}

fn kept(r: &Filtered) -> Vec<String> {
    r.kept
        .get("foo")
        .map(|s| s.iter().cloned().collect())
        .unwrap_or_default()
}

/// `>=1.0.0 <2.0.0` as oc-mirror writes a range it can express: min 1.0.0, max 1.999999.
const RANGE: (&str, &str) = ("1.0.0", "1.99999.99999");

#[test]
fn channel_graph_errors_as_catalog_filter_reports_them() {
    let head_only = op(None, false);
    for (entries, want) in [
        (vec![], "channel has no entries"),
        (
            vec![("foo.v1.0.0", "", &[][..]), ("foo.v2.0.0", "", &[][..])],
            "multiple channel heads found: [foo.v1.0.0 foo.v2.0.0]",
        ),
        (
            vec![
                ("foo.v1.0.0", "", &[][..]),
                ("foo.v1.1.0", "foo.v1.0.0", &[][..]),
                ("foo.v1.2.0", "foo.v1.0.0", &[][..]),
            ],
            "multiple channel heads found: [foo.v1.1.0 foo.v1.2.0]",
        ),
        (
            vec![("foo.v1.0.0", "", &[][..]), ("foo.v1.0.0", "", &[][..])],
            "duplicate channel entry",
        ),
        (
            vec![
                ("foo.v1.0.0", "foo.v1.0.0", &[][..]),
                ("foo.v1.1.0", "foo.v1.0.0", &[][..]),
            ],
            "replaces or skips itself",
        ),
        (
            vec![
                ("foo.v1.0.0", "", &["foo.v1.2.0"][..]),
                ("foo.v1.2.0", "", &["foo.v1.0.0"][..]),
                ("foo.v2.0.0", "", &[][..]),
            ],
            "detected a cycle in the upgrade graph of the channel",
        ),
    ] {
        let e = filter(&catalog(&entries, &[]), &head_only)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{entries:?}: {e}");
        assert!(e.starts_with(r#"package "foo" channel "stable""#), "{e}");
    }
}

#[test]
fn version_ranges_keep_one_head_as_catalog_filter_does() {
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, &'a str, &'a [&'a str])>,
        Vec<(&'a str, &'a str)>,
        Vec<&'a str>,
        usize,
    );
    let cases: Vec<Case> = vec![
        (
            "single entry",
            vec![("foo.v1.0.0", "", &[])],
            vec![("foo.v1.0.0", "1.0.0")],
            vec!["foo.v1.0.0"],
            0,
        ),
        (
            "include head, but not tail",
            vec![
                ("foo.v1.1.0", "foo.v1.0.0", &[]),
                ("foo.v1.0.0", "foo.v0.1.0", &[]),
                ("foo.v0.1.0", "", &[]),
            ],
            vec![
                ("foo.v1.1.0", "1.1.0"),
                ("foo.v1.0.0", "1.0.0"),
                ("foo.v0.1.0", "0.1.0"),
            ],
            vec!["foo.v1.0.0", "foo.v1.1.0"],
            0,
        ),
        (
            "include tail, but not head",
            vec![
                ("foo.v2.0.0", "foo.v1.1.0", &[]),
                ("foo.v1.1.0", "foo.v1.0.0", &[]),
                ("foo.v1.0.0", "", &[]),
            ],
            vec![
                ("foo.v2.0.0", "2.0.0"),
                ("foo.v1.1.0", "1.1.0"),
                ("foo.v1.0.0", "1.0.0"),
            ],
            vec!["foo.v1.0.0", "foo.v1.1.0"],
            0,
        ),
        (
            "head out of range, one skip in range",
            vec![("foo.v2.0.0", "", &["foo.v1.0.0"]), ("foo.v1.0.0", "", &[])],
            vec![("foo.v2.0.0", "2.0.0"), ("foo.v1.0.0", "1.0.0")],
            vec!["foo.v1.0.0", "foo.v2.0.0"],
            1,
        ),
        (
            "include head outside of range",
            vec![
                ("foo.v2.0.0", "foo.v1.1.1", &["foo.v1.1.0"]),
                ("foo.v1.1.1", "", &[]),
                ("foo.v1.1.0", "", &[]),
            ],
            vec![
                ("foo.v2.0.0", "2.0.0"),
                ("foo.v1.1.1", "1.1.1"),
                ("foo.v1.1.0", "1.1.0"),
            ],
            vec!["foo.v1.1.0", "foo.v1.1.1", "foo.v2.0.0"],
            1,
        ),
        (
            "include intermediate outside of range",
            vec![
                ("foo.v1.1.0", "foo.v2.0.0", &[]),
                ("foo.v2.0.0", "foo.v1.0.0", &[]),
                ("foo.v1.0.0", "foo.v0.1.0", &[]),
                ("foo.v0.1.0", "", &[]),
            ],
            vec![
                ("foo.v2.0.0", "2.0.0"),
                ("foo.v1.1.0", "1.1.0"),
                ("foo.v1.0.0", "1.0.0"),
                ("foo.v0.1.0", "0.1.0"),
            ],
            vec!["foo.v1.0.0", "foo.v1.1.0", "foo.v2.0.0"],
            1,
        ),
        (
            "include unversioned head outside of range",
            vec![
                ("foo.v2.0.0", "foo.v1.1.1", &["foo.v1.1.0"]),
                ("foo.v1.1.1", "", &[]),
                ("foo.v1.1.0", "", &[]),
            ],
            vec![
                ("foo.v2.0.0", ""),
                ("foo.v1.1.1", "1.1.1"),
                ("foo.v1.1.0", "1.1.0"),
            ],
            vec!["foo.v1.1.0", "foo.v1.1.1", "foo.v2.0.0"],
            1,
        ),
    ];
    for (name, entries, versions, want, warned) in cases {
        let r = filter(&catalog(&entries, &versions), &op(Some(RANGE), false)).unwrap();
        assert_eq!(kept(&r), want, "{name}");
        assert_eq!(r.warnings.len(), warned, "{name}: {:?}", r.warnings);
        let ch = &r.catalog.packages["foo"].channels["stable"];
        let names: BTreeSet<&str> = ch.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            want.iter().copied().collect(),
            "{name}: the channel's entries"
        );
    }
}

#[test]
fn an_empty_default_channel_is_an_error_and_edges_are_kept_as_they_were() {
    let entries = [("foo.v2.0.0", "", &[][..])];
    let e = filter(
        &catalog(&entries, &[("foo.v2.0.0", "2.0.0")]),
        &op(Some(RANGE), false),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("results in an empty channel"), "{e}");
    // Heads only: the head keeps its replaces and skips of pruned bundles.
    let entries = [
        ("foo.v1.0.0", "", &[][..]),
        ("foo.v1.1.0", "foo.v1.0.0", &["foo.v0.9.0"][..]),
    ];
    let r = filter(
        &catalog(
            &entries,
            &[("foo.v1.0.0", "1.0.0"), ("foo.v1.1.0", "1.1.0")],
        ),
        &op(None, false),
    )
    .unwrap();
    let ch = &r.catalog.packages["foo"].channels["stable"];
    assert_eq!(ch.entries.len(), 1);
    assert_eq!(ch.entries[0].replaces, "foo.v1.0.0");
    assert_eq!(ch.entries[0].skips, ["foo.v0.9.0"]);
    assert_eq!(r.catalog.packages["foo"].bundles.len(), 1);
}

#[test]
fn selection_without_packages_and_with_full() {
    let entries = [
        ("foo.v1.0.0", "", &[][..]),
        ("foo.v1.1.0", "foo.v1.0.0", &[][..]),
    ];
    let versions = [("foo.v1.0.0", "1.0.0"), ("foo.v1.1.0", "1.1.0")];
    let c = catalog(&entries, &versions);
    let none = Operator {
        catalog: "c".into(),
        ..Default::default()
    };
    assert_eq!(kept(&filter(&c, &none).unwrap()), ["foo.v1.1.0"]);
    let all = Operator {
        full: true,
        ..none.clone()
    };
    assert_eq!(
        kept(&filter(&c, &all).unwrap()),
        ["foo.v1.0.0", "foo.v1.1.0"]
    );
    assert_eq!(
        kept(&filter(&c, &op(None, true)).unwrap()),
        ["foo.v1.0.0", "foo.v1.1.0"]
    );
    let e = filter(&c, &op(Some(RANGE), true)).unwrap_err().to_string();
    assert!(e.contains("full: true cannot be mixed"), "{e}");
    // A package not in the catalog, and a default channel filtered out or overridden.
    let mut missing = op(None, false);
    missing.packages[0].name = "bar".into();
    assert!(filter(&c, &missing)
        .unwrap_err()
        .to_string()
        .contains(r#"package "bar" is not in the catalog"#));
    missing.packages[0].name = "fooo".into();
    let e = filter(&c, &missing).unwrap_err().to_string();
    assert!(
        e.contains(r#"package "fooo" is not in the catalog; did you mean "foo"?"#),
        "{e}"
    );
    // A misspelled channel, alone or beside a real one, is an error naming the closest.
    for listed in [&["stabel"][..], &["stable", "stabel"][..]] {
        let mut typo = op(None, false);
        typo.packages[0].channels = listed
            .iter()
            .map(|n| config::Channel {
                name: n.to_string(),
                ..Default::default()
            })
            .collect();
        let e = filter(&c, &typo).unwrap_err().to_string();
        assert!(
            e.contains(
                r#"package "foo": channel "stabel" is not in the catalog; did you mean "stable"?"#
            ),
            "{listed:?}: {e}"
        );
    }
    let mut other = op(None, false);
    other.packages[0].default_channel = "fast".into();
    let e = filter(&c, &other).unwrap_err().to_string();
    assert!(e.contains(r#"default channel override "fast""#), "{e}");
}
