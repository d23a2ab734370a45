//! `opreg upgrade` and `opreg.v1.Upgrades/Resolve` against the real binary: the embedded demo
//! (the seed example); deprecation, dependencies and maxOpenShiftVersion; exit codes; the
//! upgrade lint; and the gRPC service giving the CLI's answer. The worked examples (A–F) are
//! tests/upgrade_examples.rs, on the fixtures, cases and helpers of this file.

use crate::common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

pub(crate) fn fx(name: &str) -> String {
    fixture(&format!("upgrades/{name}"))
        .to_string_lossy()
        .to_string()
}

/// Each fixture ingested once per test run, under cargo's per-target scratch directory.
pub(crate) fn db(name: &str) -> String {
    static BUILT: OnceLock<Mutex<BTreeMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    let path = built
        .entry(name.to_string())
        .or_insert_with(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("upgrade-fixtures");
            std::fs::create_dir_all(&dir).unwrap();
            let out = dir.join(format!("{name}.db"));
            let (code, _, err) = opreg(&["ingest", "-q", &fx(name), "-o", out.to_str().unwrap()]);
            assert_eq!(code, 0, "ingest {name}: {err}");
            out
        })
        .clone();
    path.to_string_lossy().to_string()
}

/// Runs `opreg upgrade SOURCE ARGS -o json`, expecting exit 0.
pub(crate) fn json(source: &[&str], args: &[&str]) -> Value {
    let mut argv = vec!["upgrade"];
    argv.extend_from_slice(source);
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["-o", "json"]);
    let (code, out, err) = opreg(&argv);
    assert_eq!(code, 0, "opreg {argv:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON from {argv:?}: {e}\n{out}"))
}

/// Path as "name edge" strings.
pub(crate) fn path(v: &Value) -> Vec<String> {
    v["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["name"].as_str().unwrap(),
                s["edge"].as_str().unwrap()
            )
        })
        .collect()
}

pub(crate) fn rejected(v: &Value) -> Vec<(String, String)> {
    v["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// One expected answer: fixture, package, FROM, extra args, the path, and whether OLM would
/// report a resolution error at its end.
pub(crate) struct Case {
    pub(crate) fixture: &'static str,
    pub(crate) package: &'static str,
    pub(crate) from: &'static str,
    pub(crate) args: &'static [&'static str],
    pub(crate) path: &'static [&'static str],
    pub(crate) error: bool,
}

pub(crate) const fn case(
    fixture: &'static str,
    package: &'static str,
    from: &'static str,
    args: &'static [&'static str],
    path: &'static [&'static str],
) -> Case {
    Case {
        fixture,
        package,
        from,
        args,
        path,
        error: false,
    }
}

pub(crate) const fn err(mut c: Case) -> Case {
    c.error = true;
    c
}

pub(crate) const A: &str = "a-seed.yaml";

pub(crate) const B: &str = "b-head-not-highest.yaml";

pub(crate) const C: &str = "c-zstream.yaml";

pub(crate) const D: &str = "d-cve-skip.yaml";

pub(crate) const E: &str = "e-channel-switch.yaml";

pub(crate) const F: &str = "f-version-range.yaml";

pub(crate) const F2: &str = "f-no-skiprange.yaml";

pub(crate) const CL: &[&str] = &["--semantics", "classic"];

pub(crate) const V1: &[&str] = &["--semantics", "v1"];

pub(crate) const SV: &[&str] = &["--semantics", "semver"];

pub(crate) const A1: &str = "example.v1.0.0@1.0.0";

