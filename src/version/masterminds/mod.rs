//! Version constraints in the dialect of `github.com/Masterminds/semver/v3` (v3.5), used by
//! OLM v1 for `ClusterExtension.spec.source.catalog.version` and, historically, for the
//! "semver" upgrade mode (`^V, != V`). Behaviour follows the library, verified against its own output:
//! `=`/none, `!=`, `>`, `<`, `>=`/`=>`, `<=`/`=<`, `~`/`~>`, `^`, optional `v`, partial
//! versions and `x`/`X`/`*` wildcards, hyphen ranges `A - B`, AND by comma or whitespace,
//! OR by `||`, build metadata ignored, and the group-level prerelease rule: a prerelease
//! only matches inside an OR-group where some comparator itself carries a prerelease.
//! Acceptance is the library's, not the (stricter) ClusterExtension CRD regex.

use std::cmp::Ordering;
use std::fmt;

use crate::text::go_quote;

use semver::{Prerelease, Version};

/// A parsed constraint: OR-groups of ANDed comparators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    groups: Vec<Group>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Group {
    comparators: Vec<Comparator>,
    /// Some comparator carries a prerelease, so prerelease versions may match.
    has_pre: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Comparator {
    op: Op,
    /// The bound, wildcards and missing parts zeroed, build metadata dropped.
    con: Version,
    wild: Wild,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `=` or no operator: exact, or tilde when the version is partial/wildcarded.
    Equal,
    NotEqual,
    Greater,
    Less,
    GreaterEq,
    LessEq,
    Tilde,
    Caret,
}

/// First wildcarded or missing part: `*` (Major), `1` / `1.x` (Minor), `1.2` / `1.2.x` (Patch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wild {
    None,
    Major,
    Minor,
    Patch,
}

/// A constraint parse failure; `message` is Masterminds' error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintError {
    pub message: String,
}

impl fmt::Display for ConstraintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConstraintError {}

impl Constraint {
    /// Masterminds `NewConstraint`: hyphen ranges are rewritten to `>= A, <= B` first, then
    /// the text is split on `||` and each group must be a comma/whitespace separated list
    /// of `op version` items.
    pub fn parse(s: &str) -> Result<Constraint, ConstraintError> {
        let rewritten = rewrite_hyphen_ranges(s);
        let mut groups = Vec::new();
        for seg in rewritten.split("||") {
            let items = split_items(seg).ok_or_else(|| ConstraintError {
                message: format!("improper constraint: {}", go_quote(seg)),
            })?;
            let comparators = items
                .into_iter()
                .map(|(op, cv)| comparator(op, cv))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| ConstraintError {
                    message: "constraint parser error".into(),
                })?;
            let has_pre = comparators.iter().any(|c| !c.con.pre.is_empty());
            groups.push(Group {
                comparators,
                has_pre,
            });
        }
        Ok(Constraint { groups })
    }

    /// Masterminds `Check` (with `IncludePrerelease` unset).
    pub fn matches(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|g| g.comparators.iter().all(|c| c.check(v, g.has_pre)))
    }
}

/// `^V, != V`: the successor filter of OLM v1's removed "semver" upgrade mode (`^V, != V`).
pub fn caret_successor_of(v: &Version) -> Constraint {
    let mut con = v.clone();
    con.build = semver::BuildMetadata::EMPTY;
    let exact = |op| Comparator {
        op,
        con: con.clone(),
        wild: Wild::None,
    };
    Constraint {
        groups: vec![Group {
            comparators: vec![exact(Op::Caret), exact(Op::NotEqual)],
            has_pre: !v.pre.is_empty(),
        }],
    }
}

