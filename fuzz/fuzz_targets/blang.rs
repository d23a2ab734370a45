//! blang ranges and versions (`olm.skipRange`, bundle versions). Input: range text, NUL,
//! version text. Parses the version strictly (`blang::parse_version`) and tolerantly
//! (`blang::parse_tolerant`), the range with `blang::Range::parse`, and matches every parsed
//! version, plus a few fixed ones, against the range.
#![no_main]
use libfuzzer_sys::fuzz_target;
use opreg::version::blang;

fuzz_target!(|data: &[u8]| {
    let (range, version) = opreg_fuzz::first_file(data);
    let range = String::from_utf8_lossy(range);
    let version = String::from_utf8_lossy(version);
    let mut versions: Vec<semver::Version> = ["0.0.0", "1.2.3", "1.2.3-alpha.1", "2.0.0+build"]
        .iter()
        .map(|v| semver::Version::parse(v).expect("fixed version"))
        .collect();
    versions.extend(blang::parse_version(&version).ok());
    versions.extend(blang::parse_tolerant(&version).ok());
    // A skipRange is also parsed as a version when it is one (validation does so).
    let _ = blang::parse_version(&range);
    let _ = blang::parse_tolerant(&range);
    if let Ok(r) = blang::Range::parse(&range) {
        for v in &versions {
            let _ = r.matches(v);
        }
    }
});
