//! Comparing two catalogs for the people who have installed them (`opreg diff`): packages,
//! channels and channel entries added and removed, default channels and heads that changed,
//! update edges added and removed, new downgrade hops, and, the gate, **stranded** versions.
//!
//! A version B that a subscriber to channel C may be running in OLD is stranded when NEW
//! gives it no upgrade path to NEW's head of C (and B is not that head). The path is asked of
//! [`crate::graph::resolve::resolve`] over NEW, with B as the installed bundle (as
//! `name@version` when NEW no longer has it), so "upgrades through any bundle that replaces,
//! skips or range-covers it" is [`crate::graph::EntryRule::edges_from`]'s rule and the path is
//! the one OLM would take; edges are [`crate::graph::channel_edges`]. Nothing here decides
//! whether one bundle upgrades from another.
//!
//! Module map: this file (the comparison, stranding) and [`removal`] (the removal gate:
//! channels and channel entries NEW no longer has, and comparing a fragment).

pub mod removal;

use crate::graph::resolve::{self, PackageFacts, Policy, Request, Semantics, UpgradeGraph};
use crate::graph::{channel_edges, channel_head, EdgeKind, Head, Versions};
use crate::model::{Catalog, Package};
use crate::validate::upgrade_lint::{downgrades, Downgrade};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

/// Why a version is stranded (`reason` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The package is gone from NEW.
    PackageRemoved,
    /// The channel is gone from the package in NEW.
    ChannelRemoved,
    /// No bundle of NEW's channel replaces, skips or range-covers it.
    NoUpgrade,
    /// It upgrades, but the path stops (or loops) before NEW's head.
    PathEndsBeforeHead,
    /// NEW's channel cannot be resolved (no unique head, an unusable version).
    Unresolvable,
}

/// A version installed from OLD that cannot reach NEW's head of its channel.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Stranded {
    pub package: String,
    pub channel: String,
    pub bundle: String,
    pub version: String,
    pub reason: Reason,
    /// The same, in a sentence naming what is missing.
    pub detail: String,
}

/// A channel head (or a default channel: `channel` is then "") that changed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Change {
    pub package: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub channel: String,
    pub old: String,
    pub new: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ChannelRef {
    pub package: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct EntryRef {
    pub package: String,
    pub channel: String,
    pub name: String,
}

/// An update edge in upgrade direction: a subscriber at `from` can move to `to`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct EdgeRef {
    pub package: String,
    pub channel: String,
    pub from: String,
    pub to: String,
    pub kind: &'static str,
}

/// What is in NEW and not in OLD, and the other way round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AddedRemoved<T> {
    pub added: Vec<T>,
    pub removed: Vec<T>,
}

