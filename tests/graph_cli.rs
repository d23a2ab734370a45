//! `opreg graph`: the drawing of the upstream etcd catalog (nodes, edge kinds, the synthetic
//! node etcdoperator.v0.9.1, head and default channel), checked against the model's own edges;
//! skipRange edges and deprecated bundles on a small FBC; `--from` paths against the resolver;
//! and the legacy index drawn the same as the manifests it was built from. Large real packages
//! are tests/graph_large_packages.rs.

use crate::common;
use crate::legacy_support;
use common::opreg;
use legacy_support::*;
use opreg::graph::{self, EdgeKind, Versions};
use opreg::model::Catalog;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub(crate) fn load(path: &Path) -> Catalog {
    let mut w = Vec::new();
    opreg::source::load_sources(&[path.to_path_buf()], &mut w).expect("catalog loads")
}

/// A parsed DOT drawing: per cluster title, node name → (label lines, attributes), and edges
/// (from name, to name, label, attributes).
#[derive(Default, Debug)]
pub(crate) struct Dot {
    pub(crate) clusters: BTreeMap<String, Cluster>,
}

#[derive(Default, Debug)]
pub(crate) struct Cluster {
    pub(crate) nodes: BTreeMap<String, (Vec<String>, String)>,
    pub(crate) edges: BTreeSet<(String, String, String, String)>,
}

fn attr<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let start = attrs.find(&format!("{key}="))? + key.len() + 1;
    let rest = &attrs[start..];
    if let Some(q) = rest.strip_prefix('"') {
        q.find('"').map(|e| &q[..e])
    } else {
        Some(rest.split([',', ']']).next().unwrap().trim())
    }
}

pub(crate) fn parse_dot(text: &str) -> Dot {
    let mut d = Dot::default();
    let mut ids: BTreeMap<String, (String, String)> = BTreeMap::new(); // id → (cluster, name)
    let mut cur: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("subgraph cluster_") {
            cur = Some(String::new());
        } else if let (Some(c), Some(l)) = (&mut cur, line.strip_prefix("label=\"")) {
            if c.is_empty() {
                *c = l.trim_end_matches("\";").to_string();
                d.clusters.entry(c.clone()).or_default();
            }
        } else if line == "}" {
            cur = None;
        } else if line.contains(" -> ") {
            let (ends, attrs) = line.split_once(" [").unwrap();
            let (f, t) = ends.split_once(" -> ").unwrap();
            let (cf, nf) = ids[f].clone();
            let (ct, nt) = ids[t].clone();
            assert_eq!(cf, ct, "edges stay inside their channel");
            d.clusters.get_mut(&cf).unwrap().edges.insert((
                nf,
                nt,
                attr(attrs, "label").unwrap().to_string(),
                attrs.to_string(),
            ));
        } else if let (Some(c), Some((id, attrs))) = (&cur, line.split_once(" [label=")) {
            let label = attr(&format!("label={attrs}"), "label")
                .unwrap()
                .to_string();
            let lines: Vec<String> = label.split("\\n").map(str::to_string).collect();
            ids.insert(id.to_string(), (c.clone(), lines[0].clone()));
            d.clusters
                .get_mut(c)
                .unwrap()
                .nodes
                .insert(lines[0].clone(), (lines, attrs.to_string()));
        }
    }
    d
}

pub(crate) fn graph_out(args: &[&str]) -> String {
    let (code, out, err) = opreg(args);
    assert_eq!(code, 0, "opreg {args:?}: {err}");
    out
}

