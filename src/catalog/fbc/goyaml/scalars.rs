//! How go-yaml v2 reads and orders scalars: which plain strings read back as something else
//! (a bool, null, number or timestamp, per its resolver), how it sorts mapping keys, and how Go
//! prints a float.

use std::cmp::Ordering;

/// go-yaml's key order: letters after other characters, runs of digits compared as numbers.
pub fn key_order(a: &str, b: &str) -> Ordering {
    if a == b {
        Ordering::Equal
    } else if key_less(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let digit = |c: char| c.is_ascii_digit();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, with go-yaml's names for infinities and NaN.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    crate::text::go_shortest(f)
}

/// True when go-yaml would read `s`, written plain, as something other than a string (a
/// bool, null, int, float or timestamp), so that it must be quoted.
pub fn resolves_to_non_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    match s.as_bytes()[0] {
        b'.' => go_parse_float(s),
        b'0'..=b'9' | b'+' | b'-' => {
            if is_timestamp(s) {
                return true;
            }
            let plain = s.replace('_', "");
            go_parse_int(&plain) || (yaml_style_float(&plain) && finite_float(&plain))
        }
        _ => false,
    }
}

fn finite_float(s: &str) -> bool {
    s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat` for text starting with `.` (decimal forms with `_` between
/// digits).
fn go_parse_float(s: &str) -> bool {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let ok =
                i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !ok {
                return false;
            }
        }
    }
    let plain = s.replace('_', "");
    yaml_style_float(&plain) && finite_float(&plain)
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` accepts `s`.
fn go_parse_int(s: &str) -> bool {
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => (0, s),
    };
    if rest.is_empty() {
        return false;
    }
    let lower = rest.to_ascii_lowercase();
    let (radix, digits) = if lower.len() >= 3 && lower.starts_with("0b") {
        (2, &rest[2..])
    } else if lower.len() >= 3 && lower.starts_with("0o") {
        (8, &rest[2..])
    } else if lower.len() >= 3 && lower.starts_with("0x") {
        (16, &rest[2..])
    } else if let Some(octal) = rest.strip_prefix('0') {
        (8, octal)
    } else {
        (10, rest)
    };
    let mut n: u128 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            return false;
        };
        n = n * radix as u128 + d as u128;
        if n > u64::MAX as u128 {
            return false;
        }
    }
    match sign {
        -1 => n <= 1u128 << 63,
        1 => n <= i64::MAX as u128,
        _ => true,
    }
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`: go-yaml quotes these for YAML 1.1
/// readers.
pub(super) fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) || !s.contains(':') {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        match i - st {
            1 => {}
            2 if b[st] <= b'5' => {}
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml's timestamp forms: `YYYY-M-D`, optionally followed by `T`, `t` or a space, a time
/// `h:m:s` with an optional fraction, and (after `T`/`t`) a zone `Z` or `±hh:mm`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    let num = |i: &mut usize, max_len: usize| -> Option<u32> {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - st < max_len {
            *i += 1;
        }
        if *i == st {
            None
        } else {
            s[st..*i].parse().ok()
        }
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = num(&mut i, 2) else {
        return false;
    };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in(month, year) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let sep = b[i];
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    let ok_time = (|| {
        let h = num(&mut i, 2)?;
        (b.get(i) == Some(&b':')).then_some(())?;
        i += 1;
        let m = num(&mut i, 2)?;
        (b.get(i) == Some(&b':')).then_some(())?;
        i += 1;
        let sec = num(&mut i, 2)?;
        (h < 24 && m < 60 && sec < 60).then_some(())
    })();
    if ok_time.is_none() {
        return false;
    }
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if sep == b' ' {
        return i == b.len();
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let z = &b[i + 1..];
            z.len() == 5
                && z[..2].iter().all(u8::is_ascii_digit)
                && z[2] == b':'
                && z[3..].iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "_x" before "1": at the first difference neither is a letter, so go-yaml compares the
    // numbers the digit runs spell there, and "_x" has none (0 < 1).
    #[test]
    fn keys_sort_naturally() {
        let mut keys = vec!["a10", "a9", "b", "A", "_x", "a", "1"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["_x", "1", "A", "a", "a9", "a10", "b"]);
    }

    #[test]
    fn floats_print_like_go() {
        assert_eq!(go_float(4.1), "4.1");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e-7), "1e-07");
        assert_eq!(go_float(1234567.5), "1.2345675e+06");
        assert_eq!(go_float(0.0001), "0.0001");
    }
}
