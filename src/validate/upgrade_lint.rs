//! Warnings for update graphs that classic OLM and OLM v1 resolve differently, and for
//! downgrade hops (`opreg validate --upgrades`); the single-edge lints of
//! [`super::edge_lint`] are reported with them.

use crate::diag::{Diagnostic, Rule};
use crate::graph::{channel_head, classic_chain, EdgeKind, EntryRule, Head, Versions};
use crate::model::{Catalog, Channel};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A skipRange that covers a newer version in the same channel: both OLMs let a subscriber at
/// `covers` "upgrade" to the older `bundle` (and, usually, back again: a loop).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Downgrade {
    pub package: String,
    pub channel: String,
    /// The older bundle whose skipRange covers the newer one.
    pub bundle: String,
    pub version: String,
    pub skip_range: String,
    /// The newer bundle the range covers.
    pub covers: String,
    pub covers_version: String,
}

/// Every downgrade hop of a channel, by [`EntryRule::edges_from`]'s skipRange rule.
pub fn downgrades(package: &str, versions: &Versions, ch: &Channel) -> Vec<Downgrade> {
    let mut out = Vec::new();
    for e in &ch.entries {
        let rule = EntryRule::new(e);
        let (Some(_), Some(ev)) = (&rule.range, versions.get(&e.name)) else {
            continue;
        };
        for o in &ch.entries {
            let Some(ov) = versions.get(&o.name) else {
                continue;
            };
            if ov.cmp_precedence(ev).is_gt()
                && rule
                    .edges_from(&o.name, Some(ov))
                    .contains(&EdgeKind::SkipRange)
            {
                out.push(Downgrade {
                    package: package.to_string(),
                    channel: ch.name.clone(),
                    bundle: e.name.clone(),
                    version: ev.to_string(),
                    skip_range: e.skip_range.clone(),
                    covers: o.name.clone(),
                    covers_version: ov.to_string(),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Warnings for graphs classic OLM and OLM v1 resolve differently (`opreg validate --upgrades`).
pub fn lint(cat: &Catalog) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for pkg in cat.packages.values() {
        let versions = Versions::of(pkg);
        for ch in pkg.channels.values() {
            let mut warn = |bundle: &str, msg: String| {
                let d = Diagnostic::warning(Rule::UpgradeLint, msg).at(&ch.origin);
                out.push(d.package(&pkg.name).channel(&ch.name).bundle(bundle));
            };
            // 1. A head below the channel's highest version strands v1 users below it.
            if let Head::One(head) = channel_head(ch) {
                let hv = versions.get(head);
                let top = ch
                    .entries
                    .iter()
                    .filter_map(|e| versions.get(&e.name).map(|v| (v, &e.name)))
                    .max_by(|a, b| a.0.cmp_precedence(b.0));
                if let (Some(hv), Some((tv, top))) = (hv, top) {
                    if tv.cmp_precedence(hv).is_gt() {
                        let msg = format!(
                            "the channel head {head} ({hv}) is not the highest version: {top} is \
                             {tv}. Classic OLM moves users to the head; OLM v1 never moves to a \
                             lower version, so users who reach {top} stay there"
                        );
                        warn(head, msg);
                    }
                }
            }
            // 2. Upgrades that pass only through a skipped entry: v1 takes them, classic never.
            let chain: Vec<&str> = classic_chain(ch);
            let rules: Vec<EntryRule> = ch.entries.iter().map(EntryRule::new).collect();
            let has_chain_successor = |name: &str| {
                rules.iter().any(|r| {
                    chain.contains(&r.entry.name.as_str())
                        && !r.edges_from(name, versions.get(name)).is_empty()
                })
            };
            for rule in &rules {
                let e = rule.entry;
                let skippers: Vec<&str> = ch
                    .entries
                    .iter()
                    .filter(|o| o.skips.contains(&e.name))
                    .map(|o| o.name.as_str())
                    .collect();
                if skippers.is_empty() {
                    continue;
                }
                let skippers = skippers.join(", ");
                let mut targets: BTreeSet<&str> = BTreeSet::from([e.replaces.as_str()]);
                targets.extend(e.skips.iter().map(String::as_str));
                targets.extend(versions.0.keys().map(String::as_str));
                for t in targets {
                    if rule.edges_from(t, versions.get(t)).is_empty() || has_chain_successor(t) {
                        continue;
                    }
                    let msg = format!(
                        "{t} upgrades only through {}, which {skippers} skips: OLM v1 takes that \
                         edge, classic OLM never installs a skipped entry and leaves {t} without \
                         an upgrade",
                        e.name
                    );
                    warn(&e.name, msg);
                }
                if rule.range.is_some() {
                    let msg = format!(
                        "{} is skipped by {skippers}, so classic OLM ignores its skipRange {:?}: \
                         installed versions in that range that no chain entry covers reach {} \
                         only under OLM v1",
                        e.name, e.skip_range, e.name
                    );
                    warn(&e.name, msg);
                }
            }
            // 3. A skipRange covering a newer version: a downgrade hop. One warning per
            // skipRange, naming every newer bundle it covers.
            let mut by_bundle: BTreeMap<&str, Vec<Downgrade>> = BTreeMap::new();
            let found = downgrades(&pkg.name, &versions, ch);
            for d in &found {
                by_bundle.entry(&d.bundle).or_default().push(d.clone());
            }
            for (bundle, ds) in by_bundle {
                let d = &ds[0];
                let newer: Vec<String> = ds
                    .iter()
                    .map(|d| format!("{} ({})", d.covers, d.covers_version))
                    .collect();
                let msg = format!(
                    "{} ({}) has skipRange {:?}, which covers the newer {} in the same channel: \
                     a subscriber at {} \"upgrades\" down to {} (and the graph loops); bound \
                     the range below {}, e.g. \"<{}\"",
                    d.bundle,
                    d.version,
                    d.skip_range,
                    newer.join(", "),
                    ds.iter()
                        .max_by(|a, b| {
                            let v = |d: &Downgrade| semver::Version::parse(&d.covers_version).ok();
                            v(a).cmp(&v(b))
                        })
                        .map_or("", |l| l.covers.as_str()),
                    d.bundle,
                    d.version,
                    d.version
                );
                warn(bundle, msg);
            }
            // 4. skipRange without replaces: older versions drop out of the channel.
            for e in &ch.entries {
                if !e.skip_range.is_empty() && e.replaces.is_empty() {
                    let msg = format!(
                        "{} has a skipRange {:?} but no replaces: older versions drop out of the \
                         channel and can no longer be installed with startingCSV; set replaces \
                         as well",
                        e.name, e.skip_range
                    );
                    warn(&e.name, msg);
                }
            }
        }
    }
    out.extend(super::edge_lint::lint(cat));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{prop, Bundle, Channel, ChannelEntry, Package};

    fn entry(name: &str, replaces: &str, skips: &[&str], range: &str) -> ChannelEntry {
        ChannelEntry::new(name, replaces, skips, range)
    }

    fn catalog(entries: Vec<ChannelEntry>) -> Catalog {
        let mut pkg = Package {
            name: "p".into(),
            default_channel: "c".into(),
            ..Default::default()
        };
        for e in &entries {
            let v = e.name.trim_start_matches("p.v");
            pkg.bundles.insert(
                e.name.clone(),
                Bundle {
                    name: e.name.clone(),
                    properties: vec![crate::model::Property {
                        r#type: prop::PACKAGE.into(),
                        value: format!(r#"{{"packageName":"p","version":"{v}"}}"#),
                    }],
                    ..Default::default()
                },
            );
        }
        let ch = Channel {
            name: "c".into(),
            entries,
            ..Default::default()
        };
        pkg.channels.insert("c".into(), ch);
        let mut cat = Catalog::default();
        cat.packages.insert("p".into(), pkg);
        cat
    }

    fn lints(cat: &Catalog) -> Vec<String> {
        lint(cat).into_iter().map(|d| d.message).collect()
    }

    #[test]
    fn lint_finds_upgrades_only_through_a_skipped_entry() {
        // 1.0.0 upgrades only via 1.1.0, which 2.0.0 skips: v1 takes it, classic never.
        let cat = catalog(vec![
            entry("p.v2.0.0", "", &["p.v1.1.0"], ""),
            entry("p.v1.1.0", "p.v1.0.0", &[], ""),
            entry("p.v1.0.0", "", &[], ""),
        ]);
        let l = lints(&cat);
        assert!(
            l.iter()
                .any(|m| m.starts_with("p.v1.0.0 upgrades only through p.v1.1.0")),
            "{l:?}"
        );
        // Once the skipper also replaces 1.0.0, both OLMs agree and nothing is reported.
        let cat = catalog(vec![
            entry("p.v2.0.0", "p.v1.0.0", &["p.v1.1.0"], ""),
            entry("p.v1.1.0", "p.v1.0.0", &[], ""),
            entry("p.v1.0.0", "", &[], ""),
        ]);
        assert_eq!(lints(&cat), Vec::<String>::new());
    }

    #[test]
    fn lint_finds_a_head_below_the_top_and_a_range_without_replaces() {
        let cat = catalog(vec![
            entry("p.v1.1.0", "p.v1.9.0", &[], ""),
            entry("p.v1.9.0", "", &[], ">=1.0.0 <1.9.0"),
        ]);
        let l = lints(&cat);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(l[0].contains("head p.v1.1.0 (1.1.0) is not the highest version"));
        assert!(l[1].contains("p.v1.9.0 has a skipRange"));
    }

    #[test]
    fn lint_finds_a_skip_range_covering_a_newer_version() {
        // fence-agents-remediation's shape: v0.7.0 has an open-ended range, v0.8.0 is the head.
        let cat = catalog(vec![
            entry("p.v0.8.0", "p.v0.7.0", &[], ">=0.0.1 <0.8.0"),
            entry("p.v0.7.0", "p.v0.6.0", &[], ">=0.0.1"),
            entry("p.v0.6.0", "", &[], ""),
        ]);
        let l = lints(&cat);
        let down: Vec<&String> = l
            .iter()
            .filter(|m| m.contains("covers the newer"))
            .collect();
        assert_eq!(down.len(), 1, "{l:?}");
        assert!(down[0].starts_with(
            "p.v0.7.0 (0.7.0) has skipRange \">=0.0.1\", which covers the newer p.v0.8.0 (0.8.0)"
        ));
        // Bounded below its own version, the range is no downgrade.
        let cat = catalog(vec![
            entry("p.v0.8.0", "p.v0.7.0", &[], ">=0.0.1 <0.8.0"),
            entry("p.v0.7.0", "p.v0.6.0", &[], ">=0.0.1 <0.7.0"),
            entry("p.v0.6.0", "", &[], ""),
        ]);
        assert!(!lints(&cat).iter().any(|m| m.contains("covers the newer")));
    }
}