#[test]
fn etcd_dot_has_every_node_edge_kind_and_the_synthetic_node() {
    let src = etcd_manifests();
    let cat = load(&src);
    let etcd = &cat.packages["etcd"];
    let out = graph_out(&["graph", src.to_str().unwrap(), "-p", "etcd", "-f", "dot"]);
    let d = parse_dot(&out);
    let titles: BTreeSet<String> = d.clusters.keys().cloned().collect();
    let want_titles: BTreeSet<String> = etcd
        .channels
        .keys()
        .map(|c| {
            if *c == etcd.default_channel {
                format!("{c} (default)")
            } else {
                c.clone()
            }
        })
        .collect();
    assert_eq!(titles, want_titles);
    let versions = Versions::of(etcd);
    for (name, ch) in &etcd.channels {
        let title = if *name == etcd.default_channel {
            format!("{name} (default)")
        } else {
            name.clone()
        };
        let c = &d.clusters[&title];
        // Edges: graph::channel_edges in upgrade direction (older → newer), each styled by its
        // kind; a skipRange once, from its bracket.
        let all = graph::channel_edges(&versions, ch);
        let mut want: BTreeSet<(String, String, String)> = all
            .iter()
            .filter(|e| e.kind != EdgeKind::SkipRange)
            .map(|e| (e.to.clone(), e.from.clone(), e.kind.as_str().to_string()))
            .collect();
        for e in &ch.entries {
            if all
                .iter()
                .any(|x| x.from == e.name && x.kind == EdgeKind::SkipRange)
            {
                want.insert((
                    format!("skipRange {}", e.skip_range),
                    e.name.clone(),
                    "skipRange".into(),
                ));
            }
        }
        let got: BTreeSet<(String, String, String)> = c
            .edges
            .iter()
            .map(|(f, t, l, _)| (f.clone(), t.clone(), l.clone()))
            .collect();
        assert_eq!(got, want, "channel {name}");
        for (_, _, label, attrs) in &c.edges {
            let style = attr(attrs, "style").unwrap();
            match EdgeKind::parse(label).unwrap() {
                EdgeKind::Replaces => assert_eq!(style, "solid"),
                EdgeKind::Skips => assert_eq!(style, "dashed"),
                EdgeKind::SkipRange => assert_eq!(style, "dotted"),
            }
        }
        // Nodes: one per entry plus one per edge target outside the package (synthetic).
        let mut want_nodes: BTreeSet<String> = ch.entries.iter().map(|e| e.name.clone()).collect();
        let synthetic: BTreeSet<String> = want
            .iter()
            .filter(|e| e.2 != "skipRange")
            .map(|e| e.0.clone())
            .filter(|t| !etcd.bundles.contains_key(t))
            .collect();
        want_nodes.extend(synthetic.iter().cloned());
        assert_eq!(
            c.nodes.keys().cloned().collect::<BTreeSet<_>>(),
            want_nodes,
            "channel {name}"
        );
        let head = match graph::channel_head(ch) {
            graph::Head::One(h) => h.to_string(),
            other => panic!("{other:?}"),
        };
        for (n, (lines, attrs)) in &c.nodes {
            let is_synthetic = synthetic.contains(n);
            assert_eq!(
                attr(attrs, "style").unwrap().contains("dashed"),
                is_synthetic,
                "{n}"
            );
            assert_eq!(lines.iter().any(|l| l.contains("synthetic")), is_synthetic);
            assert_eq!(lines.iter().any(|l| l.contains("head")), *n == head, "{n}");
            if let Some(b) = etcd.bundles.get(n) {
                assert_eq!(lines[1], b.version());
            }
        }
    }
    // The upstream etcd catalog: 0.9.2 skips 0.9.1, which is no bundle, in alpha and stable.
    for title in ["alpha (default)", "stable"] {
        let c = &d.clusters[title];
        assert!(c.nodes.contains_key("etcdoperator.v0.9.1"));
        assert!(c.edges.iter().any(|(f, t, l, _)| t == "etcdoperator.v0.9.2"
            && f == "etcdoperator.v0.9.1"
            && l == "skips"));
    }
    assert!(!d.clusters["beta"].nodes.contains_key("etcdoperator.v0.9.1"));
}

