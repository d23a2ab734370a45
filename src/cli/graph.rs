//! `opreg graph`: draw a package's update graph as Mermaid or Graphviz DOT.
//!
//! This file owns the drawing only. The edges come from [`crate::graph::channel_edges`] (the
//! one update rule), heads from [`crate::graph::channel_head`], and the `--from` paths from
//! [`crate::graph::resolve`]; nothing here decides whether one bundle upgrades from another.
//!
//! One subgraph per channel (the default channel says so in its title). Inside it: one node per
//! channel entry (the head and deprecated bundles marked), a dashed node for every edge target
//! that is not a bundle of the package (a synthetic skip target, or a missing replaces tail),
//! and a dotted node for a bundle of the package that an edge reaches but that is not in the
//! channel (a skipRange can do that). Edges point from the newer bundle to the one it can be
//! installed over and are styled by kind: `replaces` solid, `skips` dashed, `skipRange` dotted.
//! With `--from`, the classic and OLM v1 upgrade paths from that bundle are highlighted.

use crate::graph::resolve::{self, Resolution, UpgradeGraph};
use crate::graph::{self, EdgeKind, Head, Versions};
use crate::model::{Catalog, Package};
use clap::ValueEnum;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::PathBuf;

/// Draw a package's update graph (Mermaid for GitHub, DOT for graphviz).
///
/// Nodes are bundles, one subgraph per channel. Edges point from a bundle to the bundle it can
/// be installed over: replaces (solid), skips (dashed), skipRange (dotted). The channel head is
/// marked "head", the default channel "(default)", deprecated bundles "deprecated", and names
/// that are skip targets but not bundles (synthetic) are drawn dashed. With --from, the upgrade
/// paths from that bundle are highlighted: classic OLM in red, OLM v1 in blue (both: purple).
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg graph manifests/etcd --package etcd --channel alpha\n  \
    opreg graph catalog.db -p etcd -f dot --from etcdoperator.v0.6.1 | dot -Tsvg > etcd.svg")]
pub struct Args {
    /// Catalog sources: a built opreg database, or anything `opreg ingest` accepts.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Package to draw.
    #[arg(short, long)]
    pub package: String,
    /// Draw only this channel (all channels when absent).
    #[arg(short, long)]
    pub channel: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Mermaid)]
    pub format: Format,
    /// Highlight the classic and OLM v1 upgrade paths from this bundle (a bundle name, a version
    /// of the package, or NAME@VERSION).
    #[arg(long, value_name = "VERSION")]
    pub from: Option<String>,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Mermaid,
    Dot,
}

pub fn run(a: Args) -> i32 {
    let resolved = match crate::image::resolve_or_exit(&a.sources, &a.image, false) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let cat = match super::load_valid_with(&resolved.paths, false, false, &mut |b, _| {
        resolved.finish_bundle(b)
    }) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match draw(
        &cat,
        &a.package,
        a.channel.as_deref(),
        a.format,
        a.from.as_deref(),
    ) {
        Ok(text) => match super::output::out(&text) {
            Ok(()) => super::EXIT_OK,
            Err(e) => {
                super::output::error(format_args!("writing output: {e}"));
                super::EXIT_FAILURE
            }
        },
        Err(e) => {
            super::output::error(e);
            super::EXIT_FAILURE
        }
    }
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
    channel: Option<&str>,
    format: Format,
    from: Option<&str>,
) -> Result<String, String> {
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
            return Err(format!(
                "package {package:?} has no channel {c:?}{}",
                crate::text::did_you_mean(&near)
            ));
        }
    }
    let paths = match from {
        Some(f) => Some(resolve_paths(cat, pkg, channel, f)?),
        None => None,
    };
    let installed = paths
        .as_ref()
        .and_then(|(c, v)| c.as_ref().or(v.as_ref()))
        .map(|r| r.installed.name.clone());
    let clusters = layout(pkg, channel, paths.as_ref(), installed.as_deref());
    Ok(match format {
        Format::Mermaid => mermaid(pkg, &clusters),
        Format::Dot => dot(pkg, &clusters),
    })
}

/// Classic and v1 resolutions from `from`. One of them failing is reported as a warning; both
/// failing is an error.
fn resolve_paths(
    cat: &Catalog,
    pkg: &Package,
    channel: Option<&str>,
    from: &str,
) -> Result<(Option<Resolution>, Option<Resolution>), String> {
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
        // The resolver's messages already quote FROM: say it once.
        (Err(c), Err(v)) => Err(if c.to_string() == v.to_string() {
            c.to_string()
        } else {
            format!("classic: {c}; v1: {v}")
        }),
        (c, v) => {
            if let Err(e) = &c {
                super::output::warning(format_args!("no classic path from {from:?}: {e}"));
            }
            if let Err(e) = &v {
                super::output::warning(format_args!("no OLM v1 path from {from:?}: {e}"));
            }
            for (name, r) in [("classic", &c), ("OLM v1", &v)] {
                if let Ok(Resolution { error: Some(e), .. }) = r {
                    super::output::status(format_args!(
                        "note: {name} path ends with an error: {e}"
                    ));
                }
            }
            Ok((c.ok(), v.ok()))
        }
    }
}

