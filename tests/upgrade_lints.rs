//! The single-edge upgrade lints of `opreg validate --upgrades` (`validate::edge_lint`), with
//! the real binary on catalogs the tests write: each lint has a catalog that triggers it,
//! with its `help:` line, and a corrected one that does not. Lints are warnings: exit 0.

use crate::common;
use common::opreg;

/// An FBC catalog of package `p`, channel `c` with `entries` (JSON), and a bundle `p.vV` for
/// each version.
fn catalog(entries: &str, versions: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let mut s = String::from(r#"{"schema":"olm.package","name":"p","defaultChannel":"c"}"#);
    s.push('\n');
    s.push_str(&format!(
        r#"{{"schema":"olm.channel","name":"c","package":"p","entries":{entries}}}"#
    ));
    s.push('\n');
    for v in versions {
        s.push_str(&format!(
            r#"{{"schema":"olm.bundle","name":"p.v{v}","package":"p","image":"example.com/p:{v}","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"{v}"}}}}]}}"#
        ));
        s.push('\n');
    }
    std::fs::write(d.path().join("catalog.json"), s).unwrap();
    d
}

/// The upgrade-lint warnings of `validate --upgrades`, each with its help line.
fn lints(entries: &str, versions: &[&str]) -> Vec<(String, String)> {
    let d = catalog(entries, versions);
    let (code, _, err) = opreg(&["validate", "--upgrades", d.path().to_str().unwrap()]);
    assert_eq!(code, 0, "warnings only: {err}");
    let lines: Vec<&str> = err.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("warning[upgrade-lint]"))
        .map(|(i, l)| {
            let help = lines
                .get(i + 1)
                .filter(|h| h.starts_with("  help: "))
                .copied()
                .unwrap_or("");
            (l.to_string(), help.trim().to_string())
        })
        .collect()
}

#[test]
fn a_replaces_that_is_a_near_miss_of_a_bundle_name() {
    // operator-registry#1101: a replaces written without the package prefix.
    let got = lints(
        r#"[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"v1.0.0"},{"name":"p.v1.2.0","replaces":"p.v1.1.0","skips":["p.v1.0.0"]}]"#,
        &["1.0.0", "1.1.0", "1.2.0"],
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].0.ends_with(r#"p.v1.1.0 replaces "v1.0.0", which is no bundle of package "p": no subscriber upgrades through that edge; did you mean "p.v1.0.0"?"#), "{got:?}");
    assert!(
        got[0]
            .1
            .starts_with(r#"help: change "v1.0.0" in the replaces of p.v1.1.0 (in "#),
        "{got:?}"
    );
    assert!(
        got[0].1.ends_with(r#"catalog.json) to "p.v1.0.0""#),
        "{got:?}"
    );
    // A typo in skips.
    let got = lints(
        r#"[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v1.0.0"},{"name":"p.v1.2.0","replaces":"p.v1.1.0","skips":["p.v1.0.O"]}]"#,
        &["1.0.0", "1.1.0", "1.2.0"],
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].0.contains(r#"p.v1.2.0 skips "p.v1.0.O""#), "{got:?}");
    // A truncated channel whose tail replaces a removed bundle is upstream's normal case.
    let got = lints(
        r#"[{"name":"p.v2.0.0","replaces":"p.v1.0.0"},{"name":"p.v2.1.0","replaces":"p.v2.0.0"}]"#,
        &["2.0.0", "2.1.0"],
    );
    assert_eq!(got, Vec::<(String, String)>::new());
}

#[test]
fn a_replaces_or_skips_naming_a_newer_version() {
    // 1.1.0 replaces 1.2.0: a subscriber at 1.2.0 is offered 1.1.0. (1.3.0 is the head.)
    let got = lints(
        r#"[{"name":"p.v1.2.0"},{"name":"p.v1.1.0","replaces":"p.v1.2.0"},{"name":"p.v1.3.0","replaces":"p.v1.1.0"}]"#,
        &["1.1.0", "1.2.0", "1.3.0"],
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].0.ends_with("p.v1.1.0 (1.1.0) replaces the newer p.v1.2.0 (1.2.0): a subscriber at p.v1.2.0 is offered p.v1.1.0 as an upgrade, a downgrade"), "{got:?}");
    assert!(
        got[0]
            .1
            .starts_with("help: swap the edge: p.v1.2.0 should replace p.v1.1.0"),
        "{got:?}"
    );
    // A skips naming a newer version (1.3.0 is skipped, so the chain is 1.4.0 -> 1.2.0 -> 1.1.0).
    let got = lints(
        r#"[{"name":"p.v1.1.0"},{"name":"p.v1.3.0","replaces":"p.v1.1.0"},{"name":"p.v1.2.0","replaces":"p.v1.1.0","skips":["p.v1.3.0"]},{"name":"p.v1.4.0","replaces":"p.v1.2.0"}]"#,
        &["1.1.0", "1.2.0", "1.3.0", "1.4.0"],
    );
    assert!(
        got.iter().any(|(m, h)| m.ends_with("p.v1.2.0 (1.2.0) skips the newer p.v1.3.0 (1.3.0): a subscriber at p.v1.3.0 is offered p.v1.2.0 as an upgrade, a downgrade")
            && h.starts_with("help: remove p.v1.3.0 from the skips of p.v1.2.0 (in ")),
        "{got:?}"
    );
    // In version order, nothing.
    let got = lints(
        r#"[{"name":"p.v1.1.0"},{"name":"p.v1.2.0","replaces":"p.v1.1.0"},{"name":"p.v1.3.0","replaces":"p.v1.2.0","skips":["p.v1.1.0"]}]"#,
        &["1.1.0", "1.2.0", "1.3.0"],
    );
    assert_eq!(got, Vec::<(String, String)>::new());
}

#[test]
fn a_skip_range_covering_its_own_bundle() {
    // operator-registry#2090: the head's range reaches above its own version.
    let got = lints(
        r#"[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v1.0.0","skipRange":">=1.0.0 <2.0.0"}]"#,
        &["1.0.0", "1.1.0"],
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].0.ends_with(r#"p.v1.1.0 (1.1.0) has skipRange ">=1.0.0 <2.0.0", which covers its own version: the range reaches above the bundle, so any newer bundle added later becomes a downgrade target"#), "{got:?}");
    assert!(
        got[0]
            .1
            .starts_with("help: bound the skipRange of p.v1.1.0 (in "),
        "{got:?}"
    );
    assert!(
        got[0]
            .1
            .ends_with(r#"below its own version, e.g. "<1.1.0""#),
        "{got:?}"
    );
    // Bounded below its version, nothing.
    let got = lints(
        r#"[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v1.0.0","skipRange":">=1.0.0 <1.1.0"}]"#,
        &["1.0.0", "1.1.0"],
    );
    assert_eq!(got, Vec::<(String, String)>::new());
    // Covering a newer bundle of the channel too: only the downgrade warning, not this one.
    let got = lints(
        r#"[{"name":"p.v0.6.0"},{"name":"p.v0.7.0","replaces":"p.v0.6.0","skipRange":">=0.0.1"},{"name":"p.v0.8.0","replaces":"p.v0.7.0","skipRange":">=0.0.1 <0.8.0"}]"#,
        &["0.6.0", "0.7.0", "0.8.0"],
    );
    assert!(
        got.iter()
            .any(|(m, _)| m.contains("covers the newer p.v0.8.0")),
        "{got:?}"
    );
    assert!(
        !got.iter()
            .any(|(m, _)| m.contains("covers its own version")),
        "{got:?}"
    );
}