#[test]
fn etcd_mermaid_marks_kinds_head_default_and_synthetic() {
    let src = etcd_manifests();
    let cat = load(&src);
    let etcd = &cat.packages["etcd"];
    let out = graph_out(&[
        "graph",
        src.to_str().unwrap(),
        "--package",
        "etcd",
        "--channel",
        "alpha",
    ]);
    assert!(out.contains("graph LR"));
    assert!(out.contains(r#"["alpha (default)"]"#));
    // node id → name, and classes
    let mut names = BTreeMap::new();
    let mut classes = BTreeMap::new();
    let mut edges = BTreeSet::new();
    for l in out.lines().map(str::trim) {
        if let Some((id, rest)) = l.split_once("[\"") {
            if !id.starts_with("subgraph") {
                let name = rest.split("<br/>").next().unwrap().trim_end_matches("\"]");
                names.insert(id.to_string(), name.to_string());
            }
        } else if let Some(rest) = l.strip_prefix("class ") {
            let (id, class) = rest.split_once(' ').unwrap();
            classes.insert(id.to_string(), class.to_string());
        } else if l.contains("|") {
            let parts: Vec<&str> = l.split_whitespace().collect();
            let (arrow_label, to) = (parts[1], parts[2]);
            let (arrow, label) = arrow_label.split_once('|').unwrap();
            edges.insert((
                parts[0].to_string(),
                to.to_string(),
                arrow.to_string(),
                label.trim_end_matches('|').to_string(),
            ));
        }
    }
    let id = |n: &str| {
        names
            .iter()
            .find(|(_, v)| v.as_str() == n)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| panic!("no node {n}"))
    };
    let ch = &etcd.channels["alpha"];
    let want = graph::channel_edges(&Versions::of(etcd), ch);
    assert_eq!(edges.len(), want.len());
    for e in &want {
        let arrow = match e.kind {
            EdgeKind::Replaces => "-->",
            EdgeKind::Skips | EdgeKind::SkipRange => "-.->",
        };
        assert!(
            edges.contains(&(
                id(&e.to),
                id(&e.from),
                arrow.to_string(),
                e.kind.as_str().to_string()
            )),
            "{e:?} in {edges:?}"
        );
    }
    assert_eq!(classes[&id("etcdoperator.v0.9.2")], "head");
    assert_eq!(classes[&id("etcdoperator.v0.9.1")], "synthetic");
    assert!(!classes.contains_key(&id("etcdoperator.v0.9.0")));
    // The entries, the synthetic node and the legend.
    assert_eq!(names.len(), ch.entries.len() + 2);
    assert!(names["lgd"].starts_with("arrows point from the installed bundle"));
    // The default channel comes first.
    let all = graph_out(&["graph", src.to_str().unwrap(), "-p", "etcd"]);
    let firsts: Vec<&str> = all
        .lines()
        .filter(|l| l.trim_start().starts_with("subgraph"))
        .collect();
    assert!(firsts[0].contains("alpha (default)"), "{firsts:?}");
}

const SMALL_FBC: &str = r#"{"schema":"olm.package","name":"kiwi","defaultChannel":"stable"}
{"schema":"olm.channel","package":"kiwi","name":"stable","entries":[{"name":"kiwi.v1.0.0"},{"name":"kiwi.v1.1.0","replaces":"kiwi.v1.0.0"},{"name":"kiwi.v2.0.0","replaces":"kiwi.v1.1.0","skipRange":">=1.0.0 <2.0.0","skips":["kiwi.v1.0.5"]}]}
{"schema":"olm.channel","package":"kiwi","name":"fast","entries":[{"name":"kiwi.v2.0.0","skipRange":">=1.1.0 <2.0.0"}]}
{"schema":"olm.bundle","package":"kiwi","name":"kiwi.v1.0.0","image":"example.com/kiwi:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"kiwi","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"kiwi","name":"kiwi.v1.1.0","image":"example.com/kiwi:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"kiwi","version":"1.1.0"}}]}
{"schema":"olm.bundle","package":"kiwi","name":"kiwi.v2.0.0","image":"example.com/kiwi:2.0.0","properties":[{"type":"olm.package","value":{"packageName":"kiwi","version":"2.0.0"}}]}
{"schema":"olm.deprecations","package":"kiwi","entries":[{"reference":{"schema":"olm.bundle","name":"kiwi.v1.1.0"},"message":"kiwi 1.1.0 is deprecated"}]}
"#;

#[test]
fn skip_range_edges_outside_bundles_and_deprecations_are_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let fbc = dir.path().join("catalog.json");
    std::fs::write(&fbc, SMALL_FBC).unwrap();
    let out = graph_out(&["graph", fbc.to_str().unwrap(), "-p", "kiwi", "-f", "dot"]);
    let d = parse_dot(&out);
    let stable = &d.clusters["stable (default)"];
    let has = |c: &Cluster, f: &str, t: &str, l: &str| {
        c.edges
            .iter()
            .find(|(a, b, k, _)| a == f && b == t && k == l)
            .map(|e| e.3.clone())
    };
    // One bracket per skipRange, labelled with the range and what it covers.
    let range = "skipRange >=1.0.0 <2.0.0";
    let sr = has(stable, range, "kiwi.v2.0.0", "skipRange").expect("skipRange edge");
    assert_eq!(attr(&sr, "style"), Some("dotted"));
    assert_eq!(stable.nodes[range].0[1], "covers 2 bundles");
    assert_eq!(
        stable.edges.iter().filter(|e| e.2 == "skipRange").count(),
        1
    );
    assert!(has(stable, "kiwi.v1.1.0", "kiwi.v2.0.0", "replaces").is_some());
    assert!(has(stable, "kiwi.v1.0.5", "kiwi.v2.0.0", "skips").is_some());
    let (lines, attrs) = &stable.nodes["kiwi.v1.1.0"];
    assert!(lines.iter().any(|l| l.contains("deprecated")));
    assert!(attrs.contains("gray90"));
    let (lines, attrs) = &stable.nodes["kiwi.v1.0.5"];
    assert!(lines.iter().any(|l| l.contains("synthetic")));
    assert!(attrs.contains("dashed"));
    // In "fast", 2.0.0's skipRange covers 1.1.0, a bundle outside the channel: the bracket
    // counts it, and no node is drawn for it.
    let fast = &d.clusters["fast"];
    assert!(has(fast, "skipRange >=1.1.0 <2.0.0", "kiwi.v2.0.0", "skipRange").is_some());
    assert_eq!(
        fast.nodes["skipRange >=1.1.0 <2.0.0"].0[1],
        "covers 1 bundle"
    );
    assert!(!fast.nodes.contains_key("kiwi.v1.1.0"));
    assert!(!fast.nodes.contains_key("kiwi.v1.0.5"));
    // --channel in both formats; --since leaves out older bundles and their edges.
    for f in ["dot", "mermaid"] {
        let out = graph_out(&[
            "graph",
            fbc.to_str().unwrap(),
            "-p",
            "kiwi",
            "-c",
            "fast",
            "-f",
            f,
        ]);
        assert!(
            out.contains("fast") && !out.contains("stable"),
            "{f}: {out}"
        );
        let out = graph_out(&[
            "graph",
            fbc.to_str().unwrap(),
            "-p",
            "kiwi",
            "--since",
            "1.1.0",
            "-f",
            f,
        ]);
        assert!(
            !out.contains("kiwi.v1.0.0") && out.contains("kiwi.v1.1.0"),
            "{f}: {out}"
        );
    }
    let d = parse_dot(&graph_out(&[
        "graph",
        fbc.to_str().unwrap(),
        "-p",
        "kiwi",
        "--since",
        "1.1.0",
        "-f",
        "dot",
    ]));
    let stable = &d.clusters["stable (default)"];
    assert_eq!(
        stable.nodes["skipRange >=1.0.0 <2.0.0"].0[1],
        "covers 1 bundle"
    );
    let (code, _, err) = opreg(&[
        "graph",
        fbc.to_str().unwrap(),
        "-p",
        "kiwi",
        "--since",
        "one",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("--since \"one\" is not a version"), "{err}");
}

#[test]
fn from_highlights_the_resolved_classic_and_v1_paths() {
    let dir = tempfile::tempdir().unwrap();
    let fbc = dir.path().join("catalog.json");
    std::fs::write(&fbc, SMALL_FBC).unwrap();
    let cat = load(&fbc);
    for (src, pkg, ch, from) in [
        (fbc.clone(), "kiwi", "stable", "kiwi.v1.0.0"),
        (etcd_manifests(), "etcd", "alpha", "etcdoperator.v0.6.1"),
    ] {
        let cat = if pkg == "kiwi" {
            cat.clone()
        } else {
            load(&src)
        };
        let out = graph_out(&[
            "graph",
            src.to_str().unwrap(),
            "-p",
            pkg,
            "-c",
            ch,
            "-f",
            "dot",
            "--from",
            from,
        ]);
        let d = parse_dot(&out);
        let c = d.clusters.values().next().unwrap();
        let (lines, _) = &c.nodes[from];
        assert!(lines.iter().any(|l| l.contains("from")));
        let path_of = |sem: &str| {
            let req = opreg::graph::resolve::Request {
                package: pkg.to_string(),
                from: from.to_string(),
                channels: vec![ch.to_string()],
                version_range: None,
                policy: Default::default(),
                semantics: sem.parse().unwrap(),
                openshift_version: None,
            };
            opreg::graph::resolve::resolve(&cat, &req).unwrap().path
        };
        let classic = path_of("classic");
        let v1 = path_of("v1");
        assert!(!classic.is_empty(), "{pkg}: classic path");
        for (f, t, l, attrs) in &c.edges {
            let on = |p: &[opreg::graph::resolve::Step]| {
                p.iter()
                    .any(|s| &s.from == f && &s.name == t && &s.edge == l)
            };
            let color = attr(attrs, "color").unwrap_or("");
            let want = match (on(&classic), on(&v1)) {
                (true, true) => "#8e24aa",
                (true, false) => "#d32f2f",
                (false, true) => "#1565c0",
                (false, false) => "",
            };
            if want.is_empty() {
                assert!(!attrs.contains("penwidth"), "{f} -> {t} {l}");
            } else {
                assert_eq!(color, want, "{f} -> {t} {l}");
            }
        }
    }
    let (code, _, err) = opreg(&[
        "graph",
        fbc.to_str().unwrap(),
        "-p",
        "kiwi",
        "--from",
        "kiwi.v9.9.9",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("kiwi.v9.9.9"), "{err}");
}

#[test]
fn legacy_index_draws_like_its_manifests_and_bad_names_fail() {
    let fixture = legacy_fixture();
    let from_index = graph_out(&[
        "graph",
        fixture.to_str().unwrap(),
        "-p",
        "etcd",
        "-f",
        "dot",
    ]);
    let from_manifests = graph_out(&[
        "graph",
        etcd_manifests().to_str().unwrap(),
        "-p",
        "etcd",
        "-f",
        "dot",
    ]);
    assert_eq!(from_index, from_manifests);
    let f = fixture.to_str().unwrap();
    let (code, _, err) = opreg(&["graph", f, "-p", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("no package \"nope\""), "{err}");
    let (code, _, err) = opreg(&["graph", f, "-p", "etcd", "-c", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("no channel \"nope\""), "{err}");
    let (code, _, _) = opreg(&["graph", f, "-p", "etcd", "-f", "png"]);
    assert_eq!(code, 2);
}