impl Comparator {
    fn check(&self, v: &Version, include_pre: bool) -> bool {
        if !v.pre.is_empty() && !include_pre {
            return false;
        }
        let c = &self.con;
        let ord = precedence(v, c);
        match (self.op, self.wild) {
            (Op::Equal, Wild::None) => ord == Ordering::Equal,
            (Op::Equal | Op::Tilde, _) => self.tilde(v, ord),
            (Op::Less, _) => ord == Ordering::Less,
            (Op::GreaterEq, _) => ord != Ordering::Less,
            (Op::Greater, Wild::None) => ord == Ordering::Greater,
            (Op::Greater, wild) => match v.major.cmp(&c.major) {
                Ordering::Equal => match wild {
                    Wild::Minor => false,
                    Wild::Patch => v.minor > c.minor,
                    _ => ord == Ordering::Greater,
                },
                major => major == Ordering::Greater,
            },
            (Op::LessEq, Wild::None) => ord != Ordering::Greater,
            (Op::LessEq, wild) => {
                v.major < c.major
                    || (v.major == c.major && (v.minor <= c.minor || wild == Wild::Minor))
            }
            (Op::NotEqual, Wild::None) => ord != Ordering::Equal,
            (Op::NotEqual, wild) => {
                if v.major != c.major {
                    true
                } else if wild == Wild::Minor {
                    false
                } else if v.minor != c.minor {
                    true
                } else if wild == Wild::Patch {
                    // same major.minor: only a differing prerelease escapes `!= 1.2.x`
                    v.pre != c.pre
                } else {
                    ord != Ordering::Equal
                }
            }
            (Op::Caret, _) => {
                if ord == Ordering::Less {
                    false
                } else if c.major > 0 || self.wild == Wild::Minor {
                    v.major == c.major
                } else if v.major > 0 {
                    false
                } else if c.minor > 0 || self.wild == Wild::Patch {
                    v.minor == c.minor
                } else {
                    v.minor == 0 && v.patch == c.patch
                }
            }
        }
    }

    /// `~`: at least the bound, same major, same minor unless only the major was given;
    /// `~0.0.0` and `~*` accept everything.
    fn tilde(&self, v: &Version, ord: Ordering) -> bool {
        let c = &self.con;
        if ord == Ordering::Less {
            return false;
        }
        if (c.major, c.minor, c.patch) == (0, 0, 0) && matches!(self.wild, Wild::None | Wild::Major)
        {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.wild == Wild::Minor)
    }
}

/// Precedence ignoring build metadata (release above its prereleases).
fn precedence(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| a.pre.cmp(&b.pre))
}

/// The textual parts of one constraint version (`v?N(.N)?(.N)?(-pre)?(+build)?`, where a
/// numeric part is a run of `0-9 | x X *` as in Masterminds' pattern).
#[derive(Debug, Clone, Copy)]
struct Cv<'a> {
    text: &'a str,
    major: &'a str,
    minor: Option<&'a str>,
    patch: Option<&'a str>,
    pre: Option<&'a str>,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

fn run(b: &[u8], mut i: usize, class: fn(u8) -> bool) -> usize {
    while i < b.len() && class(b[i]) {
        i += 1;
    }
    i
}

fn num_class(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'x' | b'X' | b'*' | b'|')
}

