//! The workspace's history, `DIR/history.json`: per mirror-to-disk run, when it ran (UTC) and
//! the files it added (blobs by digest, and whatever else the run names). Archives are cut
//! from it: what the previous run added, by default, or what every run since a date added
//! (`--since`).
//!
//! `--since DATE` means what oc-mirror means: oc-mirror packs every blob not known to its
//! latest history file written strictly before DATE at 00:00 UTC, so a run on DATE itself is
//! included. Here: the additions of every run at or after `DATE`T00:00:00Z.
//!
//! ```json
//! {"version":1,"runs":[{"date":"2026-11-27","time":"2026-11-27T19:09:17Z","added":["blobs/sha256/…"]}]}
//! ```

use super::MirrorError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

pub const FILE: &str = "history.json";
const VERSION: u32 = 1;

/// The whole history, oldest run first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    pub version: u32,
    pub runs: Vec<Run>,
}

/// One mirror-to-disk run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    /// RFC 3339, UTC, whole seconds (`2026-11-27T19:09:17Z`).
    pub time: String,
    /// Paths relative to the workspace, sorted.
    pub added: Vec<PathBuf>,
}

/// A `--since` date, `YYYY-MM-DD`, checked.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(String);

impl Date {
    /// Parses `YYYY-MM-DD` (oc-mirror's `--since` format); the error says what is expected.
    pub fn parse(s: &str) -> Result<Date, MirrorError> {
        if valid_date(s) {
            Ok(Date(s.to_string()))
        } else {
            Err(MirrorError::from(format!(
                "--since {s:?}: expected a date as YYYY-MM-DD"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn valid_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return false;
    }
    let month: u32 = s[5..7].parse().unwrap_or(0);
    let day: u32 = s[8..10].parse().unwrap_or(0);
    let year: u32 = s[0..4].parse().unwrap_or(0);
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `YYYY-MM-DDTHH:MM:SSZ` with a valid date and time.
fn valid_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 20 || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        if b[r.clone()].iter().all(u8::is_ascii_digit) {
            s[r].parse().ok()
        } else {
            None
        }
    };
    valid_date(&s[..10])
        && num(11..13).is_some_and(|h| h < 24)
        && num(14..16).is_some_and(|m| m < 60)
        && num(17..19).is_some_and(|x| x < 60)
}

/// Parses and checks a history (the text of `history.json`); the error says what is wrong.
pub fn parse(text: &str) -> Result<History, MirrorError> {
    let h: History =
        serde_json::from_str(text).map_err(|e| MirrorError::from(format!("{FILE}: {e}")))?;
    if h.version != VERSION {
        return Err(MirrorError::from(format!(
            "{FILE}: version {} is not {VERSION}",
            h.version
        )));
    }
    for (i, r) in h.runs.iter().enumerate() {
        if !valid_time(&r.time) || r.date != r.time[..10] {
            return Err(MirrorError::from(format!(
                "{FILE}: run {}: time {:?} and date {:?} are not a UTC RFC 3339 time and its date",
                i + 1,
                r.time,
                r.date
            )));
        }
        if let Some(p) = r.added.iter().find(|p| !plain(p)) {
            return Err(MirrorError::from(format!(
                "{FILE}: run {}: {} is not a plain relative path",
                i + 1,
                p.display()
            )));
        }
    }
    Ok(h)
}

fn plain(p: &Path) -> bool {
    !p.as_os_str().is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Reads `dir/history.json`; a workspace without one has an empty history.
pub fn read(dir: &Path) -> Result<History, MirrorError> {
    let path = dir.join(FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text).map_err(|e| MirrorError::from(format!("{}: {e}", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(History {
            version: VERSION,
            runs: Vec::new(),
        }),
        Err(e) => Err(MirrorError::from(format!("{}: {e}", path.display()))),
    }
}

/// Appends a run at `now` that added `added` (sorted, each once) to `dir/history.json`,
/// rewritten atomically. Returns the new history.
pub fn record(dir: &Path, added: &[PathBuf], now: SystemTime) -> Result<History, MirrorError> {
    let h = with_run(read(dir)?, added, now)?;
    write(dir, &h)?;
    Ok(h)
}

/// `h` with a run at `now` that added `added` (sorted, each once), not yet written.
pub fn with_run(
    mut h: History,
    added: &[PathBuf],
    now: SystemTime,
) -> Result<History, MirrorError> {
    if let Some(p) = added.iter().find(|p| !plain(p)) {
        return Err(MirrorError::from(format!(
            "{}: not a plain relative path",
            p.display()
        )));
    }
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let time = crate::text::rfc3339(secs);
    let added: BTreeSet<PathBuf> = added.iter().cloned().collect();
    h.runs.push(Run {
        date: time[..10].to_string(),
        time,
        added: added.into_iter().collect(),
    });
    Ok(h)
}

/// Writes `h` as `dir/history.json`, atomically.
pub fn write(dir: &Path, h: &History) -> Result<(), MirrorError> {
    let mut text =
        serde_json::to_string_pretty(h).map_err(|e| MirrorError::from(format!("{FILE}: {e}")))?;
    text.push('\n');
    super::workspace::write_named(&dir.join(FILE), text.as_bytes())
}

/// The blobs in the workspace's layout now, as `blobs/<algorithm>/<hex>` paths: taken before
/// and after a run, their difference is what the run added (for [`record`]). A workspace
/// without blobs has none.
pub fn blobs(dir: &Path) -> Result<BTreeSet<PathBuf>, MirrorError> {
    crate::oci::layout_reader::blobs(dir).map_err(|e| MirrorError::from(e.to_string()))
}

/// `h` without `gone` (blobs a delete removed from the layout): no run added them any more,
/// so no archive names them.
pub fn forget(h: &mut History, gone: &BTreeSet<PathBuf>) {
    for run in &mut h.runs {
        run.added.retain(|p| !gone.contains(p));
    }
}

/// What to pack: with no date, what the last run added (the run that just mirrored, when the
/// caller recorded it first); with a date, what every run at or after that date (00:00 UTC)
/// added. Sorted, each once.
pub fn added_since(history: &History, since: Option<&Date>) -> Vec<PathBuf> {
    let runs: Vec<&Run> = match since {
        None => history.runs.last().into_iter().collect(),
        Some(d) => history
            .runs
            .iter()
            .filter(|r| r.date.as_str() >= d.as_str())
            .collect(),
    };
    let all: BTreeSet<&PathBuf> = runs.iter().flat_map(|r| &r.added).collect();
    all.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(time: &str) -> SystemTime {
        // 2026-11-01T00:00:00Z plus the day and seconds written after it.
        let (day, secs) = time.split_once('+').unwrap();
        let day: u64 = day.parse().unwrap();
        let secs: u64 = secs.parse().unwrap();
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_793_491_200 + (day - 1) * 86_400 + secs)
    }

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn runs_are_recorded_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().runs.is_empty());
        record(
            dir.path(),
            &paths(&["blobs/sha256/b", "blobs/sha256/a", "blobs/sha256/a"]),
            at("3+3600"),
        )
        .unwrap();
        let h = read(dir.path()).unwrap();
        assert_eq!(h.runs[0].date, "2026-11-03");
        assert_eq!(h.runs[0].time, "2026-11-03T01:00:00Z");
        assert_eq!(
            h.runs[0].added,
            paths(&["blobs/sha256/a", "blobs/sha256/b"])
        );
        let err = record(dir.path(), &paths(&["../x"]), at("4+0"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a plain relative path"), "{err}");
    }

    fn three_runs() -> History {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), &paths(&["a", "b"]), at("3+86399")).unwrap();
        record(dir.path(), &paths(&["c"]), at("5+0")).unwrap();
        record(dir.path(), &paths(&["d", "a"]), at("5+7200")).unwrap()
    }

    #[test]
    fn without_a_date_the_last_run() {
        assert_eq!(added_since(&three_runs(), None), paths(&["a", "d"]));
        assert!(added_since(&History::default(), None).is_empty());
    }

    #[test]
    fn since_a_date_includes_that_day() {
        let h = three_runs();
        let since = |d: &str| added_since(&h, Some(&Date::parse(d).unwrap()));
        assert_eq!(since("2026-11-01"), paths(&["a", "b", "c", "d"]));
        assert_eq!(since("2026-11-03"), paths(&["a", "b", "c", "d"]));
        assert_eq!(since("2026-11-04"), paths(&["a", "c", "d"]));
        assert_eq!(since("2026-11-05"), paths(&["a", "c", "d"]));
        assert!(since("2026-11-06").is_empty());
    }

    #[test]
    fn blobs_now_and_their_difference() {
        let dir = tempfile::tempdir().unwrap();
        assert!(blobs(dir.path()).unwrap().is_empty());
        std::fs::create_dir_all(dir.path().join("blobs/sha256")).unwrap();
        std::fs::write(dir.path().join("blobs/sha256/a"), "").unwrap();
        let before = blobs(dir.path()).unwrap();
        std::fs::write(dir.path().join("blobs/sha256/b"), "").unwrap();
        std::fs::write(dir.path().join("blobs/sha256/.tmpXy12"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("blobs/sha512")).unwrap();
        std::fs::write(dir.path().join("blobs/sha512/c"), "").unwrap();
        std::fs::write(dir.path().join("blobs/stray"), "").unwrap();
        let after = blobs(dir.path()).unwrap();
        let added: Vec<PathBuf> = after.difference(&before).cloned().collect();
        assert_eq!(added, paths(&["blobs/sha256/b", "blobs/sha512/c"]));
    }

    #[test]
    fn dates_are_checked() {
        for ok in ["2026-11-27", "2024-02-29", "2000-02-29"] {
            assert!(Date::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "2026-11-31",
            "2026-13-01",
            "2026-02-29",
            "1900-02-29",
            "2026-1-01",
            "20261127",
            "2026-11-27T00:00:00Z",
            "",
        ] {
            let err = Date::parse(bad).unwrap_err().to_string();
            assert!(err.contains("YYYY-MM-DD"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_damaged_history_is_named() {
        let good = r#"{"version":1,"runs":[{"date":"2026-11-27","time":"2026-11-27T19:09:17Z","added":["blobs/sha256/a"]}]}"#;
        assert_eq!(parse(good).unwrap().runs.len(), 1);
        for (bad, want) in [
            ("", "history.json"),
            (r#"{"version":2,"runs":[]}"#, "version 2"),
            (r#"{"version":1,"runs":[],"extra":1}"#, "unknown field"),
            (&good.replace("11-27\"", "11-28\""), "run 1"),
            (&good.replace("19:09:17Z", "25:09:17Z"), "run 1"),
            (&good.replace("19:09:17Z", "19:09:17+01:00"), "run 1"),
            (
                &good.replace("blobs/sha256/a", "/etc/passwd"),
                "not a plain relative path",
            ),
            (
                &good.replace("blobs/sha256/a", "blobs/../../x"),
                "not a plain relative path",
            ),
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains(want), "{bad}: {err}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{").unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
    }
}
