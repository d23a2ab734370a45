//! Which bundles of a catalog an operator entry of the configuration selects, with oc-mirror
//! v2's semantics (its filter library, catalog-filter's `mirror-config/v1alpha1`), so that the
//! same configuration selects the same bundles:
//!
//! * no `packages`: the head of every channel of every package, or with `full: true` the whole
//!   catalog, unfiltered;
//! * listed packages only; a package's listed channels only (all of them when none is listed);
//!   a listed package or channel the catalog does not have is an error naming the closest names;
//! * per channel: every entry with `full: true`; the range `>=min <=max` (the channel's, else
//!   the package's) walked along the replaces chain from the head, keeping the bundles needed
//!   for a single head even when out of range (each one a warning), and skipped bundles only in
//!   range; otherwise the head alone;
//! * an emptied channel is dropped, unless it is the default channel (an error); the default
//!   channel (the configured override, else the catalog's) must survive, or it is an error
//!   naming it;
//! * entries keep their `replaces`, `skips` and `skipRange` as they were, even when they name a
//!   pruned bundle: OLM upgrades an installed, since-pruned version through them.

use super::config::{self, Operator};
use super::MirrorError;
use crate::model::{Catalog, Channel, ChannelEntry, Package};
use crate::text::{did_you_mean, nearest};
use crate::version::masterminds::Constraint;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a filter kept.
#[derive(Debug, Default)]
pub struct Filtered {
    pub catalog: Catalog,
    /// Bundles kept, by package.
    pub kept: BTreeMap<String, BTreeSet<String>>,
    /// Out-of-range bundles kept so that a channel has one head, and other notes.
    pub warnings: Vec<String>,
    /// Why each kept bundle is kept, by package and bundle: channel head, in a version range,
    /// kept for a channel's single head, selected by `full`, added for a dependency.
    pub why: Why,
}

/// Reasons, by package and bundle.
pub type Why = BTreeMap<String, BTreeMap<String, BTreeSet<Reason>>>;

/// Why a bundle is kept.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// The head of this channel (no range, not `full`).
    Head { channel: String },
    /// Within the version range of this channel (its own, else the package's).
    InRange { range: String, channel: String },
    /// Outside the range (or not selected), kept so that this channel has one head.
    SingleHead { channel: String },
    /// `full: true`, for this channel (none: the whole catalog).
    Full { channel: Option<String> },
    /// Added for a requirement of a kept bundle (the requirement and who has it).
    Dependency { requirement: String },
}

impl Reason {
    /// The kind of reason, as the per-package summary counts it.
    pub fn kind(&self) -> &'static str {
        match self {
            Reason::Head { .. } => "head of a channel",
            Reason::InRange { .. } => "within a version range",
            Reason::SingleHead { .. } => "kept for a channel's single head",
            Reason::Full { .. } => "selected by full: true",
            Reason::Dependency { .. } => "added for a dependency",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Head { channel } => write!(f, "head of channel {channel}"),
            Reason::InRange { range, channel } => {
                write!(f, "within the version range {range} (channel {channel})")
            }
            Reason::SingleHead { channel } => {
                write!(f, "kept so that channel {channel} has one head")
            }
            Reason::Full { channel: None } => write!(f, "selected by full: true"),
            Reason::Full { channel: Some(c) } => write!(f, "selected by full: true (channel {c})"),
            Reason::Dependency { requirement } => {
                write!(f, "added for a dependency: {requirement}")
            }
        }
    }
}

impl serde::Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Records that `bundle` of `package` is kept `because`.
pub fn because(why: &mut Why, package: &str, bundle: &str, reason: Reason) {
    why.entry(package.to_string())
        .or_default()
        .entry(bundle.to_string())
        .or_default()
        .insert(reason);
}

/// Filters `catalog` as `op` says. The error names the package and channel.
pub fn filter(catalog: &Catalog, op: &Operator) -> Result<Filtered, MirrorError> {
    let mut out = Filtered::default();
    out.catalog.others = catalog
        .others
        .iter()
        .filter(|m| {
            m.package.is_empty()
                || op.packages.is_empty()
                || op.packages.iter().any(|p| p.name == m.package)
        })
        .cloned()
        .collect();
    if op.packages.is_empty() && op.full {
        for (name, p) in &catalog.packages {
            out.kept
                .insert(name.clone(), p.bundles.keys().cloned().collect());
            for b in p.bundles.keys() {
                because(&mut out.why, name, b, Reason::Full { channel: None });
            }
        }
        out.catalog.packages = catalog.packages.clone();
        return Ok(out);
    }
    let wanted: Vec<(&Package, Option<&config::Package>)> = if op.packages.is_empty() {
        catalog.packages.values().map(|p| (p, None)).collect()
    } else {
        let mut v = Vec::new();
        for cfg in &op.packages {
            match catalog.packages.get(&cfg.name) {
                Some(p) => v.push((p, Some(cfg))),
                None => {
                    let near = nearest(&cfg.name, catalog.packages.keys().map(String::as_str), 3);
                    return Err(MirrorError::from(format!(
                        "package {:?} is not in the catalog{}",
                        cfg.name,
                        did_you_mean(&near)
                    )));
                }
            }
        }
        v
    };
    for (pkg, cfg) in wanted {
        let (p, kept) = filter_package(pkg, cfg, op.full, &mut out.warnings, &mut out.why)?;
        out.kept.insert(p.name.clone(), kept);
        out.catalog.packages.insert(p.name.clone(), p);
    }
    Ok(out)
}

