//! Drawing a package's update graph as Mermaid or Graphviz DOT (`opreg graph`).
//!
//! This module owns the drawing only: the layout here, the Mermaid and DOT text in `write.rs`.
//! The edges come from [`crate::graph::channel_edges`] (the one update rule), heads from
//! [`crate::graph::channel_head`], and the `--from` paths from [`crate::graph::resolve`];
//! nothing here decides whether one bundle upgrades from another.
//!
//! One subgraph per channel, the default channel first (its title says so). Inside it: one node
//! per channel entry (the head and deprecated bundles marked), a dashed node for every edge
//! target that is not a bundle of the package (a synthetic skip target, or a missing replaces
//! tail), and a dotted node for a bundle of the package that a `replaces` or `skips` reaches
//! but that is not in the channel. Edges point in upgrade direction, from the bundle installed
//! to the one that can replace it (opm's direction, older → newer), styled by kind: `replaces`
//! solid, `skips` dashed. A skipRange is drawn once: a bracket node labelled with the range and
//! the number of bundles it covers, with one dotted edge to its entry (drawing an edge to every
//! covered bundle made real packages unreadable: 1,211 edges for 49 bundles). `--since` leaves
//! out bundles below a version. With `--from`, the classic and OLM v1 upgrade paths from that
//! bundle are highlighted (a hop through a skipRange then gets its own edge).
//!
//! One more form, [`opm_channels`]: opm's own channel graph of a whole catalog, as
//! `opm alpha render-template -o mermaid` writes it (`opreg render-template -o mermaid`), laid
//! out in `opm.rs` by opm's rules rather than the ones above.

mod opm;
mod write;

use crate::graph::resolve::{self, Resolution, UpgradeGraph};
use crate::graph::{self, EdgeKind, Head, Versions};
use crate::model::{Catalog, Package};
use std::collections::BTreeMap;

/// Why a graph cannot be drawn (no such package or channel, a version that does not parse, no
/// path to draw): one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(String);

impl From<String> for DrawError {
    fn from(why: String) -> Self {
        DrawError(why)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Mermaid,
    Dot,
}

/// GitHub renders no Mermaid diagram longer than this.
pub const MERMAID_LIMIT: usize = 50_000;

/// What to draw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options<'a> {
    /// Only this channel.
    pub channel: Option<&'a str>,
    /// Only bundles at or above this version.
    pub since: Option<&'a str>,
    /// Highlight the upgrade paths from this bundle.
    pub from: Option<&'a str>,
}

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeKind {
    /// An entry of the channel.
    Entry,
    /// A bundle of the package that is not in this channel.
    Outside,
    /// A name that is no bundle of the package.
    Synthetic,
    /// The bracket of one entry's skipRange.
    Range,
}

struct Node {
    id: String,
    name: String,
    kind: NodeKind,
    version: String,
    head: bool,
    deprecated: bool,
    installed: bool,
}

/// Which `--from` paths an edge lies on.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct OnPath {
    classic: bool,
    v1: bool,
}

struct DrawnEdge {
    from: String,
    to: String,
    label: String,
    kind: Option<EdgeKind>,
    path: OnPath,
}

struct Cluster {
    channel: String,
    default: bool,
    nodes: Vec<Node>,
    edges: Vec<DrawnEdge>,
}

/// The drawing of one package (all channels or one), as text in `format`.
pub fn draw(
    cat: &Catalog,
    package: &str,
    format: Format,
    opts: &Options,
) -> Result<Drawing, DrawError> {
    let (channel, from) = (opts.channel, opts.from);
    let mut notes = Vec::new();
    let since = opts
        .since
        .map(|v| {
            crate::version::blang::parse_tolerant(v)
                .map_err(|e| DrawError::from(format!("--since {v:?} is not a version: {e}")))
        })
        .transpose()?;
    let pkg = cat.packages.get(package).ok_or_else(|| {
        let near = crate::text::nearest(package, cat.packages.keys().map(String::as_str), 3);
        format!(
            "no package {package:?} in the catalog{}",
            crate::text::did_you_mean(&near)
        )
    })?;
    if let Some(c) = channel {
        if !pkg.channels.contains_key(c) {
            let near = crate::text::nearest(c, pkg.channels.keys().map(String::as_str), 3);
            return Err(DrawError::from(format!(
                "package {package:?} has no channel {c:?}{}",
                crate::text::did_you_mean(&near)
            )));
        }
    }
    if let (Some(s), Some(v)) = (&since, opts.since) {
        let versions = Versions::of(pkg);
        let newest = pkg
            .bundles
            .keys()
            .filter_map(|n| versions.get(n))
            .max_by(|a, b| a.cmp_precedence(b));
        if newest.is_none_or(|n| n.cmp_precedence(s).is_lt()) {
            return Err(DrawError::from(format!(
                "--since {v}: no bundle of package {package:?} is that new{}",
                newest
                    .map(|n| format!(" (the newest is {n})"))
                    .unwrap_or_default()
            )));
        }
    }
    let paths = match from {
        Some(f) => Some(resolve_paths(cat, pkg, channel, f, &mut notes)?),
        None => None,
    };
    let installed = paths
        .as_ref()
        .and_then(|(c, v)| c.as_ref().or(v.as_ref()))
        .map(|r| r.installed.name.clone());
    let clusters = layout(
        pkg,
        channel,
        since.as_ref(),
        paths.as_ref(),
        installed.as_deref(),
    );
    let text = match format {
        Format::Mermaid => write::mermaid(pkg, &clusters),
        Format::Dot => write::dot(pkg, &clusters),
    };
    Ok(Drawing { text, notes })
}

