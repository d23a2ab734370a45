//! Cases ported from upstream's alpha/template/substitutes/substitutes_test.go (TestParseSpec,
//! TestRender, TestProcessSubstitution), with its mock bundle renderer: a reference
//! `…:vVERSION[-RELEASE]` renders to one bundle of package `testoperator` at that version.

use super::*;
use crate::model::{prop, Property, RelatedImage};
use serde_json::json;

/// Upstream's mock renderer.
fn mock(r: &str) -> Result<Vec<Bundle>, Error> {
    let (mut version, mut release) = ("1.0.0".to_string(), String::new());
    if let [_, tag] = r.split(":v").collect::<Vec<_>>()[..] {
        match tag.split_once('-') {
            Some((v, rel)) => (version, release) = (v.into(), rel.into()),
            None => version = tag.into(),
        }
    }
    Ok(vec![bundle(&version, &release, r)])
}

fn bundle(version: &str, release: &str, image: &str) -> Bundle {
    let name = bundle_name(version, release);
    let mut pkg = json!({"packageName": "testoperator", "version": version});
    if !release.is_empty() {
        pkg["release"] = json!(release);
    }
    Bundle {
        name,
        package: "testoperator".into(),
        image: image.into(),
        properties: vec![Property {
            r#type: prop::PACKAGE.into(),
            value: pkg.to_string(),
        }],
        related_images: vec![RelatedImage {
            name: "bundle".into(),
            image: image.into(),
        }],
        ..Bundle::default()
    }
}

fn bundle_name(version: &str, release: &str) -> String {
    if release.is_empty() {
        format!("testoperator.v{version}")
    } else {
        format!("testoperator-v{version}-{release}")
    }
}

/// An `olm.bundle` entry as upstream's createValidTestBundleMeta writes it.
fn bundle_meta(version: &str, release: &str) -> Value {
    let mut pkg = json!({"packageName": "testoperator", "version": version});
    if !release.is_empty() {
        pkg["release"] = json!(release);
    }
    let image = format!("quay.io/test/testoperator-bundle:v{version}");
    json!({"schema": "olm.bundle", "name": bundle_name(version, release), "package": "testoperator",
        "image": image, "properties": [{"type": "olm.package", "value": pkg}],
        "relatedImages": [{"name": "bundle", "image": image}]})
}

fn package_meta() -> Value {
    json!({"schema": "olm.package", "name": "testoperator", "defaultChannel": "stable",
        "description": "testoperator operator"})
}

fn channel_meta(name: &str, entries: Value) -> Value {
    json!({"schema": "olm.channel", "name": name, "package": "testoperator", "entries": entries})
}

fn run(entries: Vec<Value>, substitutions: &[(&str, &str)]) -> Result<Catalog, Error> {
    let subs: Vec<Value> = substitutions
        .iter()
        .map(|(n, b)| json!({"name": n, "base": b}))
        .collect();
    let doc = json!({"schema": SCHEMA, "entries": entries, "substitutions": subs});
    render(&doc, "t.yaml", &mut mock)
}

fn entries_of(cat: &Catalog, channel: &str) -> Vec<crate::model::ChannelEntry> {
    cat.packages["testoperator"].channels[channel]
        .entries
        .clone()
}

fn entry<'a>(es: &'a [crate::model::ChannelEntry], name: &str) -> &'a crate::model::ChannelEntry {
    es.iter().find(|e| e.name == name).expect(name)
}

fn two_bundles() -> Vec<Value> {
    vec![
        package_meta(),
        channel_meta(
            "stable",
            json!([{"name": "testoperator.v1.0.0"},
                {"name": "testoperator.v1.1.0", "replaces": "testoperator.v1.0.0"}]),
        ),
        bundle_meta("1.0.0", ""),
        bundle_meta("1.1.0", ""),
    ]
}

fn parse_yaml(text: &str) -> Result<(Vec<Value>, Vec<Substitute>), Error> {
    parse(&super::super::first_document(text)?)
}

