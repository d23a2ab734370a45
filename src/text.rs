//! Small text helpers shared by every message opreg prints or sends: Go's `%q` quoting (the
//! range grammars reproduce Go libraries' error texts), eliding the middle of long strings
//! (a catalog can hold a 50 MB name; a diagnostic or a gRPC status quoting it stays readable),
//! "did you mean" suggestions, RFC 3339 dates and Go's shortest float format.

use std::borrow::Cow;

/// Go's `%q` of `s`: double quotes, backslash escapes for quotes, backslashes and control
/// characters (`\a \b \f \n \r \t \v`, `\xNN` below 0x20 and for DEL, `\uNNNN` for the rest).
pub fn go_quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            '\x07' => q.push_str("\\a"),
            '\x08' => q.push_str("\\b"),
            '\x0b' => q.push_str("\\v"),
            '\x0c' => q.push_str("\\f"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                q.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => q.push_str(&format!("\\u{:04x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// `s` whole when it is at most `max` bytes; otherwise its first bytes and its last `tail`
/// bytes (both cut on character boundaries) around a note of how many bytes were left out.
pub fn elide(s: &str, max: usize, tail: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let head = s.floor_char_boundary(max.saturating_sub(tail));
    let start = s.ceil_char_boundary(s.len() - tail);
    format!(
        "{}…[{} bytes elided]…{}",
        &s[..head],
        start - head,
        &s[start..]
    )
    .into()
}

/// The edit distance (insertions, deletions, substitutions of characters) between `a` and `b`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The candidates closest to `name` by [`edit_distance`], best first (ties in the given
/// order), at most `max` of them, and only those near enough to be a plausible typo: at most a
/// third of the longer name's characters differ (at least 2 may).
pub fn nearest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| *c != name)
        .filter_map(|c| {
            let (n, m) = (name.chars().count(), c.chars().count());
            let limit = (n.max(m) / 3).max(2);
            // The distance is at least the difference in length: a name far longer than any
            // candidate (a hostile megabyte) costs nothing instead of n * m steps.
            if n.abs_diff(m) > limit {
                return None;
            }
            let d = edit_distance(name, c);
            (d <= limit).then_some((d, c))
        })
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    scored.into_iter().take(max).map(|(_, c)| c).collect()
}

/// `; did you mean "a" or "b"?` for [`nearest`]'s answer, or nothing.
pub fn did_you_mean(near: &[&str]) -> String {
    match near {
        [] => String::new(),
        [one] => format!("; did you mean {one:?}?"),
        more => {
            let quoted: Vec<String> = more.iter().map(|c| format!("{c:?}")).collect();
            format!("; did you mean one of {}?", quoted.join(", "))
        }
    }
}

/// `seconds` since the epoch as RFC 3339 (UTC, whole seconds).
pub fn rfc3339(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let rem = seconds % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A finite float64 as Go prints it with `%v` (`strconv.FormatFloat(f, 'g', -1, 64)`): the
/// shortest digits, in exponent form (`1e+06`, `1e-05`) when the exponent is below -4 or at
/// least 6. Zero and non-finite values are the caller's to name (Go libraries differ).
pub fn go_shortest(f: f64) -> String {
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// `n` and the noun for it, singular or plural: `count(1, "image", "images")` is `1 image`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// An error on one line: its whole chain (`{:#}`, as anyhow prints causes: `outer: inner`),
/// each line break made `; `. Every one-line error opreg prints, logs or records goes
/// through here.
pub fn one_line(e: impl std::fmt::Display) -> String {
    format!("{e:#}").replace('\n', "; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_names() {
        assert_eq!(edit_distance("olm.pakage", "olm.package"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let names = ["etcd", "etcd-operator", "prometheus"];
        assert_eq!(nearest("ectd", names, 3), vec!["etcd"]);
        assert!(nearest("zzzz", names, 3).is_empty());
        assert_eq!(did_you_mean(&["a"]), "; did you mean \"a\"?");
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(count(1, "image", "images"), "1 image");
        assert_eq!(count(0, "image", "images"), "0 images");
    }

    #[test]
    fn go_quote_escapes_like_go() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("\n\t\x07\x01\x7f"), r#""\n\t\a\x01\x7f""#);
        assert_eq!(go_quote("\u{85}é"), "\"\\u0085é\"");
    }

    #[test]
    fn elide_keeps_both_ends_on_char_boundaries() {
        assert_eq!(elide("short", 10, 2), "short");
        let s = "é".repeat(100);
        let e = elide(&s, 21, 5);
        assert!(e.starts_with("éééééééé…[") && e.ends_with("]…éé"), "{e}");
        assert!(e.contains("bytes elided"));
    }

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(951_825_600), "2000-02-29T12:00:00Z");
    }

    #[test]
    fn errors_on_one_line() {
        let e = anyhow::anyhow!("inner\ndetail").context("outer");
        assert_eq!(one_line(&e), "outer: inner; detail");
        assert_eq!(one_line("a\nb\nc"), "a; b; c");
        let io = std::io::Error::other("plain");
        assert_eq!(one_line(&io), "plain");
    }
}