/// Every channel of `cat` as the Mermaid graph `opm alpha render-template -o mermaid` writes,
/// byte for byte (see `opm.rs`). `Err` when a bundle's version cannot be read, as opm's.
pub fn opm_channels(cat: &Catalog) -> Result<Drawing, DrawError> {
    let mut notes = Vec::new();
    let g = opm::layout(cat, &mut notes)?;
    Ok(Drawing {
        text: write::opm_mermaid(&g),
        notes,
    })
}

/// A drawn graph, and what the user should know about it (a path that could not be
/// resolved, or that ends with an error), one line each.
pub struct Drawing {
    pub text: String,
    pub notes: Vec<Note>,
}

/// A line for the user beside the drawing.
pub enum Note {
    /// Something did not work out (a path that could not be resolved).
    Warning(String),
    /// Worth knowing (a path that ends with an error).
    Status(String),
}

/// Classic and v1 resolutions from `from`. One of them failing is reported as a warning; both
/// failing is an error.
fn resolve_paths(
    cat: &Catalog,
    pkg: &Package,
    channel: Option<&str>,
    from: &str,
    notes: &mut Vec<Note>,
) -> Result<(Option<Resolution>, Option<Resolution>), DrawError> {
    let channels: Vec<String> = channel.map(|c| vec![c.to_string()]).unwrap_or_default();
    let run = |semantics: resolve::Semantics| {
        let req = resolve::Request {
            package: pkg.name.clone(),
            from: from.to_string(),
            channels: channels.clone(),
            version_range: None,
            policy: resolve::Policy::CatalogProvided,
            semantics,
            openshift_version: None,
        };
        resolve::resolve(cat as &dyn UpgradeGraph, &req)
    };
    let (classic, v1) = (
        run(resolve::Semantics::Classic),
        run(resolve::Semantics::V1),
    );
    match (classic, v1) {
        (Err(c), Err(v)) => Err(DrawError::from(if c.to_string() == v.to_string() {
            c.to_string()
        } else {
            format!("classic: {c}; v1: {v}")
        })),
        (c, v) => {
            if let Err(e) = &c {
                notes.push(Note::Warning(format!("no classic path from {from:?}: {e}")));
            }
            if let Err(e) = &v {
                notes.push(Note::Warning(format!("no OLM v1 path from {from:?}: {e}")));
            }
            for (name, r) in [("classic", &c), ("OLM v1", &v)] {
                if let Ok(Resolution { error: Some(e), .. }) = r {
                    notes.push(Note::Status(format!(
                        "note: {name} path ends with an error: {e}"
                    )));
                }
            }
            Ok((c.ok(), v.ok()))
        }
    }
}

