//! The blang grammar's test tables.
use super::*;

/// The versions of the verified blang table, in table order.
const VERSIONS: &str = "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 1.0.0 1.2.0 1.2.3 1.2.9 1.3.0 \
    1.3.0-rc.1 1.11.0 1.12.5 1.13.0 2.0.0-rc.1 2.0.0 2.5.0 3.0.0 3.1.0 1.2.3+build.7";

fn v(s: &str) -> Version {
    parse_version(s).unwrap()
}

fn r(s: &str) -> Range {
    Range::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

/// The members of `VERSIONS` that `range` accepts, space-separated.
fn matching(range: &str) -> String {
    let range = r(range);
    let hits: Vec<&str> = VERSIONS
        .split_whitespace()
        .filter(|s| range.matches(&v(s)))
        .collect();
    hits.join(" ")
}

fn error(s: &str) -> String {
    Range::parse(s).expect_err(s).to_string()
}

#[test]
fn table_matches() {
    for (range, want) in [
        // prereleases are ordinary versions: 2.0.0-rc.1 < 2.0.0
        (">=1.0.0 <2.0.0", "1.0.0 1.2.0 1.2.3 1.2.9 1.3.0 1.3.0-rc.1 1.11.0 1.12.5 1.13.0 2.0.0-rc.1 1.2.3+build.7"),
        ("<1.0.3", "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 1.0.0"),
        ("1.2.x", "1.2.0 1.2.3 1.2.9 1.3.0-rc.1 1.2.3+build.7"),
        (">=1.11.0 <1.13.0", "1.11.0 1.12.5"),
        ("1.0.0 - 2.0.0", ""),
    ] {
        assert_eq!(matching(range), want, "{range}");
    }
}

#[test]
fn table_parse_errors() {
    for s in [">=1.11, <1.13", "^1.2.3", "~1.2.3", ">=1.0 <2.0", ""] {
        assert!(Range::parse(s).is_err(), "{s:?} should not parse");
    }
}

#[test]
fn hyphen_range_is_two_exact_matches() {
    assert_eq!(r("1.0.0 - 2.0.0"), r("1.0.0 2.0.0"));
}

#[test]
fn wildcard_expansion_table() {
    for (tok, expanded) in [
        ("1.2.x", ">=1.2.0 <1.3.0"),
        ("=1.2.x", ">=1.2.0 <1.3.0"),
        ("==1.2.x", ">=1.2.0 <1.3.0"),
        (">=1.2.x", ">=1.2.0"),
        (">1.2.x", ">=1.3.0"),
        ("<1.2.x", "<1.2.0"),
        ("<=1.2.x", "<1.3.0"),
        ("1.x", ">=1.0.0 <2.0.0"),
        (">1.x", ">=2.0.0"),
        ("<=1.x", "<2.0.0"),
        ("!=1.2.x", "<1.2.0 >=1.3.0"),
        ("!1.2.x", "<1.2.0 >=1.3.0"),
        ("1.x.x", ">=1.0.0 <1.1.0"),
        ("1.2.x || >= 3.x", ">=1.2.0 <1.3.0 || >=3.0.0"),
    ] {
        assert_eq!(r(tok), r(expanded), "{tok}");
    }
}

#[test]
fn wildcard_quirks_match() {
    assert_eq!(matching("!=1.2.x"), "");
    assert_eq!(matching("1.x.x"), "1.0.0");
    assert_eq!(matching(">1.x"), "2.0.0 2.5.0 3.0.0 3.1.0");
    assert_eq!(matching("<=1.x"), matching("<2.0.0"));
    // an unknown operator on a wildcard token degrades to an exact match
    assert_eq!(r("~1.2.x"), r("1.2.0"));
}

#[test]
fn operators_and_spacing() {
    assert_eq!(r("< 0.6.0"), r("<0.6.0"));
    assert_eq!(r(">=  1.0.0   <2.0.0"), r(">=1.0.0 <2.0.0"));
    assert_eq!(r("==1.2.3"), r("1.2.3"));
    assert_eq!(r("=1.2.3"), r("1.2.3"));
    assert_eq!(r("!1.2.3"), r("!=1.2.3"));
    assert_eq!(
        matching("!=1.2.3"),
        "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 1.0.0 1.2.0 1.2.9 1.3.0 1.3.0-rc.1 1.11.0 1.12.5 \
         1.13.0 2.0.0-rc.1 2.0.0 2.5.0 3.0.0 3.1.0"
    );
    assert_eq!(matching(">1.2.3 <=1.3.0"), "1.2.9 1.3.0 1.3.0-rc.1");
    assert_eq!(
        matching("<1.0.0 || >=3.0.0"),
        "0.0.3 0.0.4 0.1.0 0.2.0 0.2.5 3.0.0 3.1.0"
    );
    // one-byte tokens disappear
    assert_eq!(r("1.0.0 a x"), r("1.0.0"));
}

#[test]
fn prereleases_and_build_metadata() {
    assert!(r("<1.0.0").matches(&v("1.0.0-rc.1")));
    assert!(!r(">=1.0.0").matches(&v("1.0.0-rc.1")));
    assert!(r("1.2.3").matches(&v("1.2.3+build.7")));
    assert!(!r(">1.2.3").matches(&v("1.2.3+build.7")));
    assert!(r("1.2.3+other").matches(&v("1.2.3")));
    assert!(r(">1.0.0-rc.2").matches(&v("1.0.0-rc.10")));
    assert!(!r(">1.0.0-rc.2").matches(&v("1.0.0-rc.1")));
}

#[test]
fn empty_alternative_matches_nothing() {
    let range = r("1.0.0 || || 2.0.0");
    assert!(range.matches(&v("1.0.0")));
    assert!(range.matches(&v("2.0.0")));
    assert!(!range.matches(&v("1.5.0")));
}

#[test]
fn error_texts() {
    assert_eq!(error(""), "Last element in range is '||'");
    assert_eq!(error("|| 1.0.0"), "First element in range is '||'");
    assert_eq!(error("1.0.0 ||"), "Last element in range is '||'");
    assert_eq!(
        error("~1.2.3"),
        r#"Could not parse Range "~1.2.3": Could not parse comparator "~" in "~1.2.3""#
    );
    assert_eq!(
        error("^1.2.3"),
        r#"Could not parse Range "^1.2.3": Could not parse comparator "^" in "^1.2.3""#
    );
    assert_eq!(
        error(">=abc"),
        r#"Could not get version from string: ">=abc""#
    );
    assert_eq!(
        error("1.0.0 x.y"),
        r#"Could not get version from string: "x.y""#
    );
    assert_eq!(
        error(">=1.11, <1.13"),
        r#"Could not parse Range ">=1.11,": Could not parse version "1.11," in ">=1.11,": No Major.Minor.Patch elements found"#
    );
    assert_eq!(
        error(">=1.0 <2.0"),
        r#"Could not parse Range ">=1.0": Could not parse version "1.0" in ">=1.0": No Major.Minor.Patch elements found"#
    );
    assert_eq!(
        error(">=01.0.0"),
        r#"Could not parse Range ">=01.0.0": Could not parse version "01.0.0" in ">=01.0.0": Major number must not contain leading zeroes "01""#
    );
    // prerelease containing `x` is taken for a wildcard and loses its upper bound
    assert_eq!(
        error("1.0.0-xyz"),
        r#"Could not get version from string: "<""#
    );
    assert_eq!(r(">=1.0.0-xyz").alternatives[0][0].version, v("1.0.0-xyz"));
}

#[test]
fn strict_parse() {
    let full = v("1.2.3-rc.1+build.7");
    assert_eq!((full.major, full.minor, full.patch), (1, 2, 3));
    assert_eq!(full.pre.as_str(), "rc.1");
    assert_eq!(full.build.as_str(), "build.7");
    for (s, e) in [
        ("", "Version string empty"),
        ("1.2", "No Major.Minor.Patch elements found"),
        (
            "v1.2.3",
            r#"Invalid character(s) found in major number "v1""#,
        ),
        (
            "1.02.3",
            r#"Minor number must not contain leading zeroes "02""#,
        ),
        (
            "1.2.03",
            r#"Patch number must not contain leading zeroes "03""#,
        ),
        (
            "1.2.3.4",
            r#"Invalid character(s) found in patch number "3.4""#,
        ),
        ("1..3", r#"strconv.ParseUint: parsing "": invalid syntax"#),
        ("1.2.3-", "Prerelease is empty"),
        ("1.2.3-rc..1", "Prerelease is empty"),
        (
            "1.2.3-rc.01",
            r#"Numeric PreRelease version must not contain leading zeroes "01""#,
        ),
        (
            "1.2.3-r_c",
            r#"Invalid character(s) found in prerelease "r_c""#,
        ),
        ("1.2.3+", "Build meta data is empty"),
        (
            "1.2.3+b_7",
            r#"Invalid character(s) found in build meta data "b_7""#,
        ),
        (
            "99999999999999999999.0.0",
            r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
        ),
        (
            "1.0.0-99999999999999999999",
            r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
        ),
        (
            " 1.2.3",
            r#"Invalid character(s) found in major number " 1""#,
        ),
    ] {
        assert_eq!(parse_version(s).unwrap_err().to_string(), e, "{s:?}");
    }
    // leading zeros are fine in build metadata, as in blang
    assert_eq!(v("1.2.3+007").build.as_str(), "007");
}

#[test]
fn tolerant_parse() {
    for (s, want) in [
        ("v1.2.3", "1.2.3"),
        ("1.2", "1.2.0"),
        ("1", "1.0.0"),
        (" 1.2.3 ", "1.2.3"),
        ("1.02.3", "1.2.3"),
        ("00.1.0", "0.1.0"),
        ("v1.2.03-rc.1+b", "1.2.3-rc.1+b"),
        ("1.2.0-rc", "1.2.0-rc"),
    ] {
        assert_eq!(parse_tolerant(s).unwrap(), v(want), "{s:?}");
    }
    assert!(parse_tolerant("1.2.3-rc.01").is_err());
    assert!(parse_tolerant("\"1.2.3\"").is_err());
    assert_eq!(
        parse_tolerant("1.2-rc").unwrap_err().to_string(),
        "Short version cannot contain PreRelease/Build meta data"
    );
}