#[test]
fn parse_spec_success_and_errors() {
    let (entries, subs) = parse_yaml(
        "schema: olm.template.substitutes\nentries:\n  - schema: olm.channel\n    name: stable\n    package: testoperator\nsubstitutions:\n  - name: testoperator.v1.1.0\n    base: testoperator.v1.0.0\n  - name: testoperator.v1.2.0\n    base: testoperator.v1.1.0\n",
    )
    .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        subs,
        [
            Substitute {
                name: "testoperator.v1.1.0".into(),
                base: "testoperator.v1.0.0".into()
            },
            Substitute {
                name: "testoperator.v1.2.0".into(),
                base: "testoperator.v1.1.0".into()
            },
        ]
    );
    let empty =
        parse_yaml("schema: olm.template.substitutes\nentries: []\nsubstitutions: []\n").unwrap();
    assert_eq!((empty.0.len(), empty.1.len()), (0, 0));
    for bad in [
        "schema: olm.template.invalid\nentries: []\nsubstitutions: []\n",
        "entries: []\nsubstitutions: []\n",
    ] {
        let e = parse_yaml(bad).unwrap_err().to_string();
        assert!(e.contains("template has unknown schema"), "{e}");
    }
    let e = parse_yaml("schema: olm.template.substitutes\nentries: [\nsubstitutions: []\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("decoding template"), "{e}");
}

#[test]
fn render_with_single_substitution() {
    let cat = run(
        two_bundles(),
        &[(
            "quay.io/test/testoperator-bundle:v1.1.0-alpha",
            "testoperator.v1.1.0",
        )],
    )
    .unwrap();
    let es = entries_of(&cat, "stable");
    assert_eq!(es.len(), 3);
    let sub = entry(&es, "testoperator-v1.1.0-alpha");
    assert_eq!(sub.replaces, "testoperator.v1.0.0");
    assert!(sub.skips.contains(&"testoperator.v1.1.0".to_string()));
    assert!(cat.packages["testoperator"]
        .bundles
        .contains_key("testoperator-v1.1.0-alpha"));
}

#[test]
fn render_with_multiple_substitutions() {
    let cat = run(
        two_bundles(),
        &[
            (
                "quay.io/test/testoperator-bundle:v1.2.0-alpha",
                "testoperator.v1.1.0",
            ),
            (
                "quay.io/test/testoperator-bundle:v1.3.0-alpha",
                "testoperator-v1.2.0-alpha",
            ),
        ],
    )
    .unwrap();
    let es = entries_of(&cat, "stable");
    assert_eq!(es.len(), 4);
    let first = entry(&es, "testoperator-v1.2.0-alpha");
    assert!(first.replaces.is_empty() && first.skips.is_empty());
    let second = entry(&es, "testoperator-v1.3.0-alpha");
    assert_eq!(second.replaces, "testoperator.v1.0.0");
    assert!(second
        .skips
        .contains(&"testoperator-v1.2.0-alpha".to_string()));
}

#[test]
fn render_with_no_substitutions() {
    let entries = vec![
        package_meta(),
        channel_meta("stable", json!([{"name": "testoperator.v1.0.0"}])),
        bundle_meta("1.0.0", ""),
    ];
    let cat = run(entries, &[]).unwrap();
    assert_eq!(entries_of(&cat, "stable").len(), 1);
}