fn layout(
    pkg: &Package,
    only: Option<&str>,
    paths: Option<&(Option<Resolution>, Option<Resolution>)>,
    installed: Option<&str>,
) -> Vec<Cluster> {
    let versions = Versions::of(pkg);
    let mut out = Vec::new();
    for (ci, ch) in pkg
        .channels
        .values()
        .filter(|c| only.is_none_or(|o| o == c.name))
        .enumerate()
    {
        let head = match graph::channel_head(ch) {
            Head::One(h) => Some(h),
            _ => None,
        };
        let mut ids: BTreeMap<String, String> = BTreeMap::new();
        let mut nodes = Vec::new();
        let mut add = |name: &str, kind: NodeKind, nodes: &mut Vec<Node>| {
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
        for e in &ch.entries {
            add(&e.name, NodeKind::Entry, &mut nodes);
        }
        let edges = graph::channel_edges(&versions, ch);
        let targets: BTreeSet<&str> = edges.iter().map(|e| e.to.as_str()).collect();
        for t in targets {
            let kind = if pkg.bundles.contains_key(t) {
                NodeKind::Outside
            } else {
                NodeKind::Synthetic
            };
            add(t, kind, &mut nodes);
        }
        let mut drawn: Vec<DrawnEdge> = edges
            .iter()
            .map(|e| DrawnEdge {
                from: ids[&e.from].clone(),
                to: ids[&e.to].clone(),
                label: e.kind.as_str().to_string(),
                kind: Some(e.kind),
                path: OnPath::default(),
            })
            .collect();
        // Highlight the resolved hops: a hop from X to Y follows the edge Y → X.
        if let Some((classic, v1)) = paths {
            for (res, is_classic) in [(classic, true), (v1, false)] {
                let Some(res) = res else { continue };
                for step in res.path.iter().filter(|s| s.channel == ch.name) {
                    let (Some(f), Some(t)) = (ids.get(&step.name), ids.get(&step.from)) else {
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

fn node_lines(n: &Node) -> Vec<String> {
    let mut lines = vec![n.name.clone()];
    if !n.version.is_empty() {
        lines.push(n.version.clone());
    }
    let mut marks = Vec::new();
    if n.head {
        marks.push("head");
    }
    if n.deprecated {
        marks.push("deprecated");
    }
    if n.installed {
        marks.push("from");
    }
    match n.kind {
        NodeKind::Synthetic => marks.push("synthetic"),
        NodeKind::Outside => marks.push("not in channel"),
        NodeKind::Entry => {}
    }
    if !marks.is_empty() {
        lines.push(format!("[{}]", marks.join(", ")));
    }
    lines
}

fn cluster_title(c: &Cluster) -> String {
    if c.default {
        format!("{} (default)", c.channel)
    } else {
        c.channel.clone()
    }
}

fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}

fn mermaid(pkg: &Package, clusters: &[Cluster]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "---\ntitle: {}\n---", mermaid_text(&pkg.name));
    let _ = writeln!(o, "graph LR");
    let _ = writeln!(
        o,
        "  classDef head fill:#d4f4dd,stroke:#2e7d32,stroke-width:2px"
    );
    let _ = writeln!(
        o,
        "  classDef deprecated fill:#eeeeee,stroke:#9e9e9e,color:#757575"
    );
    let _ = writeln!(
        o,
        "  classDef synthetic fill:#ffffff,stroke:#9e9e9e,stroke-dasharray:5 5"
    );
    let _ = writeln!(
        o,
        "  classDef outside fill:#ffffff,stroke:#9e9e9e,stroke-dasharray:2 2"
    );
    let _ = writeln!(
        o,
        "  classDef from fill:#fff3cd,stroke:#b26a00,stroke-width:2px"
    );
    let mut link = 0usize;
    let mut link_styles: Vec<(usize, String)> = Vec::new();
    for (ci, c) in clusters.iter().enumerate() {
        let _ = writeln!(
            o,
            "  subgraph ch{ci}[\"{}\"]",
            mermaid_text(&cluster_title(c))
        );
        for n in &c.nodes {
            let label = node_lines(n)
                .iter()
                .map(|l| mermaid_text(l))
                .collect::<Vec<_>>()
                .join("<br/>");
            let _ = writeln!(o, "    {}[\"{label}\"]", n.id);
            let class = match n.kind {
                NodeKind::Synthetic => Some("synthetic"),
                NodeKind::Outside => Some("outside"),
                NodeKind::Entry if n.installed => Some("from"),
                NodeKind::Entry if n.deprecated => Some("deprecated"),
                NodeKind::Entry if n.head => Some("head"),
                NodeKind::Entry => None,
            };
            if let Some(cl) = class {
                let _ = writeln!(o, "    class {} {cl}", n.id);
            }
        }
        for e in &c.edges {
            let arrow = match e.kind {
                Some(EdgeKind::Replaces) | None => "-->",
                Some(EdgeKind::Skips) => "-.->",
                Some(EdgeKind::SkipRange) => "-.->",
            };
            let _ = writeln!(
                o,
                "    {} {arrow}|{}| {}",
                e.from,
                mermaid_text(&e.label),
                e.to
            );
            let style = match (e.path.classic, e.path.v1, e.kind) {
                (true, true, _) => "stroke:#8e24aa,stroke-width:4px",
                (true, false, _) => "stroke:#d32f2f,stroke-width:4px",
                (false, true, _) => "stroke:#1565c0,stroke-width:4px",
                (_, _, Some(EdgeKind::Skips)) => "stroke:#ef6c00,stroke-dasharray:6 4",
                (_, _, Some(EdgeKind::SkipRange)) => "stroke:#6a1b9a,stroke-dasharray:1 4",
                _ => "",
            };
            if !style.is_empty() {
                link_styles.push((link, style.to_string()));
            }
            link += 1;
        }
        let _ = writeln!(o, "  end");
    }
    for (i, s) in link_styles {
        let _ = writeln!(o, "  linkStyle {i} {s}");
    }
    o
}

fn dot_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot(pkg: &Package, clusters: &[Cluster]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "digraph \"{}\" {{", dot_text(&pkg.name));
    let _ = writeln!(o, "  rankdir=LR;");
    let _ = writeln!(
        o,
        "  label=\"{}\"; labelloc=t; fontname=\"Helvetica\";",
        dot_text(&pkg.name)
    );
    let _ = writeln!(
        o,
        "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];"
    );
    let _ = writeln!(o, "  edge [fontname=\"Helvetica\", fontsize=10];");
    for (ci, c) in clusters.iter().enumerate() {
        let _ = writeln!(o, "  subgraph cluster_{ci} {{");
        let _ = writeln!(o, "    label=\"{}\";", dot_text(&cluster_title(c)));
        if c.default {
            let _ = writeln!(o, "    style=bold;");
        }
        for n in &c.nodes {
            let label = node_lines(n)
                .iter()
                .map(|l| dot_text(l))
                .collect::<Vec<_>>()
                .join("\\n");
            let attrs = match n.kind {
                NodeKind::Synthetic => "style=\"rounded,dashed\", color=gray45, fontcolor=gray35",
                NodeKind::Outside => "style=\"rounded,dotted\", color=gray45",
                NodeKind::Entry if n.installed => {
                    "style=\"rounded,filled,bold\", fillcolor=\"#fff3cd\""
                }
                NodeKind::Entry if n.deprecated => {
                    "style=\"rounded,filled\", fillcolor=gray90, fontcolor=gray40"
                }
                NodeKind::Entry if n.head => {
                    "style=\"rounded,filled,bold\", fillcolor=\"#d4f4dd\", color=\"#2e7d32\""
                }
                NodeKind::Entry => "style=rounded",
            };
            let _ = writeln!(o, "    {} [label=\"{label}\", {attrs}];", n.id);
        }
        let _ = writeln!(o, "  }}");
        for e in &c.edges {
            let (style, kind_color) = match e.kind {
                Some(EdgeKind::Replaces) | None => ("solid", "black"),
                Some(EdgeKind::Skips) => ("dashed", "darkorange2"),
                Some(EdgeKind::SkipRange) => ("dotted", "purple4"),
            };
            let path = match (e.path.classic, e.path.v1) {
                (true, true) => Some("#8e24aa"),
                (true, false) => Some("#d32f2f"),
                (false, true) => Some("#1565c0"),
                (false, false) => None,
            };
            let emphasis = match path {
                Some(c) => format!("color=\"{c}\", penwidth=3"),
                None => format!("color={kind_color}"),
            };
            let _ = writeln!(
                o,
                "  {} -> {} [label=\"{}\", style={style}, {emphasis}];",
                e.from,
                e.to,
                dot_text(&e.label)
            );
        }
    }
    let _ = writeln!(o, "}}");
    o
}
