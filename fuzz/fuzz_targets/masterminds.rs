//! Masterminds constraints (OLM v1 `--version`). Input: constraint text, NUL, version text.
//! Parses the constraint with `masterminds::Constraint::parse` and the version with
//! `blang::parse_version` / `blang::parse_tolerant` (how the resolver reads bundle versions),
//! then matches every parsed version, plus a few fixed ones, against the constraint and
//! against `masterminds::caret_successor_of` each version (the "semver" upgrade mode).
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::version::{blang, masterminds};

fuzz_target!(|data: &[u8]| {
    let (constraint, version) = opreg_fuzz::first_file(data);
    let constraint = String::from_utf8_lossy(constraint);
    let version = String::from_utf8_lossy(version);
    let mut versions: Vec<semver::Version> = ["0.0.0", "1.2.3", "1.2.3-alpha.1", "2.0.0+build"]
        .iter()
        .map(|v| semver::Version::parse(v).expect("fixed version"))
        .collect();
    versions.extend(blang::parse_version(&version).ok());
    versions.extend(blang::parse_tolerant(&version).ok());
    if let Ok(c) = masterminds::Constraint::parse(&constraint) {
        for v in &versions {
            let _ = c.matches(v);
        }
    }
    for v in &versions {
        let succ = masterminds::caret_successor_of(v);
        for w in &versions {
            let _ = succ.matches(w);
        }
    }
});