#[test]
fn deprecation_dependencies_and_openshift() {
    let ex = fx("extras.yaml");
    // v1: the deprecated head loses to the non-deprecated v1.1.0, which then stays.
    let v = json(
        &[&ex],
        &["-p", "depr", "--from", "1.0.0", "--semantics", "v1"],
    );
    assert_eq!(path(&v), vec!["depr.v1.1.0 replaces"]);
    assert_eq!(
        rejected(&v),
        vec![
            ("depr.v1.0.0".into(), "not-a-successor".into()),
            ("depr.v1.2.0".into(), "deprecated".into())
        ]
    );
    // classic ignores deprecation: the head wins.
    let v = json(&[&ex], &["-p", "depr", "--from", "1.0.0"]);
    assert_eq!(path(&v), vec!["depr.v1.2.0 skipRange"]);
    // v1 refuses a pick that declares dependencies, and does not fall back.
    let v = json(
        &[&ex],
        &["-p", "deps", "--from", "1.0.0", "--semantics", "v1"],
    );
    assert_eq!(v["next"], Value::Null);
    assert!(v["error"].as_str().unwrap().contains("dependencies"));
    assert_eq!(
        rejected(&v),
        vec![("deps.v2.0.0".into(), "has-dependencies".into())]
    );
    // maxOpenShiftVersion: on a 4.13 cluster, 4.12 blocks the next minor and 4.14 does not;
    // on 4.14 both block.
    let blocks = |y: &str| -> Vec<(String, bool)> {
        let v = json(
            &[&ex],
            &["-p", "ocp", "--from", "1.0.0", "--openshift-version", y],
        );
        v["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["maxOpenshiftVersion"].as_str().unwrap().to_string(),
                    s["blocksOpenshiftUpgrade"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        blocks("4.13"),
        vec![("4.12".into(), true), ("4.14".into(), false)]
    );
    assert_eq!(
        blocks("4.14.3"),
        vec![("4.12".into(), true), ("4.14".into(), true)]
    );
    let v = json(&[&ex], &["-p", "ocp", "--from", "1.0.0"]);
    assert_eq!(
        v["path"][0]["blocksOpenshiftUpgrade"], false,
        "no cluster, no marks"
    );
    let (code, out, _) = opreg(&[
        "upgrade",
        &ex,
        "-p",
        "ocp",
        "--from",
        "1.0.0",
        "--openshift-version",
        "4.13",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("BLOCKS the cluster upgrade"), "{out}");
}

#[test]
fn demo_reproduces_the_seed_example() {
    let from = ["-p", "example", "--from", "example.v1.0.0@1.0.0"];
    let v = json(&["--demo"], &[&from[..], CL].concat());
    assert_eq!(v["next"], Value::Null);
    assert_eq!(path(&v), Vec::<String>::new());
    let v = json(&["--demo"], &[&from[..], V1].concat());
    let versions: Vec<&str> = v["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, vec!["2.0.0", "3.0.0"]);
    assert_eq!(v["next"]["name"], "example.v2.0.0");
    assert_eq!(v["next"]["edge"], "skipRange");
    let (code, out, _) = opreg(&[&["upgrade", "--demo"][..], &from[..]].concat());
    assert_eq!(code, 0);
    assert!(out.contains("next: none (no upgrade)"), "{out}");
    assert!(
        out.contains("example.v2.0.0 (2.0.0): skipped-off-chain"),
        "{out}"
    );
    let (code, out, _) = opreg(&[&["upgrade", "--demo"][..], &from[..], V1].concat());
    assert_eq!(code, 0);
    assert!(
        out.contains("next: example.v2.0.0 (2.0.0) in channel stable via skipRange"),
        "{out}"
    );
    assert!(
        out.contains("2. example.v2.0.0 -> example.v3.0.0 (3.0.0)"),
        "{out}"
    );
}

#[test]
fn exit_codes() {
    let a = fx(A);
    let run = |args: &[&str]| opreg(&[&["upgrade"][..], args].concat());
    assert_eq!(
        run(&[&a, "-p", "nope", "--from", "1.0.0"]).0,
        1,
        "unknown package"
    );
    assert_eq!(
        run(&[&a, "-p", "example", "--from", "9.9.9"]).0,
        1,
        "FROM not in the package"
    );
    assert_eq!(
        run(&[&a, "-p", "example", "--from", "x@1.0"]).0,
        1,
        "bad FROM version"
    );
    assert_eq!(
        run(&[&a, "-p", "example", "--from", "example.v2.0.0@2.0.1"]).0,
        1,
        "version mismatch"
    );
    assert_eq!(
        run(&[&a, "-p", "example", "--from", A1, "--channel", "nope"]).0,
        1,
        "unknown channel"
    );
    assert_eq!(
        run(&[
            &a,
            "-p",
            "example",
            "--from",
            A1,
            "--channel",
            "a",
            "--channel",
            "b"
        ])
        .0,
        2,
        "classic takes one channel"
    );
    assert_eq!(
        run(&[&a, "-p", "example", "--from", A1, "--version", "1.x"]).0,
        2,
        "range with classic"
    );
    assert_eq!(
        run(&[
            &a,
            "-p",
            "example",
            "--from",
            A1,
            "--semantics",
            "v1",
            "--version",
            "nope"
        ])
        .0,
        1
    );
    assert_eq!(
        run(&[&a, "-p", "example", "--from", A1, "--semantics", "v2"]).0,
        2,
        "usage"
    );
    assert_eq!(
        run(&["-p", "example", "--from", A1]).0,
        2,
        "no SOURCE and no --demo"
    );
    assert_eq!(
        run(&[&a, "--demo", "-p", "example", "--from", A1]).0,
        2,
        "both"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "schema: olm.channel\npackage: ghost\nname: x\nentries: []\n",
    )
    .unwrap();
    assert_eq!(
        run(&[bad.to_str().unwrap(), "-p", "ghost", "--from", "1.0.0"]).0,
        1,
        "invalid catalog"
    );
}

#[test]
fn validate_upgrades_lints_graphs_the_olms_disagree_on() {
    let (code, _, err) = opreg(&["validate", "--upgrades", &fx(B)]);
    assert_eq!(code, 0);
    assert!(
        err.contains("warning[upgrade-lint]") && err.contains("not the highest version"),
        "{err}"
    );
    let (code, _, err) = opreg(&["validate", "--upgrades", &fx(A)]);
    assert_eq!(code, 0);
    assert!(err.contains("classic OLM ignores its skipRange"), "{err}");
    assert!(err.contains("no replaces"), "{err}");
    let (_, _, err) = opreg(&["validate", "--upgrades", &fx(D)]);
    assert!(
        !err.contains("upgrade-lint"),
        "D resolves alike under both OLMs: {err}"
    );
}

#[test]
fn grpc_resolve_gives_the_cli_answer() {
    use opreg::upgrades_api::{upgrades_client::UpgradesClient, ResolveRequest, Semantics};
    let server = Server::start(&[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = UpgradesClient::connect(server.addr()).await.unwrap();
        for (sem, wire) in [
            ("classic", Semantics::Classic),
            ("v1", Semantics::V1),
            ("semver", Semantics::Semver),
        ] {
            let r = c
                .resolve(ResolveRequest {
                    package: "example".into(),
                    from: A1.into(),
                    semantics: wire as i32,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            let cli = json(
                &["--demo"],
                &["-p", "example", "--from", A1, "--semantics", sem],
            );
            let steps: Vec<String> = r
                .path
                .iter()
                .map(|s| format!("{} {}", s.name, s.edge))
                .collect();
            assert_eq!(steps, path(&cli), "{sem}");
            assert_eq!(
                r.next.as_ref().map(|s| s.name.as_str()),
                cli["next"]["name"].as_str(),
                "{sem}"
            );
            let rej: Vec<(String, String)> = r
                .rejected
                .iter()
                .map(|x| (x.name.clone(), x.reason.clone()))
                .collect();
            assert_eq!(rej, rejected(&cli), "{sem}");
            assert_eq!(r.error, cli["error"].as_str().unwrap_or(""), "{sem}");
            assert_eq!(r.installed_version, "1.0.0");
        }
        let code = |r: ResolveRequest| {
            let mut c = c.clone();
            async move { c.resolve(r).await.unwrap_err().code() }
        };
        let req = |pkg: &str, from: &str, range: &str| ResolveRequest {
            package: pkg.into(),
            from: from.into(),
            version_range: range.into(),
            semantics: Semantics::V1 as i32,
            ..Default::default()
        };
        assert_eq!(code(req("nope", "1.0.0", "")).await, tonic::Code::NotFound);
        assert_eq!(
            code(req("example", "7.0.0", "")).await,
            tonic::Code::NotFound
        );
        assert_eq!(
            code(req("example", A1, "not a range")).await,
            tonic::Code::InvalidArgument
        );
    });
}
