//! Go's duration syntax (`time.ParseDuration`): `1s`, `500ms`, `1m30s`, `2.5s`, `1h`, as
//! grpc_health_probe's flags, `serve --poll-interval` and `mirror --image-timeout` take it.

use std::time::Duration;

/// Why a duration is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("empty duration")]
    Empty,
    #[error("invalid duration {0:?}")]
    Syntax(String),
    #[error("invalid duration {given:?}: unknown unit {unit:?}")]
    Unit { given: String, unit: String },
    /// What [`parse_within`] says of text that is not a duration.
    #[error("{0:?} is not a duration like 30s, 5m or 1h30m")]
    NotADuration(String),
    #[error("{given:?} must be between {min} and {max}")]
    OutOfRange {
        given: String,
        min: String,
        max: String,
    },
}

/// Parses a Go duration such as `1s`, `500ms`, `1m30s`, `2.5s` (or `0`).
pub fn parse(s: &str) -> Result<Duration, Invalid> {
    let syntax = || Invalid::Syntax(s.to_string());
    let mut total = 0f64;
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(Invalid::Empty);
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(syntax());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| syntax())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => {
                return Err(Invalid::Unit {
                    given: s.to_string(),
                    unit: u.to_string(),
                })
            }
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| syntax())
}

/// [`parse`], and at least `min` and at most `max`.
pub fn parse_within(s: &str, min: Duration, max: Duration) -> Result<Duration, Invalid> {
    let d = parse(s).map_err(|_| Invalid::NotADuration(s.to_string()))?;
    if !(min..=max).contains(&d) {
        return Err(Invalid::OutOfRange {
            given: s.to_string(),
            min: short(min),
            max: short(max),
        });
    }
    Ok(d)
}

/// `d` in the largest unit that divides it (`100ms`, `24h`), for messages.
fn short(d: Duration) -> String {
    let ns = d.as_nanos();
    for (unit, size) in [
        ("h", 3_600_000_000_000u128),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if ns > 0 && ns.is_multiple_of(size) {
            return format!("{}{unit}", ns / size);
        }
    }
    if ns == 0 {
        "0".into()
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert!(parse("5 parsecs").is_err());
    }

    #[test]
    fn refusals_say_why() {
        assert_eq!(parse("").unwrap_err().to_string(), "empty duration");
        assert_eq!(
            parse("s").unwrap_err().to_string(),
            r#"invalid duration "s""#
        );
        assert_eq!(parse("1.2.3s"), Err(Invalid::Syntax("1.2.3s".into())));
        assert_eq!(
            parse("3d").unwrap_err().to_string(),
            r#"invalid duration "3d": unknown unit "d""#
        );
        assert!(parse("5").is_err(), "a number without a unit");
    }

    #[test]
    fn within_bounds() {
        let (min, max) = (Duration::from_millis(100), Duration::from_secs(86400));
        assert_eq!(parse_within("5m", min, max), Ok(Duration::from_secs(300)));
        assert_eq!(parse_within("100ms", min, max), Ok(min));
        assert_eq!(
            parse_within("50ms", min, max).unwrap_err().to_string(),
            r#""50ms" must be between 100ms and 24h"#
        );
        assert!(parse_within("25h", min, max).is_err());
        assert_eq!(
            parse_within("soon", min, max).unwrap_err().to_string(),
            r#""soon" is not a duration like 30s, 5m or 1h30m"#
        );
    }
}
