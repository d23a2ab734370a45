//! Dependencies resolved within the catalog: a package requirement, a GVK requirement with two
//! providers, a requirement already met, recursion, an unmet one and an `olm.constraint`.

use super::*;
use crate::mirror::{config, filter};
use crate::model::{Channel, ChannelEntry, Property};

fn bundle(pkg: &str, version: &str, props: &[(&str, &str)]) -> Bundle {
    let mut properties = vec![Property {
        r#type: prop::PACKAGE.into(),
        value: format!(r#"{{"packageName":"{pkg}","version":"{version}"}}"#),
    }];
    properties.extend(props.iter().map(|(t, v)| Property {
        r#type: t.to_string(),
        value: v.to_string(),
    }));
    Bundle {
        name: format!("{pkg}.v{version}"),
        package: pkg.into(),
        properties,
        ..Default::default()
    }
}

/// A package whose channel `stable` (the default) is a replaces chain of `bundles`, oldest
/// first; `other` channels hold the bundles named there alone.
fn package(name: &str, bundles: Vec<Bundle>, other: &[(&str, &str)]) -> Package {
    let mut p = Package {
        name: name.into(),
        default_channel: "stable".into(),
        ..Default::default()
    };
    let mut entries = Vec::new();
    let mut prev = String::new();
    for b in &bundles {
        if other.iter().any(|(_, n)| *n == b.name) {
            continue;
        }
        entries.push(ChannelEntry {
            name: b.name.clone(),
            replaces: prev.clone(),
            ..Default::default()
        });
        prev = b.name.clone();
    }
    p.channels.insert(
        "stable".into(),
        Channel {
            name: "stable".into(),
            entries,
            ..Default::default()
        },
    );
    for (ch, n) in other {
        p.channels.insert(
            ch.to_string(),
            Channel {
                name: ch.to_string(),
                entries: vec![ChannelEntry {
                    name: n.to_string(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        );
    }
    for b in bundles {
        p.bundles.insert(b.name.clone(), b);
    }
    p
}

const GVK: &str =
    r#"{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}"#;

fn catalog() -> Catalog {
    let mut c = Catalog::default();
    for p in [
        package(
            "app",
            vec![bundle(
                "app",
                "1.0.0",
                &[(
                    prop::PACKAGE_REQUIRED,
                    r#"{"packageName":"db","versionRange":">=2.2.0 <3.0.0"}"#,
                )],
            )],
            &[],
        ),
        package(
            "db",
            vec![
                bundle("db", "1.0.0", &[]),
                bundle("db", "2.0.0", &[(prop::GVK_REQUIRED, GVK)]),
                bundle("db", "2.1.0", &[(prop::GVK_REQUIRED, GVK)]),
                bundle("db", "3.0.0", &[]),
                bundle("db", "2.5.0", &[(prop::GVK_REQUIRED, GVK)]),
            ],
            &[("preview", "db.v2.5.0")],
        ),
        package(
            "etcd",
            vec![bundle("etcd", "0.9.4", &[(prop::GVK, GVK)])],
            &[],
        ),
        package(
            "etcd-fork",
            vec![bundle("etcd-fork", "1.0.0", &[(prop::GVK, GVK)])],
            &[],
        ),
        package(
            "cel",
            vec![bundle(
                "cel",
                "1.0.0",
                &[
                    (prop::CONSTRAINT, r#"{"cel":{"rule":"true"}}"#),
                    (
                        prop::PACKAGE_REQUIRED,
                        r#"{"packageName":"nope","versionRange":">=1.0.0"}"#,
                    ),
                ],
            )],
            &[],
        ),
    ] {
        c.packages.insert(p.name.clone(), p);
    }
    c
}

fn only(pkgs: &[&str], skip: bool) -> config::Operator {
    config::Operator {
        catalog: "c".into(),
        skip_dependencies: skip,
        packages: pkgs
            .iter()
            .map(|p| config::Package {
                name: p.to_string(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn required_packages_and_apis_are_added_recursively_with_the_reason() {
    let c = catalog();
    let mut f = filter::filter(&c, &only(&["app"], false)).unwrap();
    let r = resolve(&c, &mut f);
    let added: Vec<(&str, &str)> = r
        .added
        .iter()
        .map(|a| (a.package.as_str(), a.bundle.as_str()))
        .collect();
    // db: no bundle of the default channel is in the range, so the highest of any channel
    // (2.5.0, in `preview`), and the default channel's head; then 2.5.0's GVK requirement adds
    // both of its providers.
    assert_eq!(
        added,
        [
            ("db", "db.v2.5.0"),
            ("db", "db.v3.0.0"),
            ("etcd", "etcd.v0.9.4"),
            ("etcd-fork", "etcd-fork.v1.0.0"),
        ]
    );
    assert!(
        r.added[0]
            .reason
            .contains(r#"package "db" in ">=2.2.0 <3.0.0", required by "app.v1.0.0""#),
        "{:?}",
        r.added[0]
    );
    assert!(
        r.added[2]
            .reason
            .contains("API etcd.database.coreos.com/v1beta2 EtcdCluster"),
        "{:?}",
        r.added[2]
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let db = &f.catalog.packages["db"];
    assert_eq!(db.default_channel, "stable");
    assert_eq!(
        db.channels["stable"].entries.len(),
        1,
        "the default channel's head"
    );
    assert_eq!(db.channels["preview"].entries[0].name, "db.v2.5.0");
    assert!(f.catalog.packages.contains_key("etcd-fork"));
}

#[test]
fn a_met_requirement_adds_nothing_and_unmet_ones_and_constraints_warn() {
    let c = catalog();
    let mut f = filter::filter(&c, &only(&["db", "etcd"], false)).unwrap();
    // db's head (3.0.0) has no requirement: nothing added.
    assert!(resolve(&c, &mut f).added.is_empty());
    let mut f = filter::filter(&c, &only(&["cel"], false)).unwrap();
    let r = resolve(&c, &mut f);
    assert!(r.added.is_empty());
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    assert!(r.warnings.iter().any(|w| w.contains("olm.constraint")));
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains(r#"requires package "nope" in ">=1.0.0""#)));
}
