//! `opreg upgrade` and `opreg.v1.Upgrades/Resolve` against the real binary: every worked
//! example (A–F) of the verified OLM client behaviour under classic, v1 and semver rules, each answered both
//! from the FBC (model) and from an ingested database (store), which must agree byte for byte;
//! the embedded demo (the seed example); deprecation, dependencies and maxOpenShiftVersion;
//! exit codes; the upgrade lint; and the gRPC service giving the CLI's answer.
//!
//! The semver answers are derived from the semver mode (successors `^V, != V`, the installed version a
//! candidate, highest wins; channels, version and policy filter as in v1).

use crate::common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

fn fx(name: &str) -> String {
    fixture(&format!("upgrades/{name}"))
        .to_string_lossy()
        .to_string()
}

/// Each fixture ingested once per test run, under cargo's per-target scratch directory.
fn db(name: &str) -> String {
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
fn json(source: &[&str], args: &[&str]) -> Value {
    let mut argv = vec!["upgrade"];
    argv.extend_from_slice(source);
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["-o", "json"]);
    let (code, out, err) = opreg(&argv);
    assert_eq!(code, 0, "opreg {argv:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON from {argv:?}: {e}\n{out}"))
}

/// Path as "name edge" strings.
fn path(v: &Value) -> Vec<String> {
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

fn rejected(v: &Value) -> Vec<(String, String)> {
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
struct Case {
    fixture: &'static str,
    package: &'static str,
    from: &'static str,
    args: &'static [&'static str],
    path: &'static [&'static str],
    error: bool,
}

