//! Versions and ranges in the dialect of `github.com/blang/semver/v4`, which both OLM
//! clients use for bundle versions (`Parse`, `ParseTolerant`) and for `olm.skipRange`
//! (`ParseRange`). Behaviour follows the library, verified against its own output,
//! including blang's quirks: operator/version spaces are joined,
//! tokens shorter than two bytes vanish, `x` wildcards are expanded textually, a hyphen
//! range degrades to two exact matches, and prereleases are ordinary versions (plain
//! precedence comparison, build metadata ignored). Error texts are blang's, verbatim.

use std::cmp::Ordering;
use std::fmt;

use crate::text::go_quote;

use semver::{BuildMetadata, Prerelease, Version};

/// Strict blang `Parse`: `MAJOR.MINOR.PATCH[-pre][+build]`, no `v`, no leading zeros.
pub fn parse_version(s: &str) -> Result<Version, VersionError> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let major = number(parts[0], "major", "Major")?;
    let minor = number(parts[1], "minor", "Minor")?;
    let (mut rest, mut pre, mut build) = (parts[2], None, None);
    if let Some(i) = rest.find('+') {
        build = Some(&rest[i + 1..]);
        rest = &rest[..i];
    }
    if let Some(i) = rest.find('-') {
        pre = Some(&rest[i + 1..]);
        rest = &rest[..i];
    }
    let patch = number(rest, "patch", "Patch")?;
    for id in pre.iter().flat_map(|p| p.split('.')) {
        if id.is_empty() {
            return Err("Prerelease is empty".into());
        } else if all_digits(id) {
            if id.len() > 1 && id.starts_with('0') {
                return Err(VersionError::from(format!(
                    "Numeric PreRelease version must not contain leading zeroes {}",
                    go_quote(id)
                )));
            }
            parse_uint(id)?;
        } else if !id.bytes().all(is_ident_byte) {
            return Err(VersionError::from(format!(
                "Invalid character(s) found in prerelease {}",
                go_quote(id)
            )));
        }
    }
    for id in build.iter().flat_map(|b| b.split('.')) {
        if id.is_empty() {
            return Err("Build meta data is empty".into());
        } else if !id.bytes().all(is_ident_byte) {
            return Err(VersionError::from(format!(
                "Invalid character(s) found in build meta data {}",
                go_quote(id)
            )));
        }
    }
    let mut v = Version::new(major, minor, patch);
    v.pre = Prerelease::new(pre.unwrap_or("")).map_err(|e| VersionError::from(e.to_string()))?;
    v.build =
        BuildMetadata::new(build.unwrap_or("")).map_err(|e| VersionError::from(e.to_string()))?;
    Ok(v)
}

/// blang `ParseTolerant`: trims whitespace and one leading `v`, strips leading zeros from
/// the three dot-separated parts and fills in a missing minor/patch with `0`.
pub fn parse_tolerant(s: &str) -> Result<Version, VersionError> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_string();
            }
            let t = p.trim_start_matches('0');
            match t.bytes().next() {
                Some(b) if b.is_ascii_digit() => t.to_string(),
                _ => format!("0{t}"),
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts[parts.len() - 1].contains(['+', '-']) {
            return Err("Short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".to_string());
    }
    parse_version(&parts.join("."))
}

/// A parsed `ParseRange` expression: alternatives (`||`) of comparator conjunctions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    alternatives: Vec<Vec<Comparator>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Comparator {
    op: Op,
    version: Version,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A `Parse` or `ParseTolerant` failure, in blang's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VersionError(String);

impl From<String> for VersionError {
    fn from(words: String) -> Self {
        VersionError(words)
    }
}

impl From<&str> for VersionError {
    fn from(words: &str) -> Self {
        VersionError(words.to_string())
    }
}

/// A `ParseRange` failure; `message` is blang's error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeError {
    pub message: String,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RangeError {}

fn err<T>(message: String) -> Result<T, RangeError> {
    Err(RangeError { message })
}

impl Range {
    /// blang `ParseRange`. Wildcard tokens are rewritten before any comparator is parsed,
    /// so a wildcard error anywhere wins over a comparator error in an earlier token.
    pub fn parse(s: &str) -> Result<Range, RangeError> {
        let mut groups: Vec<Vec<String>> = vec![Vec::new()];
        let tokens = tokenize(s);
        for (i, tok) in tokens.iter().enumerate() {
            if tok == "||" {
                if i == 0 {
                    return err("First element in range is '||'".into());
                }
                groups.push(Vec::new());
            } else {
                groups.last_mut().expect("non-empty").push(tok.clone());
            }
        }
        if tokens.last().is_none_or(|t| t == "||") {
            return err("Last element in range is '||'".into());
        }
        let mut expanded = Vec::with_capacity(groups.len());
        for group in groups {
            let mut out = Vec::new();
            for tok in group {
                if tok.contains('x') {
                    expand_wildcard(&tok, &mut out)?;
                } else {
                    out.push(tok);
                }
            }
            expanded.push(out);
        }
        let mut alternatives = Vec::with_capacity(expanded.len());
        for group in expanded {
            let mut conj = Vec::with_capacity(group.len());
            for tok in group {
                conj.push(parse_comparator(&tok)?);
            }
            alternatives.push(conj);
        }
        Ok(Range { alternatives })
    }

