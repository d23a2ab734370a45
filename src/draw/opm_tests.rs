//! opm's channel layout against upstream's expected text (operator-registry's
//! `TestWriteMermaidChannels`, the case without filters) and opm's rules one at a time.

use super::super::opm_channels;
use crate::model::{
    prop, schema, Bundle, Catalog, Channel, ChannelEntry, DeprecationEntry, Deprecations, Package,
    Property,
};

fn bundle(pkg: &str, version: &str) -> Bundle {
    Bundle {
        name: format!("{pkg}.v{version}"),
        package: pkg.into(),
        properties: vec![Property {
            r#type: prop::PACKAGE.into(),
            value: format!(r#"{{"packageName":"{pkg}","version":"{version}"}}"#),
        }],
        ..Bundle::default()
    }
}

fn package(name: &str, versions: &[&str], channels: Vec<(&str, Vec<ChannelEntry>)>) -> Package {
    Package {
        name: name.into(),
        default_channel: channels[0].0.into(),
        channels: channels
            .into_iter()
            .map(|(c, entries)| {
                let ch = Channel {
                    name: c.into(),
                    entries,
                    ..Channel::default()
                };
                (c.to_string(), ch)
            })
            .collect(),
        bundles: versions
            .iter()
            .map(|v| (format!("{name}.v{v}"), bundle(name, v)))
            .collect(),
        ..Package::default()
    }
}

fn catalog(packages: Vec<Package>) -> Catalog {
    Catalog {
        packages: packages.into_iter().map(|p| (p.name.clone(), p)).collect(),
        ..Catalog::default()
    }
}

fn deprecate(p: &mut Package, entries: &[(&str, &str)]) {
    p.deprecations = Some(Deprecations {
        entries: entries
            .iter()
            .map(|(s, n)| DeprecationEntry {
                schema: s.to_string(),
                name: n.to_string(),
                message: "deprecated".into(),
            })
            .collect(),
        ..Deprecations::default()
    });
}

/// Upstream's test catalog: anakin (dark, light; a bundle, a channel and the package
/// deprecated) and boba-fett (mando).
pub(crate) fn upstream_catalog() -> Catalog {
    let e = ChannelEntry::new;
    let mut anakin = package(
        "anakin",
        &["0.0.1", "0.1.0", "0.1.1"],
        vec![
            (
                "dark",
                vec![
                    e("anakin.v0.0.1", "", &[], ""),
                    e("anakin.v0.1.0", "anakin.v0.0.1", &[], ""),
                    e("anakin.v0.1.1", "anakin.v0.0.1", &["anakin.v0.1.0"], ""),
                ],
            ),
            (
                "light",
                vec![
                    e("anakin.v0.0.1", "", &[], ""),
                    e("anakin.v0.1.0", "anakin.v0.0.1", &[], ""),
                ],
            ),
        ],
    );
    deprecate(
        &mut anakin,
        &[
            (schema::BUNDLE, "anakin.v0.0.1"),
            (schema::CHANNEL, "light"),
            (schema::PACKAGE, ""),
        ],
    );
    let boba = package(
        "boba-fett",
        &["1.0.0", "2.0.0"],
        vec![(
            "mando",
            vec![
                e("boba-fett.v1.0.0", "", &[], ""),
                e("boba-fett.v2.0.0", "boba-fett.v1.0.0", &[], ""),
            ],
        )],
    );
    catalog(vec![anakin, boba])
}

/// Upstream's `SuccessNoFilters` expected text, verbatim.
pub(crate) const UPSTREAM_NO_FILTERS: &str =
    include_str!("../../tests/fixtures/authoring/mermaid/upstream-no-filters.mmd");

const HEADER: &str = "graph LR\n  classDef deprecated fill:#E8960F\n  classDef skipped stroke:#FF0000,stroke-width:4px\n  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px\n";

#[test]
fn write_mermaid_channels_success_no_filters() {
    let d = opm_channels(&upstream_catalog()).unwrap();
    assert_eq!(d.text, UPSTREAM_NO_FILTERS);
    assert!(d.notes.is_empty());
}

#[test]
fn skip_range_draws_one_edge_per_covered_entry_and_a_second_skip_is_marked() {
    let e = ChannelEntry::new;
    let p = package(
        "p",
        &["1.0.0", "1.1.0", "1.2.0"],
        vec![(
            "s",
            vec![
                e("p.v1.0.0", "", &[], ""),
                e("p.v1.1.0", "", &["p.v1.0.0"], ""),
                e("p.v1.2.0", "", &["p.v1.0.0"], ">=1.0.0 <1.2.0"),
            ],
        )],
    );
    let d = opm_channels(&catalog(vec![p])).unwrap();
    let want = format!(
        "{HEADER}  %% package \"p\"\n  subgraph \"p\"\n    %% channel \"s\"\n    subgraph p-s[\"s\"]\n      p-s-p.v1.2.0[\"p.v1.2.0\"]\n      p-s-p.v1.0.0[\"p.v1.0.0\"]-- skip --> p-s-p.v1.2.0[\"p.v1.2.0\"]\n      p-s-p.v1.0.0[\"p.v1.0.0\"]-- \"skipRange(>=1.0.0 <1.2.0)\" --> p-s-p.v1.2.0[\"p.v1.2.0\"]\n      p-s-p.v1.1.0[\"p.v1.1.0\"]-- \"skipRange(>=1.0.0 <1.2.0)\" --> p-s-p.v1.2.0[\"p.v1.2.0\"]\n      p-s-p.v1.1.0[\"p.v1.1.0\"]\n      p-s-p.v1.0.0[\"p.v1.0.0\"]-- skip --> p-s-p.v1.1.0[\"p.v1.1.0\"]\n      p-s-p.v1.0.0[\"p.v1.0.0\"]\n    end\n  end\nclass p-s-p.v1.0.0 skipped\nlinkStyle 3 stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;\n"
    );
    assert_eq!(d.text, want);
}

#[test]
fn an_unreadable_skip_range_is_left_out_with_opms_warning() {
    let e = ChannelEntry::new;
    let p = package(
        "p",
        &["1.0.0", "1.1.0"],
        vec![(
            "s",
            vec![
                e("p.v1.0.0", "", &[], ""),
                e("p.v1.1.0", "", &[], "<1.1.0 ||"),
            ],
        )],
    );
    let d = opm_channels(&catalog(vec![p])).unwrap();
    assert!(!d.text.contains("skipRange"), "{}", d.text);
    match &d.notes[..] {
        [super::super::Note::Warning(w)] => assert_eq!(
            w,
            r#"ignoring invalid SkipRange for package/edge "p"/"p.v1.1.0": Last element in range is '||'"#
        ),
        _ => panic!("one warning expected"),
    }
}

#[test]
fn same_channel_names_go_by_name_across_packages_and_deprecations_by_name_everywhere() {
    let e = ChannelEntry::new;
    let mut a = package(
        "a",
        &["1.0.0"],
        vec![("stable", vec![e("a.v1.0.0", "", &[], "")])],
    );
    let b = package(
        "b",
        &["1.0.0", "2.0.0"],
        vec![
            ("alpha", vec![e("b.v1.0.0", "", &[], "")]),
            (
                "stable",
                vec![
                    e("b.v1.0.0", "", &[], ""),
                    e("b.v2.0.0", "", &["b.v1.0.0", "b.v1.0.0"], ""),
                ],
            ),
        ],
    );
    deprecate(
        &mut a,
        &[(schema::CHANNEL, "stable"), (schema::BUNDLE, "b.v1.0.0")],
    );
    let d = opm_channels(&catalog(vec![a, b])).unwrap();
    let tail = "style a-stable fill:#DCD0FF\nstyle b-stable fill:#DCD0FF\nclass b-alpha-b.v1.0.0 deprecated\nclass b-stable-b.v1.0.0 deprecatedskipped\nlinkStyle 1 stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;\n";
    assert!(d.text.ends_with(tail), "{}", d.text);
}

#[test]
fn a_bundle_without_one_strict_version_is_opms_error() {
    let mut p = package(
        "p",
        &["1.0.0"],
        vec![("s", vec![ChannelEntry::new("p.v1.0.0", "", &[], "")])],
    );
    let b = p.bundles.get_mut("p.v1.0.0").unwrap();
    b.properties[0].value = r#"{"packageName":"p","version":"v1.0.0"}"#.into();
    let err = opm_channels(&catalog(vec![p.clone()]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with(r#"bundle "p.v1.0.0" has invalid version "v1.0.0": "#),
        "{err}"
    );
    p.bundles.get_mut("p.v1.0.0").unwrap().properties.clear();
    let err = opm_channels(&catalog(vec![p])).err().unwrap().to_string();
    assert_eq!(
        err,
        r#"bundle "p.v1.0.0" has multiple "olm.package" properties, expected exactly 1"#
    );
}