#[test]
fn render_errors() {
    let one = || {
        vec![
            package_meta(),
            channel_meta("stable", json!([{"name": "testoperator.v1.0.0"}])),
            bundle_meta("1.0.0", ""),
        ]
    };
    let three = || {
        let mut e = two_bundles();
        e[1] = channel_meta(
            "stable",
            json!([{"name": "testoperator.v1.0.0"},
                {"name": "testoperator.v1.1.0", "replaces": "testoperator.v1.0.0"},
                {"name": "testoperator.v1.2.0", "replaces": "testoperator.v1.1.0"}]),
        );
        e.push(bundle_meta("1.2.0", ""));
        e
    };
    /// Entries, substitutions (name, base), and the error expected.
    type Case<'a> = (Vec<Value>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            one(),
            vec![(
                "quay.io/test/testoperator-bundle:v1.2.0-alpha",
                "nonexistent.v1.0.0",
            )],
            "base bundle \"nonexistent.v1.0.0\" does not exist in catalog",
        ),
        (
            two_bundles(),
            vec![("", "testoperator.v1.1.0")],
            "substitution name cannot be empty",
        ),
        (
            two_bundles(),
            vec![("quay.io/test/testoperator-bundle:v1.2.0-alpha", "")],
            "substitution base cannot be empty",
        ),
        (
            two_bundles(),
            vec![("testoperator.v1.1.0", "testoperator.v1.1.0")],
            "substitution name and base cannot be the same",
        ),
        (
            two_bundles(),
            vec![
                (
                    "quay.io/test/testoperator-bundle:v1.2.0-alpha",
                    "testoperator.v1.1.0",
                ),
                (
                    "quay.io/test/testoperator-bundle:v1.3.0-alpha",
                    "testoperator.v1.1.0",
                ),
            ],
            "cannot reuse the same substitution base",
        ),
        (
            three(),
            vec![
                (
                    "quay.io/test/testoperator-bundle:v1.3.0-alpha",
                    "testoperator.v1.1.0",
                ),
                (
                    "quay.io/test/testoperator-bundle:v1.3.0-alpha",
                    "testoperator.v1.2.0",
                ),
            ],
            "cannot reuse the same substitution",
        ),
        // Upstream's TestBoundaryCases: the substitute must be newer than its base.
        (
            two_bundles(),
            vec![(
                "quay.io/test/testoperator-bundle:v1.0.5",
                "testoperator.v1.1.0",
            )],
            "is not less than substitute bundle",
        ),
    ];
    for (entries, subs, want) in cases {
        let e = run(entries, &subs).unwrap_err().to_string();
        assert!(e.contains(want), "{e} does not contain {want}");
    }
}

fn alpha_channel(name: &str, second: Value) -> Value {
    channel_meta(name, json!([{"name": "testoperator-v1.0.0-alpha"}, second]))
}

#[test]
fn process_substitution_with_skips_and_skip_range() {
    let second = json!({"name": "testoperator-v1.1.0-alpha", "replaces": "testoperator-v1.0.0-alpha",
        "skips": ["testoperator-v0.9.0-alpha"], "skipRange": ">=0.9.0 <1.1.0"});
    let entries = vec![
        package_meta(),
        alpha_channel("stable", second),
        bundle_meta("1.0.0", "alpha"),
        bundle_meta("1.1.0", "alpha"),
    ];
    let cat = run(
        entries,
        &[(
            "quay.io/test/testoperator-bundle:v1.2.0-alpha",
            "testoperator-v1.1.0-alpha",
        )],
    )
    .unwrap();
    let es = entries_of(&cat, "stable");
    assert_eq!(es.len(), 3);
    let sub = entry(&es, "testoperator-v1.2.0-alpha");
    assert_eq!(sub.replaces, "testoperator-v1.0.0-alpha");
    assert_eq!(
        sub.skips,
        ["testoperator-v0.9.0-alpha", "testoperator-v1.1.0-alpha"]
    );
    assert_eq!(sub.skip_range, ">=0.9.0 <1.1.0");
    let base = entry(&es, "testoperator-v1.1.0-alpha");
    assert!(base.replaces.is_empty() && base.skips.is_empty() && base.skip_range.is_empty());
}

#[test]
fn process_substitution_with_multiple_channels() {
    let second =
        || json!({"name": "testoperator-v1.1.0-alpha", "replaces": "testoperator-v1.0.0-alpha"});
    let entries = vec![
        package_meta(),
        alpha_channel("stable", second()),
        alpha_channel("beta", second()),
        bundle_meta("1.0.0", "alpha"),
        bundle_meta("1.1.0", "alpha"),
    ];
    let cat = run(
        entries,
        &[(
            "quay.io/test/testoperator-bundle:v1.2.0-alpha",
            "testoperator-v1.1.0-alpha",
        )],
    )
    .unwrap();
    for ch in ["stable", "beta"] {
        let es = entries_of(&cat, ch);
        assert_eq!(es.len(), 3, "{ch}");
        let sub = entry(&es, "testoperator-v1.2.0-alpha");
        assert_eq!(sub.replaces, "testoperator-v1.0.0-alpha");
        assert!(sub.skips.contains(&"testoperator-v1.1.0-alpha".to_string()));
    }
}