const fn case(
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

const fn err(mut c: Case) -> Case {
    c.error = true;
    c
}

const A: &str = "a-seed.yaml";
const B: &str = "b-head-not-highest.yaml";
const C: &str = "c-zstream.yaml";
const D: &str = "d-cve-skip.yaml";
const E: &str = "e-channel-switch.yaml";
const F: &str = "f-version-range.yaml";
const F2: &str = "f-no-skiprange.yaml";
const CL: &[&str] = &["--semantics", "classic"];
const V1: &[&str] = &["--semantics", "v1"];
const SV: &[&str] = &["--semantics", "semver"];
const A1: &str = "example.v1.0.0@1.0.0";

fn check(cases: &[Case]) {
    for c in cases {
        let args: Vec<&str> = [&["-p", c.package, "--from", c.from][..], c.args].concat();
        let model = json(&[&fx(c.fixture)], &args);
        let store = json(&[&db(c.fixture)], &args);
        let what = format!("{} {:?}", c.fixture, args);
        assert_eq!(path(&model), c.path, "{what}");
        assert_eq!(
            model["error"].is_string(),
            c.error,
            "{what}: {}",
            model["error"]
        );
        assert_eq!(
            model["next"],
            model["path"].get(0).cloned().unwrap_or(Value::Null),
            "{what}"
        );
        assert_eq!(
            model, store,
            "{what}: the store answers differently from the model"
        );
    }
}

#[test]
fn example_a_seed() {
    check(&[
        // classic: v2.0.0 is skipped off the chain, v3.0.0 does not cover 1.0.0: no update.
        case(A, "example", A1, CL, &[]),
        // v1: 1.0.0 → 2.0.0 (skipRange) → 3.0.0 (skips).
        case(
            A,
            "example",
            A1,
            V1,
            &["example.v2.0.0 skipRange", "example.v3.0.0 skips"],
        ),
        case(
            A,
            "example",
            "example.v2.0.0",
            V1,
            &["example.v3.0.0 skips"],
        ),
        case(
            A,
            "example",
            "example.v2.0.0",
            CL,
            &["example.v3.0.0 skips"],
        ),
        // semver: ^1.0.0 matches neither 2.0.0 nor 3.0.0 and 1.0.0 is not in the catalog:
        // no candidate at all, an OLM error. From 2.0.0 it stays (3.0.0 is a major change).
        err(case(A, "example", A1, SV, &[])),
        case(A, "example", "example.v2.0.0", SV, &[]),
    ]);
    let v = json(&[&fx(A)], &["-p", "example", "--from", A1]);
    assert_eq!(
        rejected(&v),
        vec![
            ("example.v2.0.0".into(), "skipped-off-chain".into()),
            ("example.v3.0.0".into(), "not-a-successor".into())
        ]
    );
    let v = json(
        &[&fx(A)],
        &["-p", "example", "--from", A1, "--semantics", "semver"],
    );
    assert!(rejected(&v).iter().all(|(_, r)| r == "major-change"), "{v}");
    let v = json(
        &[&fx(A)],
        &["-p", "example", "--from", A1, "--semantics", "v1"],
    );
    assert_eq!(v["installed"]["inCatalog"], false);
    // At the end of the v1 path (3.0.0) nothing upgrades further: 2.0.0 is no successor.
    assert_eq!(
        rejected(&v),
        vec![("example.v2.0.0".into(), "not-a-successor".into())]
    );
}

#[test]
fn example_b_head_not_highest() {
    check(&[
        // classic: v1.1.0 (range) and v1.9.0 (replaces) qualify; v1.1.0 is nearer the head.
        case(B, "op", "1.0.0", CL, &["op.v1.1.0 skipRange"]),
        case(B, "op", "op.v1.9.0", CL, &["op.v1.1.0 replaces"]),
        // v1: highest wins, and from 1.9.0 it stays forever.
        case(B, "op", "1.0.0", V1, &["op.v1.9.0 replaces"]),
        case(B, "op", "1.9.0", V1, &[]),
        // semver: ^1.0.0 has 1.1.0 and 1.9.0; highest wins; nothing above 1.9.0.
        case(B, "op", "1.0.0", SV, &["op.v1.9.0 semver"]),
        case(B, "op", "1.9.0", SV, &[]),
    ]);
    let v = json(&[&fx(B)], &["-p", "op", "--from", "1.0.0"]);
    assert_eq!(
        rejected(&v),
        vec![
            ("op.v1.0.0".into(), "not-a-successor".into()),
            ("op.v1.9.0".into(), "not-a-successor".into())
        ],
        "the path ends at the head"
    );
    let v = json(
        &[&fx(B)],
        &["-p", "op", "--from", "1.9.0", "--semantics", "v1"],
    );
    assert_eq!(
        rejected(&v),
        vec![
            ("op.v1.0.0".into(), "not-a-successor".into()),
            ("op.v1.1.0".into(), "lower-version".into())
        ]
    );
    let v = json(
        &[&fx(B)],
        &["-p", "op", "--from", "1.0.0", "--semantics", "classic"],
    );
    assert_eq!(v["next"]["from"], "op.v1.0.0");
    assert_eq!(v["next"]["channel"], "stable");
}

#[test]
fn example_c_zstream() {
    check(&[
        case(C, "op", "1.0.0", CL, &["op.v1.0.3 skipRange"]),
        case(C, "op", "1.0.0", V1, &["op.v1.0.3 skipRange"]),
        // v1 with version "<1.0.3": the direct replaces edge, then on to 1.0.2.
        case(
            C,
            "op",
            "1.0.0",
            &["--semantics", "v1", "--version", "<1.0.3"],
            &["op.v1.0.1 replaces", "op.v1.0.2 replaces"],
        ),
        case(C, "op", "1.0.0", SV, &["op.v1.0.3 semver"]),
        // semver ignores the graph: ^1.0.0 below 1.0.3 is highest at 1.0.2.
        case(
            C,
            "op",
            "1.0.0",
            &["--semantics", "semver", "--version", "<1.0.3"],
            &["op.v1.0.2 semver"],
        ),
    ]);
    let v = json(
        &[&fx(C)],
        &[
            "-p",
            "op",
            "--from",
            "1.0.0",
            "--semantics",
            "v1",
            "--version",
            "<1.0.3",
        ],
    );
    assert_eq!(
        rejected(&v),
        vec![
            ("op.v1.0.0".into(), "not-a-successor".into()),
            ("op.v1.0.1".into(), "not-a-successor".into()),
            ("op.v1.0.3".into(), "outside-range".into())
        ]
    );
}

#[test]
fn example_d_cve_skip() {
    for sem in [CL, V1] {
        check(&[
            case(D, "etcd", "0.9.0", sem, &["etcd.v0.9.2 replaces"]),
            case(D, "etcd", "0.9.1", sem, &["etcd.v0.9.2 skips"]),
        ]);
    }
    check(&[
        case(D, "etcd", "0.9.0", SV, &["etcd.v0.9.2 semver"]),
        case(D, "etcd", "0.9.1", SV, &["etcd.v0.9.2 semver"]),
    ]);
}

#[test]
fn example_e_channel_switch() {
    check(&[
        // classic on the default channel stable-1: nothing replaces 1.2.0 there.
        case(E, "op", "1.2.0", CL, &[]),
        case(
            E,
            "op",
            "1.2.0",
            &["--channel", "stable-2"],
            &["op.v2.0.0 replaces", "op.v2.1.0 replaces"],
        ),
        case(
            E,
            "op",
            "1.2.0",
            &["--semantics", "v1", "--channel", "stable-2"],
            &["op.v2.0.0 replaces", "op.v2.1.0 replaces"],
        ),
        case(
            E,
            "op",
            "1.2.0",
            V1,
            &["op.v2.0.0 replaces", "op.v2.1.0 replaces"],
        ),
        case(
            E,
            "op",
            "1.2.0",
            &["--semantics", "v1", "--policy", "SelfCertified"],
            &["op.v2.1.0 selfCertified"],
        ),
        // semver: no automatic major upgrade; in stable-2 even 1.2.0 is no candidate.
        case(E, "op", "1.2.0", SV, &[]),
        err(case(
            E,
            "op",
            "1.2.0",
            &["--semantics", "semver", "--channel", "stable-2"],
            &[],
        )),
        case(
            E,
            "op",
            "1.2.0",
            &["--semantics", "semver", "--policy", "SelfCertified"],
            &["op.v2.1.0 selfCertified"],
        ),
    ]);
    let v = json(&[&fx(E)], &["-p", "op", "--from", "1.2.0"]);
    assert_eq!(
        rejected(&v),
        vec![
            ("op.v2.0.0".into(), "not-in-channel".into()),
            ("op.v2.1.0".into(), "not-in-channel".into())
        ]
    );
    let v = json(
        &[&fx(E)],
        &["-p", "op", "--from", "1.2.0", "--semantics", "semver"],
    );
    assert_eq!(
        rejected(&v),
        vec![
            ("op.v2.0.0".into(), "major-change".into()),
            ("op.v2.1.0".into(), "major-change".into())
        ]
    );
}

#[test]
fn example_f_version_range() {
    let v1 = |r: &'static str| -> &'static [&'static str] {
        Box::leak(vec!["--semantics", "v1", "--version", r].into_boxed_slice())
    };
    let sv = |r: &'static str| -> &'static [&'static str] {
        Box::leak(vec!["--semantics", "semver", "--version", r].into_boxed_slice())
    };
    check(&[
        case(F, "op", "1.2.0", CL, &["op.v2.0.0 skipRange"]),
        case(
            F2,
            "op",
            "1.2.0",
            CL,
            &["op.v1.3.0 replaces", "op.v2.0.0 replaces"],
        ),
        // v1 crosses the major when the graph offers the edge.
        case(F, "op", "1.2.0", V1, &["op.v2.0.0 skipRange"]),
        case(
            F,
            "op",
            "1.2.0",
            v1("~1.2 || ~1.3"),
            &["op.v1.3.0 replaces"],
        ),
        case(F, "op", "1.2.0", v1("1.x"), &["op.v1.3.0 replaces"]),
        case(F, "op", "1.2.0", v1(">=2.0.0"), &["op.v2.0.0 skipRange"]),
        case(F, "op", "1.2.0", v1("1.2.0"), &[]),
        err(case(F2, "op", "1.2.0", v1(">=2.0.0"), &[])),
        // semver never crosses the major.
        case(F, "op", "1.2.0", SV, &["op.v1.3.0 semver"]),
        case(F, "op", "1.2.0", sv("~1.2 || ~1.3"), &["op.v1.3.0 semver"]),
        case(F, "op", "1.2.0", sv("1.x"), &["op.v1.3.0 semver"]),
        err(case(F, "op", "1.2.0", sv(">=2.0.0"), &[])),
        case(F, "op", "1.2.0", sv("1.2.0"), &[]),
        err(case(F2, "op", "1.2.0", sv(">=2.0.0"), &[])),
    ]);
    let v = json(
        &[&fx(F2)],
        &[
            "-p",
            "op",
            "--from",
            "1.2.0",
            "--semantics",
            "v1",
            "--version",
            ">=2.0.0",
        ],
    );
    assert_eq!(
        v["error"],
        "error upgrading from currently installed version \"1.2.0\": no bundles found for package \"op\" matching version \">=2.0.0\""
    );
    assert_eq!(
        rejected(&v),
        vec![
            ("op.v1.3.0".into(), "outside-range".into()),
            ("op.v2.0.0".into(), "blocked-by-policy".into())
        ]
    );
}

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
