//! The update graph: the one place that says which bundle can be installed over which.
//!
//! Everything that needs an update edge asks this module: validation (heads, cycles, stranded
//! bundles), the store (which materializes every edge into its `edge` table), the server
//! (through those stored edges), and the upgrade resolver. The rule itself is
//! [`EntryRule::edges_from`]: an entry upgrades from X when it `replaces` X, lists X in `skips`,
//! or has a `skipRange` containing X's version. [`channel_edges`] enumerates that same rule over
//! a channel.
//!
//! The range grammars live in [`blang`] (skipRange, classic and v1) and [`masterminds`]
//! (OLM v1 version constraints).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the update rule ([`EntryRule`]), channel edges, heads, the classic chain |
//! | [`resolve`] | upgrade resolution under classic OLM and OLM v1 |

pub mod resolve;

use crate::model::{Channel, ChannelEntry, Package};
use crate::version::blang;
use semver::Version;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// How an update edge is declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdgeKind {
    Replaces,
    Skips,
    SkipRange,
}

impl EdgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Replaces => "replaces",
            EdgeKind::Skips => "skips",
            EdgeKind::SkipRange => "skipRange",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "replaces" => Some(EdgeKind::Replaces),
            "skips" => Some(EdgeKind::Skips),
            "skipRange" => Some(EdgeKind::SkipRange),
            _ => None,
        }
    }
}

/// An update edge in a channel: `from` (the newer entry) can be installed over `to`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

/// Strictly parsed versions of a package's bundles (bundles with no valid version are absent).
#[derive(Clone, Debug, Default)]
pub struct Versions(pub BTreeMap<String, Version>);

impl Versions {
    pub fn of(pkg: &Package) -> Self {
        Versions(
            pkg.bundles
                .iter()
                .filter_map(|(n, b)| {
                    blang::parse_version(&b.version())
                        .ok()
                        .map(|v| (n.clone(), v))
                })
                .collect(),
        )
    }
    pub fn get(&self, name: &str) -> Option<&Version> {
        self.0.get(name)
    }
}

/// A channel entry with its skipRange parsed once. An unparsable skipRange is ignored, as both
/// OLMs ignore it; validation reports it separately.
pub struct EntryRule<'a> {
    pub entry: &'a ChannelEntry,
    pub range: Option<blang::Range>,
}

impl<'a> EntryRule<'a> {
    pub fn new(entry: &'a ChannelEntry) -> Self {
        let range = if entry.skip_range.is_empty() {
            None
        } else {
            blang::Range::parse(&entry.skip_range).ok()
        };
        EntryRule { entry, range }
    }

    /// THE update rule: the kinds of edge that let this entry be installed over a bundle named
    /// `name` with version `version` (unknown for synthetic names).
    pub fn edges_from(&self, name: &str, version: Option<&Version>) -> Vec<EdgeKind> {
        let mut kinds = Vec::new();
        if name.is_empty() || name == self.entry.name {
            return kinds;
        }
        if self.entry.replaces == name {
            kinds.push(EdgeKind::Replaces);
        }
        if self.entry.skips.iter().any(|s| s == name) {
            kinds.push(EdgeKind::Skips);
        }
        if let (Some(r), Some(v)) = (&self.range, version) {
            if r.matches(v) {
                kinds.push(EdgeKind::SkipRange);
            }
        }
        kinds
    }
}

