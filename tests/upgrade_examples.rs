//! `opreg upgrade` on every worked example (A–F) of the verified OLM client behaviour under
//! classic, v1 and semver rules, each answered both from the FBC (model) and from an ingested
//! database (store), which must agree byte for byte. The cases' vocabulary is tests/upgrade.rs's.
//!
//! The semver answers are derived from the semver mode (successors `^V, != V`, the installed version a
//! candidate, highest wins; channels, version and policy filter as in v1).

use super::upgrade::{
    case, db, err, fx, json, path, rejected, Case, A, A1, B, C, CL, D, E, F, F2, SV, V1,
};
use serde_json::Value;

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