#[test]
fn process_substitution_updates_existing_references() {
    let mut entries = two_bundles();
    entries[1] = channel_meta(
        "stable",
        json!([{"name": "testoperator.v1.0.0"},
            {"name": "testoperator.v1.1.0", "replaces": "testoperator.v1.0.0"},
            {"name": "testoperator.v1.2.0", "replaces": "testoperator.v1.1.0"},
            {"name": "testoperator.v1.3.0", "replaces": "testoperator.v1.2.0"}]),
    );
    entries.push(bundle_meta("1.2.0", ""));
    entries.push(bundle_meta("1.3.0", ""));
    let cat = run(
        entries,
        &[(
            "quay.io/test/testoperator-bundle:v1.1.0-alpha",
            "testoperator.v1.1.0",
        )],
    )
    .unwrap();
    let es = entries_of(&cat, "stable");
    let v12 = entry(&es, "testoperator.v1.2.0");
    assert_eq!(v12.replaces, "testoperator-v1.1.0-alpha");
    assert_eq!(v12.skips, ["testoperator.v1.1.0"]);
    assert_eq!(
        entry(&es, "testoperator.v1.3.0").replaces,
        "testoperator.v1.2.0"
    );
}

#[test]
fn legacy_build_metadata_becomes_the_release() {
    // Upstream's VersionRelease: with no release, a bundle whose CSV names what it substitutes
    // for (in olm.csv.metadata or in an olm.bundle.object CSV) reads its build metadata as
    // its release; any other bundle keeps build metadata as part of the version.
    use base64::Engine;
    let mut by_metadata = bundle("1.0.0+2", "", "img");
    by_metadata.properties.push(Property {
        r#type: prop::CSV_METADATA.into(),
        value: json!({"annotations": {"olm.substitutesFor": "testoperator.v1.0.0"}}).to_string(),
    });
    let vr = version_release(&by_metadata, "substitute", "s").unwrap();
    assert_eq!(vr.release.as_deref(), Some("2"));
    assert!(vr.version.build.is_empty());
    let plain = bundle("1.0.0+1", "", "img");
    let pv = version_release(&plain, "base", "b").unwrap();
    assert_eq!(pv.release, None);
    assert_eq!(pv.version.build.as_str(), "1");
    assert_eq!(vr.cmp(&pv), Ordering::Greater);
    // The same build metadata without the annotation is not newer: precedence ignores it.
    let unannotated = bundle("1.0.0+2", "", "img");
    let uv = version_release(&unannotated, "substitute", "s").unwrap();
    assert_eq!(uv.cmp(&pv), Ordering::Equal);
    let csv = json!({"kind": "ClusterServiceVersion",
        "metadata": {"annotations": {"olm.substitutesFor": "testoperator.v1.0.0"}}});
    let data = base64::engine::general_purpose::STANDARD.encode(csv.to_string());
    let mut by_object = bundle("1.0.0+3.x", "", "img");
    by_object.properties.push(Property {
        r#type: prop::BUNDLE_OBJECT.into(),
        value: json!({"data": data}).to_string(),
    });
    let ov = version_release(&by_object, "substitute", "s").unwrap();
    assert_eq!(ov.release.as_deref(), Some("3.x"));
    // An explicit release wins over build metadata.
    let mut released = by_metadata.clone();
    released.properties[0].value =
        json!({"packageName": "testoperator", "version": "1.0.0+2", "release": "7"}).to_string();
    let rv = version_release(&released, "substitute", "s").unwrap();
    assert_eq!(rv.release.as_deref(), Some("7"));
}