    /// Plain precedence comparison; prereleases are not special, build metadata ignored.
    /// An empty alternative (`a || || b`) matches nothing (blang itself would panic).
    pub fn matches(&self, v: &Version) -> bool {
        self.alternatives.iter().any(|conj| {
            !conj.is_empty()
                && conj.iter().all(|c| {
                    let ord = precedence(v, &c.version);
                    match c.op {
                        Op::Eq => ord == Ordering::Equal,
                        Op::Ne => ord != Ordering::Equal,
                        Op::Gt => ord == Ordering::Greater,
                        Op::Ge => ord != Ordering::Less,
                        Op::Lt => ord == Ordering::Less,
                        Op::Le => ord != Ordering::Greater,
                    }
                })
        })
    }
}

/// Split on single spaces unless the last non-space byte seen was `>`, `<` or `=`; drop
/// pieces shorter than two bytes (measured before inner spaces are removed).
fn tokenize(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut start, mut last) = (0usize, 0u8);
    for (i, b) in s.bytes().enumerate() {
        if b == b' ' && !matches!(last, b'>' | b'<' | b'=') {
            if start + 1 < i {
                out.push(&s[start..i]);
            }
            start = i + 1;
        } else if b != b' ' {
            last = b;
        }
    }
    if start + 1 < s.len() {
        out.push(&s[start..]);
    }
    out.into_iter().map(|t| t.replace(' ', "")).collect()
}

/// Operator before the first digit (trimmed), version from it on.
fn split_op(tok: &str) -> Result<(&str, &str), RangeError> {
    match tok.find(|c: char| c.is_ascii_digit()) {
        Some(i) => Ok((tok[..i].trim(), &tok[i..])),
        None => err(format!(
            "Could not get version from string: {}",
            go_quote(tok)
        )),
    }
}

/// Textual wildcard rewrite, replicating blang: `.x.x` → `.x` once, then `.x` → `.0` once,
/// two parts get `.0` appended; the bound is bumped at the wildcard's parent position.
fn expand_wildcard(tok: &str, out: &mut Vec<String>) -> Result<(), RangeError> {
    let (op, ver) = split_op(tok)?;
    let parts: Vec<&str> = ver.split('.').collect();
    let bump_at = match (parts.len(), parts[parts.len() - 1]) {
        (3, "x") => Some(1),
        (2, "x") => Some(0),
        _ => None,
    };
    let mut flat = ver.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
    if flat.split('.').count() == 2 {
        flat.push_str(".0");
    }
    let (result_op, bump) = match op {
        ">" => (">=", true),
        ">=" => (">=", false),
        "<" => ("<", false),
        "<=" => ("<", true),
        "" | "=" | "==" => {
            out.push(format!(">={flat}"));
            ("<", true)
        }
        "!=" | "!" => {
            out.push(format!("<{flat}"));
            (">=", true)
        }
        _ => ("", false),
    };
    let result_ver = match (bump, bump_at) {
        (false, _) => flat,
        (true, Some(idx)) => increment(&flat, idx),
        (true, None) => String::new(),
    };
    out.push(format!("{result_op}{result_ver}"));
    Ok(())
}

/// Go `Atoi`/`Itoa` on one dot-separated part; failure yields an empty string.
fn increment(flat: &str, idx: usize) -> String {
    let mut parts: Vec<String> = flat.split('.').map(str::to_string).collect();
    match parts.get(idx).and_then(|p| p.parse::<i64>().ok()) {
        Some(n) => {
            parts[idx] = n.wrapping_add(1).to_string();
            parts.join(".")
        }
        None => String::new(),
    }
}

fn parse_comparator(tok: &str) -> Result<Comparator, RangeError> {
    let (op_str, ver) = split_op(tok)?;
    let joined = format!("{op_str}{ver}");
    let op = match op_str {
        "" | "=" | "==" => Op::Eq,
        "!" | "!=" => Op::Ne,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        _ => {
            return err(format!(
                "Could not parse Range {}: Could not parse comparator {} in {}",
                go_quote(tok),
                go_quote(op_str),
                go_quote(&joined)
            ))
        }
    };
    match parse_version(ver) {
        Ok(version) => Ok(Comparator { op, version }),
        Err(e) => err(format!(
            "Could not parse Range {}: Could not parse version {} in {}: {e}",
            go_quote(tok),
            go_quote(ver),
            go_quote(&joined)
        )),
    }
}

fn precedence(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| a.pre.cmp(&b.pre))
}

/// Digits only; mirrors blang's leading-zero check and Go's `ParseUint` errors.
fn number(s: &str, lower: &str, upper: &str) -> Result<u64, VersionError> {
    if !all_digits(s) {
        return Err(VersionError::from(format!(
            "Invalid character(s) found in {lower} number {}",
            go_quote(s)
        )));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(VersionError::from(format!(
            "{upper} number must not contain leading zeroes {}",
            go_quote(s)
        )));
    }
    parse_uint(s)
}

fn parse_uint(s: &str) -> Result<u64, VersionError> {
    s.parse::<u64>().map_err(|_| {
        let why = if s.is_empty() {
            "invalid syntax"
        } else {
            "value out of range"
        };
        VersionError::from(format!("strconv.ParseUint: parsing {}: {why}", go_quote(s)))
    })
}

fn all_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

#[cfg(test)]
mod tests;