fn ident_class(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Greedy match of a constraint version at `start` (its greedy extent is the only one the
/// surrounding patterns can use, since no version byte is whitespace, `,` or an operator).
fn scan_cv(s: &str, start: usize) -> Option<(usize, Cv<'_>)> {
    let b = s.as_bytes();
    let mut i = start + usize::from(b.get(start) == Some(&b'v'));
    let major_end = run(b, i, num_class);
    if major_end == i {
        return None;
    }
    let major = &s[i..major_end];
    i = major_end;
    let mut numeric = [None, None];
    for slot in &mut numeric {
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(|&c| num_class(c)) {
            let end = run(b, i + 1, num_class);
            *slot = Some(&s[i + 1..end]);
            i = end;
        }
    }
    let mut pre = None;
    for marker in [b'-', b'+'] {
        if b.get(i) == Some(&marker) && b.get(i + 1).is_some_and(|&c| ident_class(c)) {
            let from = i + 1;
            i = run(b, from, ident_class);
            while b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(|&c| ident_class(c)) {
                i = run(b, i + 1, ident_class);
            }
            if marker == b'-' {
                pre = Some(&s[from..i]);
            }
        }
    }
    let cv = Cv {
        text: &s[start..i],
        major,
        minor: numeric[0],
        patch: numeric[1],
        pre,
    };
    Some((i, cv))
}

/// Rewrite every `\s*A\s+-\s+B\s*` (leftmost, non-overlapping) to `>= A, <= B `, replacing
/// the first occurrence of the matched text each time, as Masterminds does.
fn rewrite_hyphen_ranges(s: &str) -> String {
    let b = s.as_bytes();
    let mut found = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let Some((start, end, t)) = (pos..b.len()).find_map(|start| {
            let (e1, a) = scan_cv(s, skip_ws(b, start))?;
            let dash = skip_ws(b, e1);
            if dash == e1 || b.get(dash) != Some(&b'-') || skip_ws(b, dash + 1) == dash + 1 {
                return None;
            }
            let (e2, z) = scan_cv(s, skip_ws(b, dash + 1))?;
            let end = skip_ws(b, e2);
            Some((start, end, format!(">= {}, <= {} ", a.text, z.text)))
        }) else {
            break;
        };
        found.push((&s[start..end], t));
        pos = end;
    }
    let mut out = s.to_string();
    for (matched, replacement) in found {
        out = out.replacen(matched, &replacement, 1);
    }
    out
}

/// Validate one OR-segment and split it into `(operator, version)` items:
/// `\s* op \s* cv \s*` followed by more items, each after whitespace or a comma.
fn split_items(seg: &str) -> Option<Vec<(Op, Cv<'_>)>> {
    let b = seg.as_bytes();
    let mut items = Vec::new();
    let mut i = skip_ws(b, 0);
    loop {
        let op_end = run(b, i, |c| {
            matches!(c, b'=' | b'!' | b'<' | b'>' | b'~' | b'^')
        });
        let op = match &seg[i..op_end] {
            "" | "=" => Op::Equal,
            "!=" => Op::NotEqual,
            ">" => Op::Greater,
            "<" => Op::Less,
            ">=" | "=>" => Op::GreaterEq,
            "<=" | "=<" => Op::LessEq,
            "~" | "~>" => Op::Tilde,
            "^" => Op::Caret,
            _ => return None,
        };
        let (end, cv) = scan_cv(seg, skip_ws(b, op_end))?;
        items.push((op, cv));
        i = skip_ws(b, end);
        if i == b.len() {
            return Some(items);
        }
        if b[i] == b',' {
            i = skip_ws(b, i + 1);
        } else if i == end {
            return None;
        }
    }
}

fn is_x(part: &str) -> bool {
    matches!(part, "x" | "X" | "*")
}

/// Build a comparator the way Masterminds' `parseConstraint` does; `None` is its
/// "constraint parser error" (non-numeric part, overflow, bad prerelease).
fn comparator(op: Op, cv: Cv<'_>) -> Option<Comparator> {
    let pre = cv.pre.unwrap_or("");
    let (parts, wild) = if is_x(cv.major) {
        (["0", "0", "0"], Wild::Major)
    } else if cv.minor.is_none_or(is_x) {
        ([cv.major, "0", "0"], Wild::Minor)
    } else if cv.patch.is_none_or(is_x) {
        ([cv.major, cv.minor?, "0"], Wild::Patch)
    } else {
        ([cv.major, cv.minor?, cv.patch?], Wild::None)
    };
    // Masterminds coerces: leading zeros are allowed in the numeric parts.
    let num = |p: &str| {
        if p.bytes().all(|b| b.is_ascii_digit()) {
            p.parse::<u64>().ok()
        } else {
            None
        }
    };
    let mut con = Version::new(num(parts[0])?, num(parts[1])?, num(parts[2])?);
    con.pre = Prerelease::new(pre).ok()?;
    Some(Comparator { op, con, wild })
}

#[cfg(test)]
mod tests;
