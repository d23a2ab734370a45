//! Writing the laid-out clusters of `opreg graph` as Mermaid or Graphviz DOT, with the legend;
//! and opm's channel layout ([`super::opm`]) as opm's Mermaid text.

use super::opm::{OpmGraph, OpmLine, OpmNode, CLASSES as OPM_CLASSES};
use super::{Cluster, Node, NodeKind};
use crate::graph::EdgeKind;
use crate::model::Package;
use crate::text::go_quote;
use std::fmt::Write;

/// The legend, one line per mark.
pub(super) const LEGEND: [&str; 6] = [
    "arrows point from the installed bundle to its upgrade",
    "solid: replaces; dashed: skips",
    "dotted box and arrow: one skipRange, with the bundles it covers",
    "green: channel head; grey: deprecated",
    "dashed box: not a bundle (synthetic); dotted box: not in this channel",
    "with --from: red classic OLM path, blue OLM v1, purple both",
];

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
        NodeKind::Range => {}
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

pub(super) fn mermaid(pkg: &Package, clusters: &[Cluster]) -> String {
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
    let _ = writeln!(
        o,
        "  classDef range fill:#ffffff,stroke:#6a1b9a,color:#6a1b9a,stroke-dasharray:1 4"
    );
    let _ = writeln!(
        o,
        "  classDef legend fill:#fafafa,stroke:#bdbdbd,color:#424242,text-align:left"
    );
    let _ = writeln!(o, "  lgd[\"{}\"]", LEGEND.join("<br/>"));
    let _ = writeln!(o, "  class lgd legend");
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
                NodeKind::Range => Some("range"),
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

pub(super) fn dot(pkg: &Package, clusters: &[Cluster]) -> String {
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
    let _ = writeln!(
        o,
        "  legend [shape=note, fontsize=10, color=gray60, label=\"{}\\l\"];",
        LEGEND.join("\\l")
    );
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
                NodeKind::Range => "shape=box, style=dotted, color=purple4, fontcolor=purple4",
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

/// opm's Mermaid channel graph: ids as they are, names and titles in Go's `%q`.
pub(super) fn opm_mermaid(g: &OpmGraph) -> String {
    let node = |n: &OpmNode| format!("{}[{}]", n.id, go_quote(&n.name));
    let mut o = String::from("graph LR\n");
    for (class, style) in OPM_CLASSES {
        let _ = writeln!(o, "  classDef {class} {style}");
    }
    for (package, channels) in &g.packages {
        let _ = writeln!(o, "  %% package {}", go_quote(package));
        let _ = writeln!(o, "  subgraph {}", go_quote(package));
        for c in channels {
            let _ = writeln!(o, "    %% channel {}", go_quote(&c.name));
            let _ = writeln!(o, "    subgraph {}[{}]", c.id, go_quote(&c.name));
            for l in &c.lines {
                let _ = match l {
                    OpmLine::Node(n) => writeln!(o, "      {}", node(n)),
                    OpmLine::Edge { from, label, to } => {
                        writeln!(o, "      {}-- {label} --> {}", node(from), node(to))
                    }
                };
            }
            let _ = writeln!(o, "    end");
        }
        let _ = writeln!(o, "  end");
    }
    if let Some(p) = &g.deprecated_package {
        let _ = writeln!(o, "style {p} fill:#989695");
    }
    for c in &g.deprecated_channels {
        let _ = writeln!(o, "style {c} fill:#DCD0FF");
    }
    for (class, ids) in g.classes.iter().filter(|(_, ids)| !ids.is_empty()) {
        let _ = writeln!(o, "class {} {class}", ids.join(","));
    }
    if !g.skipped_links.is_empty() {
        let links: Vec<String> = g.skipped_links.iter().map(usize::to_string).collect();
        let _ = writeln!(
            o,
            "linkStyle {} stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;",
            links.join(",")
        );
    }
    o
}