/// Every update edge of a channel: the rule of [`EntryRule::edges_from`] applied to each entry
/// against every name it could point at (its replaces, its skips, every bundle of the package).
pub fn channel_edges(versions: &Versions, ch: &Channel) -> Vec<Edge> {
    let mut out = Vec::new();
    for e in &ch.entries {
        let rule = EntryRule::new(e);
        let mut targets: BTreeSet<&str> = BTreeSet::new();
        targets.insert(&e.replaces);
        targets.extend(e.skips.iter().map(String::as_str));
        if rule.range.is_some() {
            targets.extend(versions.0.keys().map(String::as_str));
        }
        for t in targets {
            for kind in rule.edges_from(t, versions.get(t)) {
                out.push(Edge {
                    from: e.name.clone(),
                    to: t.to_string(),
                    kind,
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// GetBundleThatReplaces' answer for each name a channel's entries replace or list in `skips`
/// (a `skipRange` does not count): of those entries, the one closest to the head, then by
/// name. `edges` are the channel's [`channel_edges`] and `position` each entry's index in its
/// [`channel_order`]; the map goes from the replaced name to the replacing entry.
pub fn replacements<'a>(
    edges: &'a [Edge],
    position: &HashMap<&str, usize>,
) -> BTreeMap<&'a str, &'a str> {
    let rank = |n: &'a str| (position.get(n).copied().unwrap_or(usize::MAX), n);
    let mut out: BTreeMap<&'a str, &'a str> = BTreeMap::new();
    for e in edges.iter().filter(|e| e.kind != EdgeKind::SkipRange) {
        let by = out.entry(&e.to).or_insert(&e.from);
        if rank(&e.from) < rank(by) {
            *by = &e.from;
        }
    }
    out
}

/// The head of a channel: the one entry that nothing replaces or skips.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head<'a> {
    One(&'a str),
    None,
    Many(Vec<&'a str>),
}

pub fn channel_head(ch: &Channel) -> Head<'_> {
    let mut incoming: HashSet<&str> = HashSet::new();
    for e in &ch.entries {
        if !e.replaces.is_empty() {
            incoming.insert(&e.replaces);
        }
        incoming.extend(e.skips.iter().map(String::as_str));
    }
    let mut heads: Vec<&str> = ch
        .entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !incoming.contains(n))
        .collect();
    heads.sort();
    heads.dedup();
    match heads.len() {
        0 => Head::None,
        1 => Head::One(heads[0]),
        _ => Head::Many(heads),
    }
}

/// Result of walking a channel's replaces chain from its head (upstream's FBC validation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walk {
    pub chain: Vec<String>,
    /// The loop, starting and ending at the re-entered entry.
    pub cycle: Option<Vec<String>>,
    /// Entries neither on the chain nor skipped, sorted.
    pub stranded: Vec<String>,
}

/// An iterator over a `replaces` chain: yields `start`, then whatever `step` says the last item
/// replaces, until `step` returns `None` or an item comes round again (a cycle: the walk stops
/// and [`ReplacesWalk::repeated`] names the item that closed it). Every reader and rule that
/// walks `replaces` from a head walks it with this.
pub struct ReplacesWalk<T, F> {
    next: Option<T>,
    seen: HashSet<T>,
    step: F,
    /// The item met a second time, when the walk ended on a cycle.
    pub repeated: Option<T>,
}

/// Walks from `start` (nothing when `None`) with `step` (see [`ReplacesWalk`]).
pub fn walk_replaces<T, F>(start: Option<T>, step: F) -> ReplacesWalk<T, F>
where
    T: Clone + Eq + std::hash::Hash,
    F: FnMut(&T) -> Option<T>,
{
    ReplacesWalk {
        next: start,
        seen: HashSet::new(),
        step,
        repeated: None,
    }
}

impl<T, F> Iterator for ReplacesWalk<T, F>
where
    T: Clone + Eq + std::hash::Hash,
    F: FnMut(&T) -> Option<T>,
{
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let cur = self.next.take()?;
        if !self.seen.insert(cur.clone()) {
            self.repeated = Some(cur);
            return None;
        }
        self.next = (self.step)(&cur);
        Some(cur)
    }
}

fn by_name(ch: &Channel) -> HashMap<&str, &ChannelEntry> {
    ch.entries.iter().map(|e| (e.name.as_str(), e)).collect()
}

fn skipped(ch: &Channel) -> HashSet<&str> {
    ch.entries
        .iter()
        .flat_map(|e| e.skips.iter().map(String::as_str))
        .collect()
}

/// Walks `replaces` from `head`, stopping at a skipped name or a name outside the channel.
pub fn replaces_walk(ch: &Channel, head: &str) -> Walk {
    let by_name = by_name(ch);
    let skipped = skipped(ch);
    let mut it = walk_replaces(Some(head), |cur: &&str| {
        let next = by_name.get(cur).map_or("", |e| e.replaces.as_str());
        (!next.is_empty() && !skipped.contains(next) && by_name.contains_key(next)).then_some(next)
    });
    let mut walk = Walk {
        chain: it.by_ref().map(str::to_string).collect(),
        ..Walk::default()
    };
    if let Some(again) = it.repeated {
        let i = walk.chain.iter().position(|n| n == again).unwrap_or(0);
        let mut cyc = walk.chain[i..].to_vec();
        cyc.push(again.to_string());
        walk.cycle = Some(cyc);
    }
    let on_chain: HashSet<&str> = walk.chain.iter().map(String::as_str).collect();
    let mut stranded: Vec<String> = ch
        .entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !on_chain.contains(n) && !skipped.contains(n))
        .map(str::to_string)
        .collect();
    stranded.sort();
    stranded.dedup();
    walk.stranded = stranded;
    walk
}

/// The replaces chain from the channel's unique head (skipped entries included), as far as it
/// stays inside the channel; empty when the channel has no unique head.
fn head_chain(ch: &Channel) -> Vec<&str> {
    let Head::One(head) = channel_head(ch) else {
        return Vec::new();
    };
    let by_name = by_name(ch);
    walk_replaces(Some(head), |n: &&str| {
        by_name
            .get(n)
            .map(|e| e.replaces.as_str())
            .filter(|r| by_name.contains_key(r))
    })
    .collect()
}

/// Classic OLM's ordered chain: walk `replaces` from the head, leaving out skipped entries
/// (they can never be installed as targets). Entries the walk does not reach are left out too.
pub fn classic_chain(ch: &Channel) -> Vec<&str> {
    let skipped = skipped(ch);
    head_chain(ch)
        .into_iter()
        .filter(|n| !skipped.contains(n))
        .collect()
}

/// A total order of a channel's entries by distance from the head: the replaces walk from the
/// head first (skipped entries included), then any other entry by name. "Closest to the head"
/// everywhere in opreg means "lowest position" here.
pub fn channel_order(ch: &Channel) -> Vec<&str> {
    let mut out = head_chain(ch);
    let seen: HashSet<&str> = out.iter().copied().collect();
    let mut rest: Vec<&str> = ch
        .entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !seen.contains(n))
        .collect();
    rest.sort();
    rest.dedup();
    out.extend(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, replaces: &str, skips: &[&str], range: &str) -> ChannelEntry {
        ChannelEntry::new(name, replaces, skips, range)
    }

    fn etcd_alpha() -> Channel {
        Channel {
            name: "alpha".into(),
            entries: vec![
                entry(
                    "etcdoperator.v0.9.2",
                    "etcdoperator.v0.9.0",
                    &["etcdoperator.v0.9.1"],
                    "< 0.6.0",
                ),
                entry("etcdoperator.v0.9.0", "etcdoperator.v0.6.1", &[], ""),
                entry("etcdoperator.v0.6.1", "", &[], ""),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn head_and_walk_of_etcd_alpha() {
        let ch = etcd_alpha();
        assert_eq!(channel_head(&ch), Head::One("etcdoperator.v0.9.2"));
        let w = replaces_walk(&ch, "etcdoperator.v0.9.2");
        assert_eq!(w.chain.len(), 3);
        assert!(w.cycle.is_none() && w.stranded.is_empty());
        assert_eq!(
            classic_chain(&ch),
            vec![
                "etcdoperator.v0.9.2",
                "etcdoperator.v0.9.0",
                "etcdoperator.v0.6.1"
            ]
        );
    }

    #[test]
    fn edges_include_synthetic_skip_and_range() {
        let ch = etcd_alpha();
        let mut v = Versions::default();
        v.0.insert("old".into(), Version::parse("0.5.0").unwrap());
        v.0.insert(
            "etcdoperator.v0.6.1".into(),
            Version::parse("0.6.1").unwrap(),
        );
        let edges = channel_edges(&v, &ch);
        let has = |f: &str, t: &str, k| {
            edges
                .iter()
                .any(|e| e.from == f && e.to == t && e.kind == k)
        };
        assert!(has(
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.1",
            EdgeKind::Skips
        ));
        assert!(has(
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.0",
            EdgeKind::Replaces
        ));
        assert!(has("etcdoperator.v0.9.2", "old", EdgeKind::SkipRange));
        assert!(!has(
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.6.1",
            EdgeKind::SkipRange
        ));
        assert_eq!(edges.len(), 4);
    }

    #[test]
    fn cycle_and_stranded_are_found() {
        let ch = Channel {
            name: "c".into(),
            entries: vec![
                entry("a", "b", &[], ""),
                entry("b", "c", &[], ""),
                entry("c", "b", &[], ""),
                entry("x", "", &["y"], ""),
            ],
            ..Default::default()
        };
        // x is a second head
        assert_eq!(channel_head(&ch), Head::Many(vec!["a", "x"]));
        let w = replaces_walk(&ch, "a");
        assert_eq!(
            w.cycle,
            Some(vec!["b".to_string(), "c".to_string(), "b".to_string()])
        );
        assert_eq!(w.stranded, vec!["x".to_string()]);
    }

    #[test]
    fn replacement_is_the_replacing_entry_closest_to_the_head() {
        // a replaces b, b replaces c; both skip x; a's range covers "old".
        let ch = Channel {
            name: "c".into(),
            entries: vec![
                entry("c", "", &[], ""),
                entry("b", "c", &["x"], ""),
                entry("a", "b", &["x"], "< 1.0.0"),
            ],
            ..Default::default()
        };
        let mut v = Versions::default();
        v.0.insert("old".into(), Version::parse("0.5.0").unwrap());
        let edges = channel_edges(&v, &ch);
        assert!(edges.iter().any(|e| e.to == "old"));
        let order = channel_order(&ch);
        let position = order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let got: Vec<(&str, &str)> = replacements(&edges, &position).into_iter().collect();
        // x: a is closer to the head than b; "old" only by skipRange, which does not count.
        assert_eq!(got, vec![("b", "a"), ("c", "b"), ("x", "a")]);
    }
}
