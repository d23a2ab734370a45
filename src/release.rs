//! Bundle release versions (`olm.package` `release`, upstream PR #1792): the format rules, the
//! normalized bundle name, and the version-then-release order.
//!
//! A release is a dot-separated list of semver prerelease identifiers of at most 20 characters
//! (`1`, `alpha.1`, `gamma1`), with no leading zeros in numeric identifiers. A bundle with a
//! release must be named `<package>-v<version>-<release>` and its version must not carry build
//! metadata. Bundles order by version, then release; at the same version a bundle with a release
//! ranks above one without.
//!
//! A leaf module: validation and the upgrade resolver both use it.

use std::cmp::Ordering;

/// Longest release upstream accepts (the ClusterServiceVersion CRD's limit).
pub const MAX_LEN: usize = 20;

/// An invalid release, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReleaseError(String);

impl From<String> for ReleaseError {
    fn from(words: String) -> Self {
        ReleaseError(words)
    }
}

impl From<&str> for ReleaseError {
    fn from(words: &str) -> Self {
        ReleaseError(words.to_string())
    }
}

/// Checks a non-empty release; the error is upstream's `invalid release ...` text. Segment
/// errors are joined with "; " where upstream joins them with a newline, to keep one
/// diagnostic on one line.
pub fn check(release: &str) -> Result<(), ReleaseError> {
    if release.len() > MAX_LEN {
        return Err(ReleaseError::from(format!(
            "invalid release {release:?}: exceeds maximum length of {MAX_LEN} characters"
        )));
    }
    let errs: Vec<String> = release
        .split('.')
        .enumerate()
        .filter_map(|(i, seg)| segment(seg).err().map(|e| format!("segment {i}: {e}")))
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ReleaseError::from(format!(
            "invalid release {release:?}: {}",
            errs.join("; ")
        )))
    }
}

/// One prerelease identifier, with blang's messages.
fn segment(s: &str) -> Result<(), ReleaseError> {
    if s.is_empty() {
        return Err("Prerelease is empty".into());
    }
    if s.bytes().all(|c| c.is_ascii_digit()) {
        if s.len() > 1 && s.starts_with('0') {
            return Err(ReleaseError::from(format!(
                "Numeric PreRelease version must not contain leading zeroes {s:?}"
            )));
        }
        if s.parse::<u64>().is_err() {
            return Err(ReleaseError::from(format!(
                "strconv.ParseUint: parsing {s:?}: value out of range"
            )));
        }
        return Ok(());
    }
    if s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
        Ok(())
    } else {
        Err(ReleaseError::from(format!(
            "Invalid character(s) found in prerelease {s:?}"
        )))
    }
}

/// The name a bundle with a release must have: `<package>-v<version>-<release>`, where the
/// version is printed as semver prints it (build metadata included).
pub fn normalized_name(package: &str, version: &semver::Version, release: &str) -> String {
    format!("{package}-v{version}-{release}")
}

/// Compares two releases (`None` = no release): no release ranks below any release; otherwise
/// identifiers compare as semver prereleases (numeric below alphanumeric, numbers by value,
/// strings byte-wise, a longer list wins on a common prefix).
pub fn compare(a: Option<&str>, b: Option<&str>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => {
            let pa = semver::Prerelease::new(a);
            let pb = semver::Prerelease::new(b);
            match (pa, pb) {
                (Ok(pa), Ok(pb)) => pa.cmp(&pb),
                _ => a.cmp(b),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_rules() {
        for ok in [
            "1",
            "gamma",
            "gamma1",
            "alpha.1.0.0",
            "0.0.1",
            "a-b",
            "x".repeat(20).as_str(),
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        let e = check("!!!").unwrap_err().to_string();
        assert_eq!(
            e,
            r#"invalid release "!!!": segment 0: Invalid character(s) found in prerelease "!!!""#
        );
        assert!(check("01")
            .unwrap_err()
            .to_string()
            .contains("leading zeroes \"01\""));
        assert!(check("a..b")
            .unwrap_err()
            .to_string()
            .contains("segment 1: Prerelease is empty"));
        assert!(check(&"x".repeat(21))
            .unwrap_err()
            .to_string()
            .contains("exceeds maximum length of 20 characters"));
    }

    #[test]
    fn order_is_none_then_prerelease_order() {
        assert_eq!(compare(None, Some("0")), Ordering::Less);
        assert_eq!(compare(Some("2"), Some("10")), Ordering::Less);
        assert_eq!(compare(Some("10"), Some("alpha")), Ordering::Less);
        assert_eq!(compare(Some("alpha"), Some("alpha.1")), Ordering::Less);
        assert_eq!(compare(Some("b"), Some("b")), Ordering::Equal);
    }

    #[test]
    fn normalized_name_keeps_build_metadata() {
        let v = semver::Version::parse("0.1.0+alpha.1.0.0").unwrap();
        assert_eq!(
            normalized_name("foo", &v, "0.0.1"),
            "foo-v0.1.0+alpha.1.0.0-0.0.1"
        );
    }
}
