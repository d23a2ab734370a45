//! The masterminds grammar's test tables.
use super::*;

/// The versions of the verified Masterminds table, in table order.
const VERSIONS: &str = "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 1.0.0 1.2.0 1.2.3 1.2.9 1.3.0 \
    1.3.0-rc.1 1.11.0 1.12.5 1.13.0 2.0.0-rc.1 2.0.0 2.5.0 3.0.0 3.1.0 1.2.3+build.7";
const ONE_X: &str = "1.0.0 1.2.0 1.2.3 1.2.9 1.3.0 1.11.0 1.12.5 1.13.0 1.2.3+build.7";
const BELOW_2: &str = "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 1.0.0 1.2.0 1.2.3 1.2.9 1.3.0 \
    1.11.0 1.12.5 1.13.0 1.2.3+build.7";

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

fn c(s: &str) -> Constraint {
    Constraint::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

/// The members of the space-separated `versions` that `constraint` accepts.
fn matching_in(constraint: &Constraint, versions: &str) -> String {
    let hits: Vec<&str> = versions
        .split_whitespace()
        .filter(|s| constraint.matches(&v(s)))
        .collect();
    hits.join(" ")
}

fn check_rows(rows: &[(&str, &str)]) {
    for (constraint, want) in rows {
        assert_eq!(matching_in(&c(constraint), VERSIONS), *want, "{constraint}");
    }
}

#[test]
fn table_exact_and_comparisons() {
    check_rows(&[
        ("1.2.3", "1.2.3 1.2.3+build.7"),
        ("=1.2.3", "1.2.3 1.2.3+build.7"),
        ("v1.2.3", "1.2.3 1.2.3+build.7"),
        // `!=` also drops both prereleases
        ("!=1.2.3", "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 1.0.0 1.2.0 1.2.9 1.3.0 1.11.0 1.12.5 1.13.0 2.0.0 2.5.0 3.0.0 3.1.0"),
        (">1.2.3", "1.2.9 1.3.0 1.11.0 1.12.5 1.13.0 2.0.0 2.5.0 3.0.0 3.1.0"),
        (">1.2", "1.3.0 1.11.0 1.12.5 1.13.0 2.0.0 2.5.0 3.0.0 3.1.0"),
        (">1", "2.0.0 2.5.0 3.0.0 3.1.0"),
    ]);
}

#[test]
fn table_wildcards_tilde_caret() {
    check_rows(&[
        ("1.2.x", "1.2.0 1.2.3 1.2.9 1.2.3+build.7"),
        ("1.2.*", "1.2.0 1.2.3 1.2.9 1.2.3+build.7"),
        ("1.x", ONE_X),
        (
            ">= 1.2.x",
            "1.2.0 1.2.3 1.2.9 1.3.0 1.11.0 1.12.5 1.13.0 2.0.0 2.5.0 3.0.0 3.1.0 1.2.3+build.7",
        ),
        ("<= 1.x", BELOW_2),
        ("~1.2.3", "1.2.3 1.2.9 1.2.3+build.7"),
        ("~1", ONE_X),
        (
            "^1.2.3",
            "1.2.3 1.2.9 1.3.0 1.11.0 1.12.5 1.13.0 1.2.3+build.7",
        ),
        ("^0.2.3", "0.2.5"),
        ("^0.0.3", "0.0.3"),
        ("^0", "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5"),
    ]);
}

#[test]
fn table_and_or_hyphen() {
    check_rows(&[
        (">=1.11, <1.13", "1.11.0 1.12.5"),
        (">=1.11 <1.13", "1.11.0 1.12.5"),
        (
            ">=1.2.3, <2.0.0 || >3.0.0",
            "1.2.3 1.2.9 1.3.0 1.11.0 1.12.5 1.13.0 3.1.0 1.2.3+build.7",
        ),
        ("1.2 - 1.3", "1.2.0 1.2.3 1.2.9 1.3.0 1.2.3+build.7"),
        // without spaces this is version 1.2 with prerelease `1.4.5`
        ("1.2-1.4.5", "1.2.0 1.2.3 1.2.9 1.2.3+build.7"),
    ]);
    assert_eq!(c("1.2 - 1.3"), c(">=1.2, <=1.3"));
    assert_eq!(
        c("1.0 - 2.0 || 3.0.0 - 3.1"),
        c(">=1.0 <=2.0 || >=3.0.0 <=3.1")
    );
    assert!(c("1.2-1.4.5").matches(&v("1.2.7-rc.1")));
}

#[test]
fn table_prerelease_rule() {
    check_rows(&[
        (">=1.3.0-0", "1.3.0 1.3.0-rc.1 1.11.0 1.12.5 1.13.0 2.0.0-rc.1 2.0.0 2.5.0 3.0.0 3.1.0"),
        ("<2.0.0-0", "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 1.0.0 1.2.0 1.2.3 1.2.9 1.3.0 1.3.0-rc.1 1.11.0 1.12.5 1.13.0 1.2.3+build.7"),
        (">=1.2.3 <2.0.0 || 1.3.0-rc.1", "1.2.3 1.2.9 1.3.0 1.3.0-rc.1 1.11.0 1.12.5 1.13.0 1.2.3+build.7"),
    ]);
    // the rule is per OR-group: one prerelease bound opens its whole group, no other
    assert!(c(">=1.0.0-0 <2.0.0").matches(&v("1.5.0-beta")));
    assert!(c("<2.0.0 >=0.0.0-0").matches(&v("1.5.0-beta")));
    assert!(!c("<2.0.0 || >=3.0.0-0").matches(&v("1.5.0-beta")));
    assert!(!c("!=1.2.x").matches(&v("1.5.0-rc.1")));
}

#[test]
fn table_semver_mode_successors() {
    check_rows(&[
        ("^1.2.3, != 1.2.3", "1.2.9 1.3.0 1.11.0 1.12.5 1.13.0"),
        ("^0.2.0, != 0.2.0", "0.2.5"),
        ("^0.0.3, != 0.0.3", ""),
    ]);
}

#[test]
fn caret_successor() {
    for (installed, want) in [
        ("1.2.3", "1.2.9 1.3.0 1.11.0 1.12.5 1.13.0"),
        ("0.2.0", "0.2.5"),
        ("0.0.3", ""),
    ] {
        let built = caret_successor_of(&v(installed));
        assert_eq!(built, c(&format!("^{installed}, != {installed}")));
        assert_eq!(matching_in(&built, VERSIONS), want, "{installed}");
    }
    let pre = caret_successor_of(&v("1.3.0-rc.1+b"));
    assert_eq!(pre, c("^1.3.0-rc.1, != 1.3.0-rc.1"));
    assert_eq!(
        matching_in(&pre, "1.3.0-rc.1 1.3.0-rc.2 1.4.0"),
        "1.3.0-rc.2 1.4.0"
    );
}

#[test]
fn equivalences() {
    let all =
        format!("{VERSIONS} 0.0.0 0.0.9 0.1.7 0.9.0 1.1.0 1.2.99 1.3.1 1.99.0 2.0.1 2.1.0 10.0.0");
    for (a, b) in [
        ("1.2.x", ">=1.2.0 <1.3.0"),
        ("<=1.x", "<2"),
        (">1.2", ">=1.3.0"),
        (">1", ">=2.0.0"),
        ("~1.2.3", ">=1.2.3 <1.3.0"),
        ("~>1.2.3", "~1.2.3"),
        ("~1.2", ">=1.2.0 <1.3.0"),
        ("~1", ">=1 <2"),
        ("^1.2.3", ">=1.2.3 <2.0.0"),
        ("^0.2.3", ">=0.2.3 <0.3.0"),
        ("^0.0.3", ">=0.0.3 <0.0.4"),
        ("^0.0", "<0.1.0"),
        ("^0", "<1.0.0"),
        ("1.2 - 1.3", ">=1.2 <=1.3"),
        ("=>1.2", ">=1.2"),
        ("=<1.2", "<=1.2"),
        ("<=1.2", "<1.3.0"),
        ("!=1.2.x", "<1.2.0 || >=1.3.0"),
        ("!=1.x", "<1 || >=2"),
        ("1.2.X", "1.2.x"),
        ("1.02.3", "1.2.3"),
        ("*", ">=0.0.0"),
        ("^*", "=0.0.0"),
        ("<*", "<0.0.0"),
        ("  >=  1.11 ,  < 1.13  ", ">=1.11,<1.13"),
    ] {
        assert_eq!(
            matching_in(&c(a), &all),
            matching_in(&c(b), &all),
            "{a} vs {b}"
        );
    }
}

#[test]
fn parse_errors() {
    for (s, msg) in [
        ("", r#"improper constraint: """#),
        ("1.0 ||", r#"improper constraint: """#),
        ("|| 1.0", r#"improper constraint: """#),
        (">=1.0,,<2", r#"improper constraint: ">=1.0,,<2""#),
        ("1.0,", r#"improper constraint: "1.0,""#),
        ("abc", r#"improper constraint: "abc""#),
        ("> = 1.0", r#"improper constraint: "> = 1.0""#),
        ("1.2.3.4", r#"improper constraint: "1.2.3.4""#),
        (">=1.0<2.0", r#"improper constraint: ">=1.0<2.0""#),
        ("1.2.3 -1.4", r#"improper constraint: "1.2.3 -1.4""#),
        ("==1.0", r#"improper constraint: "==1.0""#),
        ("!1.0", r#"improper constraint: "!1.0""#),
        ("1.2.3-01", "constraint parser error"),
        ("1x.2", "constraint parser error"),
        ("1|2.0", "constraint parser error"),
        ("99999999999999999999.0.0", "constraint parser error"),
    ] {
        let e = Constraint::parse(s).expect_err(s);
        assert_eq!(e.to_string(), msg, "{s:?}");
    }
}