fn filter_package(
    pkg: &Package,
    cfg: Option<&config::Package>,
    full: bool,
    warnings: &mut Vec<String>,
    why: &mut Why,
) -> Result<(Package, BTreeSet<String>), MirrorError> {
    let listed: Vec<&config::Channel> =
        cfg.map(|c| c.channels.iter().collect()).unwrap_or_default();
    if let Some(c) = listed.iter().find(|c| !pkg.channels.contains_key(&c.name)) {
        let near = nearest(&c.name, pkg.channels.keys().map(String::as_str), 3);
        return Err(MirrorError::from(format!(
            "package {:?}: channel {:?} is not in the catalog{}",
            pkg.name,
            c.name,
            did_you_mean(&near)
        )));
    }
    let mut channels = BTreeMap::new();
    let mut kept = BTreeSet::new();
    let default = match cfg.map(|c| c.default_channel.as_str()).unwrap_or("") {
        "" => pkg.default_channel.clone(),
        d => d.to_string(),
    };
    for ch in pkg.channels.values() {
        let ch_cfg = listed.iter().find(|c| c.name == ch.name);
        if !listed.is_empty() && ch_cfg.is_none() {
            continue;
        }
        let range = ch_cfg
            .and_then(|c| config::range(&c.min_version, &c.max_version))
            .or_else(|| cfg.and_then(|c| config::range(&c.min_version, &c.max_version)));
        let where_ = || format!("package {:?} channel {:?}", pkg.name, ch.name);
        let keep: BTreeSet<String> = match (full, &range) {
            (true, Some(_)) => {
                return Err(MirrorError::from(format!(
                    "{}: full: true cannot be mixed with a version range",
                    where_()
                )))
            }
            (true, None) => {
                for e in &ch.entries {
                    let reason = Reason::Full {
                        channel: Some(ch.name.clone()),
                    };
                    because(why, &pkg.name, &e.name, reason);
                }
                ch.entries.iter().map(|e| e.name.clone()).collect()
            }
            (false, Some(r)) => {
                let c = Constraint::parse(r)
                    .map_err(|e| MirrorError::from(format!("{}: {e}", where_())))?;
                let graph =
                    Graph::new(ch).map_err(|e| MirrorError::from(format!("{}: {e}", where_())))?;
                let keep = graph.in_range(&c, pkg, &where_(), warnings);
                for name in &keep {
                    let fits = pkg
                        .bundles
                        .get(name)
                        .and_then(|b| semver::Version::parse(&b.version()).ok())
                        .is_some_and(|v| c.matches(&v));
                    let channel = ch.name.clone();
                    let reason = match fits {
                        true => Reason::InRange {
                            range: r.clone(),
                            channel,
                        },
                        false => Reason::SingleHead { channel },
                    };
                    because(why, &pkg.name, name, reason);
                }
                keep
            }
            (false, None) => {
                let graph = Graph::new(ch).map_err(|e| {
                    MirrorError::from(format!(
                        "{}: unable to filter head of channel: {e}",
                        where_()
                    ))
                })?;
                let reason = Reason::Head {
                    channel: ch.name.clone(),
                };
                because(why, &pkg.name, graph.head, reason);
                BTreeSet::from([graph.head.to_string()])
            }
        };
        if keep.is_empty() {
            if ch.name == default {
                return Err(MirrorError::from(format!(
                    "{} has version range {:?} that results in an empty channel",
                    where_(),
                    range.unwrap_or_default()
                )));
            }
            continue;
        }
        let mut ch = ch.clone();
        ch.entries.retain(|e| keep.contains(&e.name));
        kept.extend(keep);
        channels.insert(ch.name.clone(), ch);
    }
    if !default.is_empty() && !channels.contains_key(&default) {
        let configured = cfg.is_some_and(|c| !c.default_channel.is_empty());
        return Err(MirrorError::from(match configured {
            true => format!(
                "package {:?}: the default channel override {default:?} does not exist in the filtered output",
                pkg.name
            ),
            false => format!(
                "package {:?}: the default channel {default:?} was filtered out; configure a new default channel (defaultChannel) for this package",
                pkg.name
            ),
        }));
    }
    let mut p = pkg.clone();
    p.default_channel = default;
    p.channels = channels;
    p.bundles.retain(|name, _| kept.contains(name));
    if let Some(d) = &mut p.deprecations {
        d.entries.retain(|e| match e.schema.as_str() {
            crate::model::schema::BUNDLE => kept.contains(&e.name),
            crate::model::schema::CHANNEL => p.channels.contains_key(&e.name),
            _ => true,
        });
    }
    Ok((p, kept))
}