fn layout(
    pkg: &Package,
    only: Option<&str>,
    since: Option<&semver::Version>,
    paths: Option<&(Option<Resolution>, Option<Resolution>)>,
    installed: Option<&str>,
) -> Vec<Cluster> {
    let versions = Versions::of(pkg);
    // Below --since: left out, with every edge that touches it.
    let dropped = |name: &str| {
        since.is_some_and(|s| {
            versions
                .get(name)
                .is_some_and(|v| v.cmp_precedence(s).is_lt())
        })
    };
    let mut channels: Vec<&crate::model::Channel> = pkg
        .channels
        .values()
        .filter(|c| only.is_none_or(|o| o == c.name))
        .collect();
    channels.sort_by_key(|c| (c.name != pkg.default_channel, &c.name));
    let mut out = Vec::new();
    for (ci, ch) in channels.into_iter().enumerate() {
        let head = match graph::channel_head(ch) {
            Head::One(h) => Some(h),
            _ => None,
        };
        let mut ids: BTreeMap<String, String> = BTreeMap::new();
        let mut nodes = Vec::new();
        let add = |ids: &mut BTreeMap<String, String>,
                   name: &str,
                   kind: NodeKind,
                   nodes: &mut Vec<Node>| {
            if ids.contains_key(name) {
                return;
            }
            let id = format!("c{ci}n{}", ids.len());
            ids.insert(name.to_string(), id.clone());
            nodes.push(Node {
                id,
                name: name.to_string(),
                kind,
                version: pkg
                    .bundles
                    .get(name)
                    .map(|b| b.version())
                    .unwrap_or_default(),
                head: kind == NodeKind::Entry && head == Some(name),
                deprecated: kind != NodeKind::Synthetic && pkg.bundle_deprecation(name).is_some(),
                installed: installed == Some(name),
            });
        };
        for e in ch.entries.iter().filter(|e| !dropped(&e.name)) {
            add(&mut ids, &e.name, NodeKind::Entry, &mut nodes);
        }
        let edges: Vec<graph::Edge> = graph::channel_edges(&versions, ch)
            .into_iter()
            .filter(|e| !dropped(&e.from) && !dropped(&e.to))
            .collect();
        // replaces and skips: one edge each. skipRange: one bracket per entry.
        let mut covered: BTreeMap<&str, usize> = BTreeMap::new();
        let mut drawn: Vec<DrawnEdge> = Vec::new();
        for e in &edges {
            if e.kind == EdgeKind::SkipRange {
                *covered.entry(e.from.as_str()).or_default() += 1;
                continue;
            }
            let kind = if pkg.bundles.contains_key(&e.to) {
                NodeKind::Outside
            } else {
                NodeKind::Synthetic
            };
            add(&mut ids, &e.to, kind, &mut nodes);
            drawn.push(DrawnEdge {
                from: ids[&e.to].clone(),
                to: ids[&e.from].clone(),
                label: e.kind.as_str().to_string(),
                kind: Some(e.kind),
                path: OnPath::default(),
            });
        }
        for e in &ch.entries {
            let Some(n) = covered.get(e.name.as_str()) else {
                continue;
            };
            let bracket = format!("skipRange {}", e.skip_range);
            let id = format!("c{ci}r{}", ids.len());
            ids.insert(format!("\0range {}", e.name), id.clone());
            nodes.push(Node {
                id: id.clone(),
                name: bracket,
                kind: NodeKind::Range,
                version: format!("covers {n} bundle{}", if *n == 1 { "" } else { "s" }),
                head: false,
                deprecated: false,
                installed: false,
            });
            drawn.push(DrawnEdge {
                from: id,
                to: ids[&e.name].clone(),
                label: EdgeKind::SkipRange.as_str().to_string(),
                kind: Some(EdgeKind::SkipRange),
                path: OnPath::default(),
            });
        }
        // Highlight the resolved hops: a hop from X to Y follows the edge X → Y.
        if let Some((classic, v1)) = paths {
            for (res, is_classic) in [(classic, true), (v1, false)] {
                let Some(res) = res else { continue };
                for step in res.path.iter().filter(|s| s.channel == ch.name) {
                    let (Some(f), Some(t)) = (ids.get(&step.from), ids.get(&step.name)) else {
                        continue;
                    };
                    let mut hit = false;
                    for d in drawn.iter_mut().filter(|d| &d.from == f && &d.to == t) {
                        if d.label == step.edge {
                            mark(&mut d.path, is_classic);
                            hit = true;
                        }
                    }
                    if !hit {
                        let mut p = OnPath::default();
                        mark(&mut p, is_classic);
                        drawn.push(DrawnEdge {
                            from: f.clone(),
                            to: t.clone(),
                            label: step.edge.clone(),
                            kind: EdgeKind::parse(&step.edge),
                            path: p,
                        });
                    }
                }
            }
        }
        out.push(Cluster {
            channel: ch.name.clone(),
            default: ch.name == pkg.default_channel,
            nodes,
            edges: drawn,
        });
    }
    out
}

fn mark(p: &mut OnPath, classic: bool) {
    if classic {
        p.classic = true;
    } else {
        p.v1 = true;
    }
}
