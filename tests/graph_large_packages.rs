//! `opreg graph` on large real packages: a skipRange-heavy package draws one edge per skipRange,
//! and assisted-service's `ocm-2.6` channel stays small and renders fast.

use super::graph_cli::{graph_out, load, parse_dot};
use crate::common;
use opreg::graph::{self, Versions};

/// A package whose every bundle has a skipRange covering all older ones (the shape of
/// assisted-service-operator's ocm-2.6): one bracket per skipRange, not one edge per covered
/// bundle, and graphviz lays it out.
#[test]
fn skip_range_heavy_package_draws_one_edge_per_skip_range() {
    let n = 30;
    let mut fbc = String::from(r#"{"schema":"olm.package","name":"heavy","defaultChannel":"c"}"#);
    let mut entries = Vec::new();
    for i in 0..n {
        let mut e = serde_json::json!({"name": format!("heavy.v1.0.{i}"), "skipRange": format!(">=0.0.1 <1.0.{i}")});
        if i > 0 {
            e["replaces"] = format!("heavy.v1.0.{}", i - 1).into();
        }
        entries.push(e);
        fbc += &format!(
            "\n{{\"schema\":\"olm.bundle\",\"package\":\"heavy\",\"name\":\"heavy.v1.0.{i}\",\"image\":\"example.com/heavy:{i}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"heavy\",\"version\":\"1.0.{i}\"}}}}]}}"
        );
    }
    fbc += &format!(
        "\n{}\n",
        serde_json::json!({"schema": "olm.channel", "package": "heavy", "name": "c", "entries": entries})
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.json");
    std::fs::write(&path, fbc).unwrap();
    let cat = load(&path);
    let all = graph::channel_edges(
        &Versions::of(&cat.packages["heavy"]),
        &cat.packages["heavy"].channels["c"],
    );
    assert_eq!(all.len(), (n - 1) + n * (n - 1) / 2, "the rule's own edges");
    let out = graph_out(&["graph", path.to_str().unwrap(), "-p", "heavy", "-f", "dot"]);
    let d = parse_dot(&out);
    let c = &d.clusters["c (default)"];
    // 29 replaces, and one bracket for each of the 29 ranges that cover anything.
    assert_eq!(c.edges.iter().filter(|e| e.2 == "replaces").count(), n - 1);
    assert_eq!(c.edges.iter().filter(|e| e.2 == "skipRange").count(), n - 1);
    assert_eq!(c.edges.len(), 2 * (n - 1));
    assert_eq!(
        c.nodes[&format!("skipRange >=0.0.1 <1.0.{}", n - 1)].0[1],
        format!("covers {} bundles", n - 1)
    );
    if let Ok(mut child) = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(out.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("<svg"));
    }
}

#[test]
#[ignore = "heavy tier: reads the 85 MB community catalog"]
fn assisted_service_ocm_2_6_stays_small_and_renders_fast() {
    let src = common::corpus_valid("community-operators.fbc.json");
    let s = src.to_str().unwrap();
    let out = graph_out(&[
        "graph",
        s,
        "-p",
        "assisted-service-operator",
        "-c",
        "ocm-2.6",
        "-f",
        "dot",
    ]);
    let edges = out.lines().filter(|l| l.contains(" -> ")).count();
    assert!(
        edges < 150,
        "{edges} edges (1,211 when every covered bundle got an edge)"
    );
    let mermaid = graph_out(&[
        "graph",
        s,
        "-p",
        "assisted-service-operator",
        "-c",
        "ocm-2.6",
    ]);
    assert!(mermaid.len() < 50_000, "{} characters", mermaid.len());
    let t = std::time::Instant::now();
    let mut child = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("graphviz's dot (apt install graphviz)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(out.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
}
