//! Property tests on random channel graphs: the store's materialized `edge` table equals what
//! `graph::EntryRule::edges_from` (the rule itself) says of every name, the store's package
//! facts equal the model's, and classic, v1 and semver resolutions answered from the store
//! equal those from the model, from catalog bundles and from installed `name@version`s that
//! are not in the catalog.
//!
//! The store only ever holds valid catalogs (it takes a `ValidCatalog`), so the graphs are
//! random but valid by construction: each channel is a replaces chain whose head may skip the
//! lower part of it, with skips of an unknown name, skipRanges, deprecations and dependencies.

use opreg::graph::resolve::{self, Request, UpgradeGraph};
use opreg::graph::{EntryRule, Versions};
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
    ">=1.0.0 <1.2.0",
];
/// A name the graphs may replace or skip that is never a bundle.
const GHOST: &str = "p.ghost";

/// One channel: per bundle (member?, skipRange index, also skips the unknown name?), and how
/// many of the lowest members the head skips.
type ChannelSpec = (Vec<(bool, usize, bool)>, usize);

fn arb_catalog() -> impl Strategy<Value = opreg::validate::ValidCatalog> {
    proptest::sample::subsequence(VERSIONS.to_vec(), 2..=6)
        .prop_flat_map(|vs| {
            let n = vs.len();
            let entry = (any::<bool>(), 0..RANGES.len(), any::<bool>());
            (
                Just(vs),
                vec((vec(entry, n), 0..n), 1..=2),
                vec((any::<bool>(), any::<bool>()), n),
            )
        })
        .prop_map(|(vs, channels, flags)| {
            let cat = build(&vs, &channels, &flags);
            let (mut errors, mut warnings) = (Vec::new(), Vec::new());
            match opreg::validate::check(cat, &mut errors, &mut warnings) {
                Ok(valid) => valid,
                Err(_) => panic!("the generator made an invalid catalog: {errors:?}"),
            }
        })
}

fn name(v: &str) -> String {
    format!("p.v{v}")
}

fn build(vs: &[&str], channels: &[ChannelSpec], flags: &[(bool, bool)]) -> Catalog {
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
    for (c, (specs, cut)) in channels.iter().enumerate() {
        // Channel c0 holds every bundle, so every bundle is in a channel.
        let members: Vec<usize> = (0..vs.len()).filter(|&i| c == 0 || specs[i].0).collect();
        let members = if members.is_empty() {
            vec![vs.len() - 1]
        } else {
            members
        };
        let head = members.len() - 1;
        let cut = cut % members.len().max(1);
        let entries = members
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let (_, range, ghost) = specs[i];
                let mut skips: Vec<String> = Vec::new();
                if k == head {
                    skips.extend(members[..cut.min(head)].iter().map(|&j| name(vs[j])));
                }
                if ghost {
                    skips.push(GHOST.to_string());
                }
                ChannelEntry {
                    name: name(vs[i]),
                    replaces: if k > 0 {
                        name(vs[members[k - 1]])
                    } else if ghost {
                        GHOST.to_string()
                    } else {
                        String::new()
                    },
                    skips,
                    skip_range: RANGES[range].to_string(),
                }
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

fn stored(cat: &opreg::validate::ValidCatalog) -> (tempfile::TempDir, Store) {
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
            // Every name an edge can reach: the package's bundles and the unknown name.
            let mut names: Vec<&str> = pkg.bundles.keys().map(String::as_str).collect();
            names.push(GHOST);
            let mut want: BTreeSet<(String, String, String)> = BTreeSet::new();
            for e in &ch.entries {
                let rule = EntryRule::new(e);
                for &t in &names {
                    for kind in rule.edges_from(t, versions.get(t)) {
                        want.insert((e.name.clone(), t.to_string(), kind.as_str().to_string()));
                    }
                }
            }
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
        prop_assert_eq!(store.package_facts("p").unwrap(), (*cat).package_facts("p").unwrap());
        let pkg = &cat.packages["p"];
        let mut froms: Vec<String> = pkg.bundles.keys().cloned().collect();
        froms.extend([format!("{GHOST}@1.0.5"), "p.other@0.5.0".to_string(), "p.v1.0.0@1.0.0".to_string()]);
        let mut channel_sets: Vec<Vec<String>> = vec![vec![]];
        channel_sets.extend(pkg.channels.keys().map(|c| vec![c.clone()]));
        for from in &froms {
            for chans in &channel_sets {
                use resolve::{Policy::*, Semantics::*};
                for (sem, ranges, policies) in [
                    (Classic, &[""][..], &[CatalogProvided][..]),
                    (V1, &["", "<2.0.0", ">=1.0.0"][..], &[CatalogProvided, SelfCertified][..]),
                    (Semver, &["", "1.x"][..], &[CatalogProvided, SelfCertified][..]),
                ] {
                    for range in ranges {
                        for policy in policies {
                            let req = Request {
                                package: "p".into(),
                                from: from.clone(),
                                channels: chans.clone(),
                                version_range: (!range.is_empty()).then(|| range.to_string()),
                                policy: *policy,
                                semantics: sem,
                                openshift_version: Some("4.13".into()),
                            };
                            let model = answer(&*cat, &req);
                            let from_store = answer(&store, &req);
                            prop_assert_eq!(&from_store, &model, "{:?}", req);
                        }
                    }
                }
            }
        }
    }
}
