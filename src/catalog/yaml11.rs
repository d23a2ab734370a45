//! YAML 1.1 scalars. opreg reads YAML as YAML 1.2, where a plain `on`, `yes` or `no` is a
//! string; opm reads it through go-yaml v2, as YAML 1.1, where those are booleans (and `1_000`
//! or `0777` numbers). Where a plain scalar is a string to opreg and something
//! else to opm, [`warnings`] says so (`warning[yaml11]`), naming the file, the line and the
//! scalar: opm refuses it where a string is needed, and changes its type anywhere else.
//! `validate --warnings-as-errors` turns these into failures, for a CI that must pass opm too.

use super::fbc::goyaml;
use crate::diag::{Diagnostic, Rule};
use crate::model::Origin;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// At most this many warnings per file; one more line counts the rest.
const MAX_PER_FILE: usize = 20;

/// The `warning[yaml11]`s of `text`, the YAML stream of `file`.
pub fn warnings(text: &str, file: &str) -> Vec<Diagnostic> {
    if !text.lines().any(line_may_hold_one) {
        return Vec::new();
    }
    let mut found = Found::default();
    // A stream that does not parse is the YAML decoder's to report, not this check's.
    let _ = Parser::new_from_str(text).load(&mut found, true);
    let origin = Origin::file(file);
    let mut out: Vec<Diagnostic> = found
        .hits
        .iter()
        .take(MAX_PER_FILE)
        .map(|(value, reading, mark)| {
            Diagnostic::warning(
                Rule::Yaml11,
                format!(
                    "line {}: the plain scalar {value} is a string to opreg but {reading} to opm \
                     (YAML 1.1): opm refuses it where a string is needed and changes its type \
                     elsewhere",
                    mark.line()
                ),
            )
            .at(&origin)
            .help(format!(
                "quote it (\"{value}\") so that both read the string"
            ))
        })
        .collect();
    if found.hits.len() > MAX_PER_FILE {
        out.push(
            Diagnostic::warning(
                Rule::Yaml11,
                format!(
                    "{} more plain scalars that opm reads as YAML 1.1 booleans or numbers",
                    found.hits.len() - MAX_PER_FILE
                ),
            )
            .at(&origin),
        );
    }
    out
}

/// What go-yaml v2 makes of `s` written plain, when opreg's YAML reads it as a string and
/// go-yaml does not: "the boolean true", "the boolean false" or "a number".
pub fn opm_reading(s: &str) -> Option<&'static str> {
    let reading = match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => "the boolean true",
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => "the boolean false",
        _ if number_shape(s) && goyaml::resolves_to_non_string(s) => "a number",
        _ => return None,
    };
    // Only where opreg's own reading is a string (YAML 1.2 reads `0777` as a number, say).
    let ours = yaml_serde::from_str::<serde_json::Value>(s);
    matches!(ours, Ok(serde_json::Value::String(_))).then_some(reading)
}

/// Numbers YAML 1.1 has and opreg's YAML may read as strings: digit separators, `0b` binary,
/// leading-zero octal.
fn number_shape(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let first_digit = unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    (first_digit && unsigned.contains('_'))
        || unsigned.starts_with("0b")
        || (unsigned.len() > 1
            && unsigned.starts_with('0')
            && unsigned.bytes().all(|b| b.is_ascii_digit()))
}

/// A cheap look at one line, so that most files are never parsed twice: does a key or a value
/// on it (block or flow style) have one of the shapes [`opm_reading`] looks for?
fn line_may_hold_one(line: &str) -> bool {
    let mut l = line.trim_start();
    while let Some(rest) = l.strip_prefix("- ") {
        l = rest.trim_start();
    }
    let l = l.split(" #").next().unwrap_or(l);
    let (key, value) = match l.split_once(": ") {
        Some((k, v)) => (Some(k), v),
        None => (None, l.strip_suffix(':').unwrap_or(l)),
    };
    let shaped = |t: &str| {
        let t = t.trim().trim_matches(['[', ']', '{', '}']).trim();
        !t.is_empty() && (number_shape(t) || opm_reading_word(t))
    };
    key.is_some_and(shaped) || value.split([',', ':']).any(shaped)
}

fn opm_reading_word(t: &str) -> bool {
    matches!(
        t,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// The plain scalars opm reads otherwise, with where they start.
#[derive(Default)]
struct Found {
    hits: Vec<(String, &'static str, Marker)>,
}

impl MarkedEventReceiver for Found {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        // A tagged scalar (`!!str on`) is read as its tag says, by both.
        if let Event::Scalar(value, TScalarStyle::Plain, _, None) = ev {
            if let Some(reading) = opm_reading(&value) {
                self.hits.push((value, reading, mark));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        warnings(text, "f.yaml")
            .iter()
            .map(|d| d.message.clone())
            .collect()
    }

    #[test]
    fn plain_yaml11_booleans_and_numbers_are_named_with_their_line() {
        let text = "schema: olm.package\nname: on\ndescription: |\n  on\nvalues: [yes, \"no\", 'off', 1_000]\ncount: 0777\nplain: 12\n";
        let got = lines(text);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(
            got[0].starts_with(
                "line 2: the plain scalar on is a string to opreg but the boolean true"
            ),
            "{got:?}"
        );
        assert!(
            got[1].starts_with("line 5: the plain scalar yes"),
            "{got:?}"
        );
        assert!(
            got[2].starts_with("line 5: the plain scalar 1_000 is a string to opreg but a number"),
            "{got:?}"
        );
        assert!(
            got[3].starts_with("line 6: the plain scalar 0777"),
            "{got:?}"
        );
    }

    #[test]
    fn numbers_only_yaml11_has() {
        assert_eq!(opm_reading("1_000"), Some("a number"));
        assert_eq!(opm_reading("0777"), Some("a number"));
        // A number to both.
        assert_eq!(opm_reading("0b101"), None);
        assert_eq!(opm_reading("12"), None);
        assert_eq!(opm_reading("1.0.0"), None);
        assert_eq!(opm_reading("v1_0"), None);
        assert_eq!(opm_reading("Off"), Some("the boolean false"));
        assert_eq!(opm_reading("true"), None);
    }

    #[test]
    fn quoted_tagged_and_block_scalars_are_left_alone() {
        let text = "a: \"on\"\nb: 'yes'\nc: !!str no\nd: |\n  off\ne: >\n  y\n";
        assert!(lines(text).is_empty());
    }

    #[test]
    fn many_are_counted_not_listed() {
        let text: String = (0..30).map(|i| format!("k{i}: on\n")).collect();
        let got = lines(&text);
        assert_eq!(got.len(), MAX_PER_FILE + 1);
        assert!(got[MAX_PER_FILE].starts_with("10 more"), "{got:?}");
    }
}