impl<T: Ord + Clone> AddedRemoved<T> {
    fn of(old: &BTreeSet<T>, new: &BTreeSet<T>) -> Self {
        AddedRemoved {
            added: new.difference(old).cloned().collect(),
            removed: old.difference(new).cloned().collect(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// The whole comparison. JSON keys are stable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub semantics: Semantics,
    pub stranded: Vec<Stranded>,
    pub heads: Vec<Change>,
    pub default_channels: Vec<Change>,
    pub packages: AddedRemoved<String>,
    pub channels: AddedRemoved<ChannelRef>,
    pub bundles: AddedRemoved<EntryRef>,
    pub edges: AddedRemoved<EdgeRef>,
    /// Downgrade hops ([`downgrades`]) in NEW that OLD did not have.
    pub new_downgrades: Vec<Downgrade>,
    /// Every channel and channel entry of OLD that NEW lacks ([`removal::removals`]).
    pub removals: Vec<removal::Removal>,
}

impl Report {
    /// The removals the gate fails on: those outside the allowed channels.
    pub fn blocking_removals(&self) -> impl Iterator<Item = &removal::Removal> {
        self.removals.iter().filter(|r| !r.allowed)
    }
}

/// How to compare.
#[derive(Clone, Debug)]
pub struct Options {
    /// Whose upgrade rules decide stranding.
    pub semantics: Semantics,
    /// NEW holds only some packages: only the packages NEW has are compared.
    pub fragment: bool,
    /// Channels whose removals are allowed ([`removal::DEFAULT_ALLOW`] by default).
    pub allow_removal: regex::Regex,
    /// The removal gate is on (`--fail-on-removal`): a removal it allows strands nothing, so
    /// the versions an allowed channel or entry removal leaves behind are not reported as
    /// stranded (pre-release channels may be pruned).
    pub removal_gate: bool,
}

/// Compares OLD with NEW as `opts` says (a fragment: only NEW's packages of OLD).
pub fn diff(old: &Catalog, new: &Catalog, opts: &Options) -> Report {
    let cut;
    let old = if opts.fragment {
        cut = removal::fragment_of(old, new);
        &cut
    } else {
        old
    };
    let semantics = opts.semantics;
    let names = |c: &Catalog| c.packages.keys().cloned().collect::<BTreeSet<_>>();
    let chans = |c: &Catalog| {
        c.packages
            .values()
            .flat_map(|p| {
                p.channels.keys().map(|n| ChannelRef {
                    package: p.name.clone(),
                    name: n.clone(),
                })
            })
            .collect::<BTreeSet<_>>()
    };
    let entries = |c: &Catalog| {
        c.packages
            .values()
            .flat_map(|p| {
                p.channels.values().flat_map(|ch| {
                    ch.entries.iter().map(|e| EntryRef {
                        package: p.name.clone(),
                        channel: ch.name.clone(),
                        name: e.name.clone(),
                    })
                })
            })
            .collect::<BTreeSet<_>>()
    };
    let mut heads = Vec::new();
    let mut default_channels = Vec::new();
    for (name, op) in &old.packages {
        let Some(np) = new.packages.get(name) else {
            continue;
        };
        if op.default_channel != np.default_channel {
            default_channels.push(Change {
                package: name.clone(),
                channel: String::new(),
                old: op.default_channel.clone(),
                new: np.default_channel.clone(),
            });
        }
        for (cn, och) in &op.channels {
            let Some(nch) = np.channels.get(cn) else {
                continue;
            };
            let (oh, nh) = (head_name(channel_head(och)), head_name(channel_head(nch)));
            if oh != nh {
                heads.push(Change {
                    package: name.clone(),
                    channel: cn.clone(),
                    old: oh,
                    new: nh,
                });
            }
        }
    }
    let old_down: BTreeSet<Downgrade> = all_downgrades(old).into_iter().collect();
    let new_downgrades = all_downgrades(new)
        .into_iter()
        .filter(|d| !old_down.contains(d))
        .collect();
    let removals = removal::removals(old, new, &opts.allow_removal);
    let mut stranded = stranded(old, new, semantics);
    if opts.removal_gate {
        stranded.retain(|s| !removal::allowed_removal_covers(&removals, s));
    }
    Report {
        semantics,
        stranded,
        heads,
        default_channels,
        packages: AddedRemoved::of(&names(old), &names(new)),
        channels: AddedRemoved::of(&chans(old), &chans(new)),
        bundles: AddedRemoved::of(&entries(old), &entries(new)),
        edges: AddedRemoved::of(&edges(old), &edges(new)),
        new_downgrades,
        removals,
    }
}

fn head_name(h: Head<'_>) -> String {
    match h {
        Head::One(h) => h.to_string(),
        Head::None => String::new(),
        Head::Many(v) => v.join(","),
    }
}

fn all_downgrades(c: &Catalog) -> Vec<Downgrade> {
    c.packages
        .values()
        .flat_map(|p| {
            let versions = Versions::of(p);
            p.channels
                .values()
                .flat_map(|ch| downgrades(&p.name, &versions, ch))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn edges(c: &Catalog) -> BTreeSet<EdgeRef> {
    let mut out = BTreeSet::new();
    for p in c.packages.values() {
        let versions = Versions::of(p);
        for ch in p.channels.values() {
            for e in channel_edges(&versions, ch) {
                out.insert(EdgeRef {
                    package: p.name.clone(),
                    channel: ch.name.clone(),
                    from: e.to,
                    to: e.from,
                    kind: e.kind.as_str(),
                });
            }
        }
    }
    out
}

/// Every version of every channel of OLD that has no path to NEW's head of that channel.
pub fn stranded(old: &Catalog, new: &Catalog, semantics: Semantics) -> Vec<Stranded> {
    let graph = Cached::new(new);
    let mut out = Vec::new();
    for op in old.packages.values() {
        let np = new.packages.get(&op.name);
        let versions = Versions::of(op);
        for och in op.channels.values() {
            let nch = np.and_then(|p| p.channels.get(&och.name));
            // Oldest first: their paths pass through the newer entries, whose outcomes are
            // then known without resolving again.
            let mut entries: Vec<&crate::model::ChannelEntry> = och.entries.iter().collect();
            entries.sort_by(
                |a, b| match (versions.get(&a.name), versions.get(&b.name)) {
                    (Some(x), Some(y)) => x.cmp_precedence(y),
                    _ => a.name.cmp(&b.name),
                },
            );
            let mut known: HashMap<String, Outcome> = HashMap::new();
            for e in entries {
                let version = op
                    .bundles
                    .get(&e.name)
                    .map(|b| b.version())
                    .unwrap_or_default();
                let mut strand = |reason, detail: String| {
                    out.push(Stranded {
                        package: op.name.clone(),
                        channel: och.name.clone(),
                        bundle: e.name.clone(),
                        version: version.clone(),
                        reason,
                        detail,
                    })
                };
                let (Some(np), Some(nch)) = (np, nch) else {
                    if np.is_none() {
                        strand(
                            Reason::PackageRemoved,
                            format!("package {} was removed", op.name),
                        );
                    } else {
                        strand(
                            Reason::ChannelRemoved,
                            format!("channel {} of package {} was removed", och.name, op.name),
                        );
                    }
                    continue;
                };
                let Head::One(head) = channel_head(nch) else {
                    strand(
                        Reason::Unresolvable,
                        format!("channel {} has no unique head in NEW", och.name),
                    );
                    continue;
                };
                if e.name == head {
                    continue;
                }
                let outcome = match known.get(&e.name) {
                    Some(o) => o.clone(),
                    None => path_to_head(
                        &graph, np, &och.name, &e.name, &version, head, semantics, &mut known,
                    ),
                };
                if let Some((reason, detail)) = outcome {
                    strand(reason, detail);
                }
            }
        }
    }
    out.sort();
    out
}

/// `None` when a bundle reaches the head; else why not.
type Outcome = Option<(Reason, String)>;

fn no_upgrade(channel: &str, bundle: &str, version: &str) -> (Reason, String) {
    (
        Reason::NoUpgrade,
        format!(
            "no bundle of channel {channel} replaces, skips or has a skipRange covering \
             {bundle} ({version}): add it to the replaces or skips of a bundle in the channel, \
             or widen a skipRange"
        ),
    )
}

/// Whether the installed `bundle` reaches `head`. Each bundle on its path gets its own
/// outcome in `known` (a path from a bundle is the rest of any path through it, since each
/// hop depends only on the bundle it starts from), so a channel is resolved in about as many
/// hops as it has entries.
#[allow(clippy::too_many_arguments)]
fn path_to_head(
    g: &Cached<'_>,
    np: &Package,
    channel: &str,
    bundle: &str,
    version: &str,
    head: &str,
    semantics: Semantics,
    known: &mut HashMap<String, Outcome>,
) -> Outcome {
    let from = if np.bundles.contains_key(bundle) || version.is_empty() {
        bundle.to_string()
    } else {
        format!("{bundle}@{version}")
    };
    let req = Request {
        package: np.name.clone(),
        from,
        channels: vec![channel.to_string()],
        version_range: None,
        policy: Policy::CatalogProvided,
        semantics,
        openshift_version: None,
    };
    let r = match resolve::resolve(g, &req) {
        Ok(r) => r,
        Err(e) => return Some((Reason::Unresolvable, e.to_string())),
    };
    let at_head = r.path.iter().position(|s| s.name == head);
    let looped = r.rejected.iter().any(|x| x.reason == "already-on-path");
    for (i, s) in r.path.iter().enumerate() {
        let o = match at_head {
            Some(h) if i <= h => None,
            _ if looped => continue,
            _ if i + 1 == r.path.len() => Some(no_upgrade(channel, &s.name, &s.version)),
            _ => r.path.last().map(|last| {
                (
                    Reason::PathEndsBeforeHead,
                    format!(
                        "its upgrade path ends at {} ({}), not at the head {head}",
                        last.name, last.version
                    ),
                )
            }),
        };
        known.entry(s.name.clone()).or_insert(o);
    }
    match r.path.last() {
        _ if at_head.is_some() => None,
        None => Some(no_upgrade(channel, bundle, version)),
        Some(last) => Some((
            Reason::PathEndsBeforeHead,
            format!(
                "its upgrade path ends at {} ({}), not at the head {head}",
                last.name, last.version
            ),
        )),
    }
}

/// NEW as an [`UpgradeGraph`], with each package's facts and each channel's chain computed
/// once (a diff resolves from every entry of every channel).
struct Cached<'a> {
    cat: &'a Catalog,
    facts: RefCell<HashMap<String, Option<PackageFacts>>>,
    chains: RefCell<HashMap<(String, String), Vec<String>>>,
}

impl<'a> Cached<'a> {
    fn new(cat: &'a Catalog) -> Self {
        Cached {
            cat,
            facts: RefCell::default(),
            chains: RefCell::default(),
        }
    }
}

impl UpgradeGraph for Cached<'_> {
    fn package_facts(&self, package: &str) -> anyhow::Result<Option<PackageFacts>> {
        if let Some(f) = self.facts.borrow().get(package) {
            return Ok(f.clone());
        }
        let f = self.cat.package_facts(package)?;
        self.facts.borrow_mut().insert(package.into(), f.clone());
        Ok(f)
    }
    fn package_names(&self) -> anyhow::Result<Vec<String>> {
        self.cat.package_names()
    }
    fn classic_chain(&self, package: &str, channel: &str) -> anyhow::Result<Vec<String>> {
        let key = (package.to_string(), channel.to_string());
        if let Some(c) = self.chains.borrow().get(&key) {
            return Ok(c.clone());
        }
        let c = self.cat.classic_chain(package, channel)?;
        self.chains.borrow_mut().insert(key, c.clone());
        Ok(c)
    }
    fn upgrades_from(
        &self,
        package: &str,
        channel: &str,
        installed: &resolve::Installed,
    ) -> anyhow::Result<Vec<(String, EdgeKind)>> {
        self.cat.upgrades_from(package, channel, installed)
    }
}
