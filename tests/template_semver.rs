//! The semver template's rules, on upstream's own test tables (operator-registry
//! `alpha/template/semver/semver_test.go`), ported with the same expected channels, entries,
//! replaces, skips, default channels and errors: reading and rendering templates here, channel
//! generation in tests/template_semver_channels.rs.

use opreg::model::{Bundle, Channel, ChannelEntry, Property};
use opreg::template::semver::{self, Archetype, EntryTuple, Stream, Template};
use opreg::template::{self, Kind};
use std::collections::BTreeMap;
use Archetype::{Candidate, Stable};
use Stream::Major;

pub(crate) fn v(s: &str) -> ::semver::Version {
    opreg::version::blang::parse_version(s).unwrap()
}

/// `(channel, [(entry, replaces, skips)])`, sorted by channel name as upstream returns them.
pub(crate) type Expected = Vec<(
    &'static str,
    Vec<(&'static str, &'static str, Vec<&'static str>)>,
)>;

/// Channels as `(name, [(entry, replaces, skips)])`.
type Linked = Vec<(String, Vec<(String, String, Vec<String>)>)>;

pub(crate) fn as_expected(chs: &[Channel]) -> Linked {
    chs.iter()
        .map(|c| {
            let es = c
                .entries
                .iter()
                .map(|e| (e.name.clone(), e.replaces.clone(), e.skips.clone()))
                .collect();
            (c.name.clone(), es)
        })
        .collect()
}

pub(crate) fn owned(e: &Expected) -> Linked {
    e.iter()
        .map(|(c, es)| {
            let es = es
                .iter()
                .map(|(n, r, s)| {
                    (
                        n.to_string(),
                        r.to_string(),
                        s.iter().map(|x| x.to_string()).collect(),
                    )
                })
                .collect();
            (c.to_string(), es)
        })
        .collect()
}

pub(crate) fn tuple(
    arch: Archetype,
    kind: Stream,
    name: &str,
    parent: &str,
    index: usize,
    ver: &str,
) -> EntryTuple {
    EntryTuple {
        arch,
        kind,
        parent: parent.into(),
        name: name.into(),
        version: v(ver),
        index,
    }
}

pub(crate) fn unlinked(chs: &[(&str, &[&str])]) -> BTreeMap<String, Channel> {
    chs.iter()
        .map(|(c, es)| {
            let ch = Channel {
                name: c.to_string(),
                entries: es
                    .iter()
                    .map(|e| ChannelEntry {
                        name: e.to_string(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            (c.to_string(), ch)
        })
        .collect()
}

/// A rendered bundle of package `pkg` at `version`, optionally carrying a CSV object.
fn bundle(pkg: &str, name: &str, version: &str, csv: Option<&str>) -> Bundle {
    let mut properties = vec![Property {
        r#type: "olm.package".into(),
        value: format!(r#"{{"packageName":"{pkg}","version":"{version}"}}"#),
    }];
    if let Some(csv) = csv {
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD.encode(csv);
        properties.push(Property {
            r#type: "olm.bundle.object".into(),
            value: format!(r#"{{"data":"{data}"}}"#),
        });
    }
    Bundle {
        name: name.into(),
        package: pkg.into(),
        image: format!("repo/origin/{name}"),
        properties,
        ..Default::default()
    }
}

fn render_with(doc: &str, bundles: &[Bundle]) -> Result<opreg::model::Catalog, String> {
    let mut r = |img: &str| -> Result<Vec<Bundle>, template::Error> {
        Ok(bundles.iter().filter(|b| b.image == img).cloned().collect())
    };
    template::render(Kind::Semver, doc, "t.yaml", &mut r).map_err(|e| e.to_string())
}

fn stable_template(names: &[&str]) -> String {
    let mut s =
        String::from("schema: olm.semver\ngenerateMajorChannels: true\nstable:\n  bundles:\n");
    for n in names {
        s.push_str(&format!("  - image: repo/origin/{n}\n"));
    }
    s
}

#[test]
fn versions_from_standard_channels_sunny_day() {
    let vs = [
        "0.1.0",
        "0.1.1",
        "1.1.0",
        "1.2.1",
        "1.3.1",
        "2.1.0",
        "2.1.1",
        "2.3.1",
        "2.3.2",
        "1.3.1-alpha",
    ];
    let names: Vec<String> = vs.iter().map(|x| format!("a-v{x}")).collect();
    let bundles: Vec<Bundle> = vs
        .iter()
        .zip(&names)
        .map(|(x, n)| bundle("a", n, x, None))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let doc = stable_template(&refs);
    let t = semver::parse(&serde_yaml_value(&doc)).unwrap();
    let rendered: BTreeMap<&str, Bundle> = bundles
        .iter()
        .map(|b| (b.image.as_str(), b.clone()))
        .collect();
    let (pkg, versions) = semver::versions(&t, &rendered).unwrap();
    assert_eq!(pkg, "a", "the package name is learned from the bundles");
    assert!(versions[&Archetype::Candidate].is_empty());
    assert!(versions[&Archetype::Fast].is_empty());
    let want: BTreeMap<String, ::semver::Version> =
        vs.iter().map(|x| (format!("a-v{x}"), v(x))).collect();
    assert_eq!(versions[&Stable], want);
}

fn serde_yaml_value(doc: &str) -> serde_json::Value {
    use serde::Deserialize;
    serde_json::Value::deserialize(yaml_serde::Deserializer::from_str(doc)).unwrap()
}

#[test]
fn bail_on_versions_differing_only_by_build_metadata() {
    let vs = [
        "0.1.0",
        "0.1.1",
        "1.1.0",
        "1.2.1",
        "1.3.1",
        "2.1.0",
        "2.1.1",
        "2.3.1",
        "2.3.2",
        "1.3.1-alpha",
        "1.3.1-alpha+2001Jan21",
        "1.3.1-alpha+2003May06",
    ];
    let names: Vec<String> = vs.iter().map(|x| format!("a-v{x}")).collect();
    let bundles: Vec<Bundle> = vs
        .iter()
        .zip(&names)
        .map(|(x, n)| bundle("a", n, x, None))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let err = render_with(&stable_template(&refs), &bundles).unwrap_err();
    assert!(err.starts_with("encountered bundle versions which differ only by build metadata, which cannot be ordered: ["), "{err}");
    assert!(
        err.contains(r#"cannot be compared to "1.3.1-alpha""#),
        "{err}"
    );
}

const READ_TEMPLATE: &str = "---
schema: olm.semver
generateMajorChannels: %MAJOR%
generateMinorChannels: %MINOR%
defaultChannelTypePreference: %PREF%
candidate:
    bundles:
        - image: quay.io/foo/olm:testoperator.v0.1.0
        - image: quay.io/foo/olm:testoperator.v1.1.0
fast:
    bundles:
        - image: quay.io/foo/olm:testoperator.v0.2.1
stable:
    bundles:
        - image: quay.io/foo/olm:testoperator.v1.0.1
";

fn read(major: &str, minor: &str, pref: &str) -> Result<Template, String> {
    let doc = READ_TEMPLATE
        .replace("%MAJOR%", major)
        .replace("%MINOR%", minor)
        .replace("%PREF%", pref);
    semver::parse(&serde_yaml_value(&doc)).map_err(|e| e.to_string())
}

#[test]
fn read_file_upstream_table() {
    let t = read("true", "true", "minor").expect("valid");
    assert!(t.generate_major && t.generate_minor);
    assert_eq!(t.preference, Stream::Minor);
    assert_eq!(t.bundles[&Candidate].len(), 2);

    let unknown = format!("{READ_TEMPLATE}invalid:\n    bundles:\n        - image: quay.io/foo/olm:testoperator.v1.0.1\n")
        .replace("%MAJOR%", "true")
        .replace("%MINOR%", "true")
        .replace("defaultChannelTypePreference: %PREF%\n", "");
    let err = semver::parse(&serde_yaml_value(&unknown))
        .unwrap_err()
        .to_string();
    assert_eq!(err, r#"unknown field "invalid""#);

    let err = read("true", "false", "minor").unwrap_err();
    assert!(err.contains("schema attribute mismatch"), "{err}");
    let err = read("false", "true", "major").unwrap_err();
    assert!(err.contains("schema attribute mismatch"), "{err}");
    let err = read("false", "true", "foo").unwrap_err();
    assert!(
        err.contains("unknown DefaultChannelTypePreference"),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
}

#[test]
fn read_file_defaults_follow_upstream() {
    // Neither generate option: minor channels, minor preference.
    let doc = "schema: olm.semver\nstable:\n  bundles: []\n";
    let t = semver::parse(&serde_yaml_value(doc)).unwrap();
    assert!(t.generate_minor && !t.generate_major);
    assert_eq!(t.preference, Stream::Minor);
    // Only major: major preference. Keys match in any case, as Go's encoding/json does.
    let doc = "Schema: olm.semver\nGenerateMajorChannels: true\nGenerateMinorChannels: false\nStable:\n  Bundles:\n  - Image: x\n";
    let t = semver::parse(&serde_yaml_value(doc)).unwrap();
    assert!(t.generate_major && !t.generate_minor);
    assert_eq!(t.preference, Major);
    assert_eq!(t.bundles[&Stable], vec!["x".to_string()]);
    let err = semver::parse(&serde_yaml_value("schema: olm.template.basic\n"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        r#"input file has unknown schema "olm.template.basic", should be "olm.semver""#
    );
}

fn csv(desc: Option<&str>, icons: &str) -> String {
    let d = desc
        .map(|d| format!(r#""description":"{d}","#))
        .unwrap_or_default();
    format!(
        r#"{{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{{"name":"x"}},"spec":{{{d}"icon":{icons}}}}}"#
    )
}

#[test]
fn package_metadata_comes_from_the_default_channels_head() {
    let old = csv(
        Some("Old description"),
        r#"[{"base64data":"b2xkZGF0YQ==","mediatype":"image/png"}]"#,
    );
    let new = csv(
        Some("Test operator provides awesome functionality"),
        r#"[{"base64data":"aGVsbG93b3JsZA==","mediatype":"image/svg+xml"}]"#,
    );
    let bundles = [
        bundle("test-operator", "test-operator-v1.0.0", "1.0.0", Some(&old)),
        bundle("test-operator", "test-operator-v1.1.0", "1.1.0", Some(&new)),
    ];
    let cat = render_with(
        &stable_template(&["test-operator-v1.0.0", "test-operator-v1.1.0"]),
        &bundles,
    )
    .unwrap();
    let p = &cat.packages["test-operator"];
    assert_eq!(p.default_channel, "stable-v1");
    assert_eq!(
        p.description,
        "Test operator provides awesome functionality"
    );
    let icon = p.icon.as_ref().unwrap();
    assert_eq!(
        (icon.base64data.as_str(), icon.mediatype.as_str()),
        ("aGVsbG93b3JsZA==", "image/svg+xml")
    );
}

#[test]
fn package_metadata_upstream_edge_cases() {
    let one = |csv_text: Option<String>| {
        let b = [bundle(
            "test-operator",
            "test-bundle",
            "1.0.0",
            csv_text.as_deref(),
        )];
        let cat = render_with(&stable_template(&["test-bundle"]), &b).unwrap();
        let p = cat.packages["test-operator"].clone();
        (p.description, p.icon.map(|i| (i.base64data, i.mediatype)))
    };
    // No CSV: neither.
    assert_eq!(one(None), (String::new(), None));
    // No description: the icon only.
    let png = r#"[{"base64data":"aGVsbG8=","mediatype":"image/png"}]"#;
    assert_eq!(
        one(Some(csv(None, png))),
        (String::new(), Some(("aGVsbG8=".into(), "image/png".into())))
    );
    // An empty description is none.
    assert_eq!(one(Some(csv(Some(""), png))).0, "");
    // No icons, or an empty list: the description only.
    assert_eq!(
        one(Some(csv(Some("Test description"), "null"))),
        ("Test description".into(), None)
    );
    assert_eq!(
        one(Some(csv(Some("Test description"), "[]"))),
        ("Test description".into(), None)
    );
    // Several icons: the first.
    let two = r#"[{"base64data":"Zmlyc3Q=","mediatype":"image/png"},{"base64data":"c2Vjb25k","mediatype":"image/svg+xml"}]"#;
    assert_eq!(
        one(Some(csv(Some("Test description"), two))),
        (
            "Test description".into(),
            Some(("Zmlyc3Q=".into(), "image/png".into()))
        )
    );
}

#[test]
fn render_errors_follow_upstream() {
    let a = bundle("a", "a-v1.0.0", "1.0.0", None);
    let b = bundle("b", "b-v1.1.0", "1.1.0", None);
    // A bundle of another package.
    let err =
        render_with(&stable_template(&["a-v1.0.0", "b-v1.1.0"]), &[a.clone(), b]).unwrap_err();
    assert_eq!(err, r#"bundle "b" does not belong to this package: "a""#);
    // The same bundle twice in one archetype.
    let err = render_with(
        &stable_template(&["a-v1.0.0", "a-v1.0.0"]),
        std::slice::from_ref(&a),
    )
    .unwrap_err();
    assert_eq!(err, r#"duplicate bundle name "a-v1.0.0" in stable"#);
    // A reference that renders to nothing.
    let err = render_with(&stable_template(&["missing"]), std::slice::from_ref(&a)).unwrap_err();
    assert_eq!(
        err,
        r#"bundle reference "repo/origin/missing" resulted in 0 bundles, expected 1"#
    );
    // No bundles at all.
    let err = render_with("schema: olm.semver\n", &[]).unwrap_err();
    assert_eq!(err, "no bundles specified or no bundles could be rendered");
    // A version that is not strict semver.
    let bad = bundle("a", "a-v1", "1.0", None);
    let err = render_with(&stable_template(&["a-v1"]), &[bad]).unwrap_err();
    assert!(
        err.starts_with(r#"bundle "a-v1" has invalid version "1.0": "#),
        "{err}"
    );
    // The same bundle in two archetypes is fine, in both channels.
    let doc = "schema: olm.semver\ncandidate:\n  bundles:\n  - image: repo/origin/a-v1.0.0\nstable:\n  bundles:\n  - image: repo/origin/a-v1.0.0\n";
    let cat = render_with(doc, &[a]).unwrap();
    let p = &cat.packages["a"];
    assert_eq!(
        p.channels.keys().collect::<Vec<_>>(),
        ["candidate-v1.0", "stable-v1.0"]
    );
    assert_eq!(p.default_channel, "stable-v1.0");
    assert_eq!(p.bundles.len(), 1);
}