/// A channel's replaces and skips edges, checked as catalog-filter checks them: one head, no
/// cycle.
struct Graph<'a> {
    head: &'a str,
    entries: HashMap<&'a str, &'a ChannelEntry>,
}

impl<'a> Graph<'a> {
    fn new(ch: &'a Channel) -> Result<Graph<'a>, MirrorError> {
        if ch.entries.is_empty() {
            return Err("channel has no entries".into());
        }
        let mut entries = HashMap::new();
        let mut incoming: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        for e in &ch.entries {
            if entries.insert(e.name.as_str(), e).is_some() {
                return Err(MirrorError::from(format!(
                    "duplicate channel entry {:?}",
                    e.name
                )));
            }
            let targets = std::iter::once(e.replaces.as_str())
                .filter(|r| !r.is_empty())
                .chain(e.skips.iter().map(String::as_str));
            for t in targets {
                if t == e.name {
                    return Err(MirrorError::from(format!(
                        "invalid channel entry {:?}: replaces or skips itself",
                        e.name
                    )));
                }
                incoming.entry(t).or_default().insert(e.name.as_str());
            }
        }
        let heads: Vec<&str> = ch
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| incoming.get(n).is_none_or(|s| s.is_empty()))
            .collect();
        let head = match heads.as_slice() {
            [one] => *one,
            [] => return Err("no channel heads found".into()),
            many => {
                let mut names = many.to_vec();
                names.sort_unstable();
                return Err(MirrorError::from(format!(
                    "multiple channel heads found: [{}]",
                    names.join(" ")
                )));
            }
        };
        // Kahn's walk from the head: anything left with incoming edges is on a cycle.
        let mut queue = vec![head];
        while let Some(cur) = queue.pop() {
            let Some(e) = entries.get(cur) else { continue };
            let targets = std::iter::once(e.replaces.as_str())
                .filter(|r| !r.is_empty())
                .chain(e.skips.iter().map(String::as_str));
            for t in targets {
                if let Some(set) = incoming.get_mut(t) {
                    set.remove(cur);
                    if set.is_empty() {
                        incoming.remove(t);
                        queue.push(t);
                    }
                }
            }
        }
        if !incoming.is_empty() {
            return Err("detected a cycle in the upgrade graph of the channel".into());
        }
        Ok(Graph { head, entries })
    }

    /// The replaces chain from the head (names, including ones the channel does not hold).
    fn chain(&self) -> Vec<&'a str> {
        let mut out = vec![self.head];
        let mut seen = BTreeSet::from([self.head]);
        let mut cur = self.head;
        while let Some(next) = self.entries.get(cur).map(|e| e.replaces.as_str()) {
            if next.is_empty() || !seen.insert(next) {
                break;
            }
            out.push(next);
            cur = next;
        }
        out
    }

    fn skips(&self, name: &str) -> &'a [String] {
        self.entries.get(name).map_or(&[], |e| e.skips.as_slice())
    }

    /// catalog-filter's `filterByVersionRange`: counting from the tail up, each bundle on the
    /// replaces chain gets the number of in-range bundles at or below it not counted before
    /// (itself, the bundles it skips, and its replaces' count). The new head is the lowest
    /// bundle with the highest count; the walk stops at the first bundle whose count is 0.
    fn in_range(
        &self,
        c: &Constraint,
        pkg: &Package,
        where_: &str,
        warnings: &mut Vec<String>,
    ) -> BTreeSet<String> {
        let version = |name: &str| {
            pkg.bundles
                .get(name)
                .and_then(|b| semver::Version::parse(&b.version()).ok())
        };
        let fits = |name: &str| version(name).is_some_and(|v| c.matches(&v));
        let chain = self.chain();
        let mut seen = BTreeSet::new();
        let mut counts = vec![0usize; chain.len()];
        for (i, name) in chain.iter().enumerate().rev() {
            let mut count = counts.get(i + 1).copied().unwrap_or(0);
            for n in std::iter::once(*name).chain(self.skips(name).iter().map(String::as_str)) {
                if fits(n) && seen.insert(n) {
                    count += 1;
                }
            }
            counts[i] = count;
        }
        let mut head = 0;
        let mut tail = chain.len();
        let mut max = None;
        for (i, count) in counts.iter().enumerate() {
            if max.is_none_or(|m| *count >= m) {
                head = i;
                max = Some(*count);
            }
            if *count == 0 {
                tail = i;
                break;
            }
        }
        let mut keep = BTreeSet::new();
        for name in &chain[head..tail.max(head)] {
            if !fits(name) {
                warnings.push(format!(
                    "{where_}: bundle {name:?} is outside the range but kept so that the channel has one head"
                ));
            }
            keep.insert(name.to_string());
            for s in self.skips(name) {
                if fits(s) {
                    keep.insert(s.clone());
                }
            }
        }
        keep
    }
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
