//! Property tests on random channel graphs: the store's materialized `edge` table equals
//! `graph::channel_edges` (the in-memory rule), the store's package facts equal the model's,
//! and classic, v1 and semver resolutions answered from the store equal those from the model,
//! from catalog bundles and from installed `name@version`s that are not in the catalog.
//!
//! The graphs are random, not valid catalogs: several heads, cycles, skips of unknown names,
//! unparsable skipRanges, deprecations and dependencies all occur, and both sides must agree
//! on the answer or on the error.

use opreg::graph::resolve::{self, Request, UpgradeGraph};
use opreg::graph::{channel_edges, Versions};
use opreg::model::{
    prop as props, Bundle, Catalog, Channel, ChannelEntry, DeprecationEntry, Deprecations, Origin,
    Package, Property,
};
use opreg::store::{write_catalog, Store};
use proptest::collection::vec;
use proptest::prelude::*;
use std::collections::BTreeSet;

const VERSIONS: &[&str] = &[
    "0.9.0",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "1.2.0-rc.1",
    "1.2.0",
    "1.9.0",
    "2.0.0",
];
const RANGES: &[&str] = &[
    "",
    "",
    ">=1.0.0 <2.0.0",
    "<1.1.0",
    "1.x",
    ">=0.9.0",
    "not a range",
    ">=1.0.0 <1.2.0",
];
/// A name the graphs may replace or skip that is never a bundle.
const GHOST: &str = "p.ghost";

/// One entry: member?, replaces (index; n = ghost, n+1 = none), skips, skipRange index.
type EntrySpec = (bool, usize, Vec<usize>, usize);

fn arb_catalog() -> impl Strategy<Value = Catalog> {
    proptest::sample::subsequence(VERSIONS.to_vec(), 2..=6)
        .prop_flat_map(|vs| {
            let n = vs.len();
            let entry = (any::<bool>(), 0..n + 2, vec(0..=n, 0..=2), 0..RANGES.len());
            (
                Just(vs),
                vec(vec(entry, n), 1..=2),
                vec((any::<bool>(), any::<bool>()), n),
            )
        })
        .prop_map(|(vs, channels, flags)| build(&vs, &channels, &flags))
}

fn name(v: &str) -> String {
    format!("p.v{v}")
}

fn build(vs: &[&str], channels: &[Vec<EntrySpec>], flags: &[(bool, bool)]) -> Catalog {
    let target = |i: usize| {
        if i < vs.len() {
            name(vs[i])
        } else {
            GHOST.to_string()
        }
    };
    let mut pkg = Package {
        name: "p".into(),
        default_channel: "c0".into(),
        ..Default::default()
    };
    let mut deprecations = Vec::new();
    for (v, (deprecated, deps)) in vs.iter().zip(flags) {
        let mut properties = vec![Property {
            r#type: props::PACKAGE.into(),
            value: format!(r#"{{"packageName":"p","version":"{v}"}}"#),
        }];
        if *deps {
            properties.push(Property {
                r#type: props::GVK_REQUIRED.into(),
                value: r#"{"group":"g","kind":"K","version":"v1"}"#.into(),
            });
        }
        pkg.bundles.insert(
            name(v),
            Bundle {
                name: name(v),
                package: "p".into(),
                image: format!("img:{v}"),
                properties,
                ..Default::default()
            },
        );
        if *deprecated {
            deprecations.push(DeprecationEntry {
                schema: "olm.bundle".into(),
                name: name(v),
                message: "gone".into(),
            });
        }
    }
    if !deprecations.is_empty() {
        pkg.deprecations = Some(Deprecations {
            entries: deprecations,
            origin: Origin::default(),
        });
    }
    for (c, specs) in channels.iter().enumerate() {
        let entries = specs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.0)
            .map(|(i, (_, rep, skips, range))| ChannelEntry {
                name: name(vs[i]),
                replaces: if *rep <= vs.len() {
                    target(*rep)
                } else {
                    String::new()
                },
                skips: skips
                    .iter()
                    .map(|s| target(*s))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
                skip_range: RANGES[*range].to_string(),
            })
            .collect();
        let ch = format!("c{c}");
        pkg.channels.insert(
            ch.clone(),
            Channel {
                name: ch,
                entries,
                ..Default::default()
            },
        );
    }
    let mut cat = Catalog::default();
    cat.packages.insert("p".into(), pkg);
    cat
}

fn stored(cat: &Catalog) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    write_catalog(cat, &path, "test", &mut |_, _| {}).unwrap();
    let store = Store::open(&path).unwrap();
    (dir, store)
}

fn answer(g: &dyn UpgradeGraph, req: &Request) -> Result<resolve::Resolution, String> {
    resolve::resolve(g, req).map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn materialized_edges_equal_the_rule(cat in arb_catalog()) {
        let (_dir, store) = stored(&cat);
        let pkg = &cat.packages["p"];
        let versions = Versions::of(pkg);
        for ch in pkg.channels.values() {
            let want: BTreeSet<(String, String, String)> = channel_edges(&versions, ch)
                .into_iter()
                .map(|e| (e.from, e.to, e.kind.as_str().to_string()))
                .collect();
            let conn = store.conn().unwrap();
            let mut st = conn
                .prepare("SELECT from_bundle, to_bundle, kind FROM edge WHERE package = 'p' AND channel = ?1")
                .unwrap();
            let got: BTreeSet<(String, String, String)> = st
                .query_map([&ch.name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            prop_assert_eq!(got, want, "channel {}", ch.name);
        }
    }

    #[test]
    fn store_answers_equal_model_answers(cat in arb_catalog()) {
        let (_dir, store) = stored(&cat);
        prop_assert_eq!(store.package_facts("p").unwrap(), cat.package_facts("p").unwrap());
        let pkg = &cat.packages["p"];
        let mut froms: Vec<String> = pkg.bundles.keys().cloned().collect();
        froms.extend([format!("{GHOST}@1.0.5"), "p.other@0.5.0".to_string(), "p.v1.0.0@1.0.0".to_string()]);
        let mut channel_sets: Vec<Vec<String>> = vec![vec![]];
        channel_sets.extend(pkg.channels.keys().map(|c| vec![c.clone()]));
        for from in &froms {
            for chans in &channel_sets {
                for (sem, ranges, policies) in [
                    ("classic", &[""][..], &["CatalogProvided"][..]),
                    ("v1", &["", "<2.0.0", ">=1.0.0"][..], &["CatalogProvided", "SelfCertified"][..]),
                    ("semver", &["", "1.x"][..], &["CatalogProvided", "SelfCertified"][..]),
                ] {
                    for range in ranges {
                        for policy in policies {
                            let req = Request::parse("p", from, chans.clone(), range, policy, sem, "4.13").unwrap();
                            let model = answer(&cat, &req);
                            let from_store = answer(&store, &req);
                            prop_assert_eq!(&from_store, &model, "{:?}", req);
                        }
                    }
                }
            }
        }
    }
}
