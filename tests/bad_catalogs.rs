//! The bad-input corpus: every case directory under `tests/bad-catalogs/` holds a malformed
//! catalog and the error it must produce. Adding a case needs no code here.
//!
//! A case is `tests/bad-catalogs/<NNN-name>/` with
//!
//! * `catalog` — the SOURCE given to `opreg ingest` (a directory or a single file); it may be
//!   absent when `setup:` lines create it;
//! * `expect` — `key: value` lines (`#` starts a comment):
//!   * `rule: <id>` — the rule id of the error (`error[<id>]`), required;
//!   * `file: <path>` — the file the error must name, relative to `catalog` (`.` = the source
//!     itself), required; the error line must name exactly that path;
//!   * `message: <text>` — a substring of the same error line (repeatable);
//!   * `setup: <op>` — run before ingesting, on a copy of `catalog` (repeatable):
//!     `mkdir <path>`, `symlink <link> <target>` (`.` = the source itself), or
//!     `generate <path> <kind>` for inputs too large or too odd to commit (see [`generate`]);
//!   * `existing-output: unchanged` — also ingest over an existing database, which must stay
//!     byte-identical with the same mtime.
//!
//! For every case the driver copies `catalog` to a temporary directory, applies `setup:`, runs
//! `opreg ingest <catalog> -o <out>/out.db` and checks: exit code 1; an `error[<rule>]` line
//! naming the file (and holding each `message:`); no panic or backtrace; stderr of bounded size
//! (a 50 MB name must not make a 150 MB error report); and an output directory left empty (no
//! database, no `.opreg-ingest-*` temp file). A case that has not finished after five minutes is
//! killed and reported as hung; this is a guard against infinite loops, not a timing assertion.

use crate::common;
use common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Largest stderr accepted for one bad catalog.
const MAX_STDERR: usize = 256 * 1024;
/// A case running longer than this is hung (the slowest case takes about a second).
const HANG_LIMIT: Duration = Duration::from_secs(300);

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-catalogs")
}

#[derive(Debug, Default)]
struct Expect {
    rule: String,
    file: String,
    messages: Vec<String>,
    setup: Vec<String>,
    keep_existing: bool,
}

fn parse_expect(text: &str) -> Result<Expect, String> {
    let mut e = Expect::default();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, v) = line
            .split_once(':')
            .ok_or_else(|| format!("expect line without a key: {line:?}"))?;
        let v = v.trim().to_string();
        match k.trim() {
            "rule" => e.rule = v,
            "file" => e.file = v,
            "message" => e.messages.push(v),
            "setup" => e.setup.push(v),
            "existing-output" if v == "unchanged" => e.keep_existing = true,
            other => return Err(format!("unknown expect key {other:?}")),
        }
    }
    if e.rule.is_empty() || e.file.is_empty() {
        return Err("expect needs a rule: and a file: line".into());
    }
    Ok(e)
}

/// Copies a case's catalog (file or tree) byte for byte.
fn copy_tree(src: &Path, dst: &Path) {
    let meta = std::fs::symlink_metadata(src).unwrap();
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(src).unwrap();
        std::os::unix::fs::symlink(target, dst).unwrap();
    } else if meta.is_dir() {
        std::fs::create_dir_all(dst).unwrap();
        let mut children: Vec<_> = std::fs::read_dir(src)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        children.sort();
        for c in children {
            copy_tree(&src.join(&c), &dst.join(&c));
        }
    } else {
        std::fs::copy(src, dst).unwrap();
    }
}

/// `rel` under the case's catalog; `.` is the catalog path itself.
fn under(catalog: &Path, rel: &str) -> PathBuf {
    if rel == "." {
        catalog.to_path_buf()
    } else {
        catalog.join(rel)
    }
}

fn apply_setup(catalog: &Path, op: &str) -> Result<(), String> {
    let words: Vec<&str> = op.split_whitespace().collect();
    match words.as_slice() {
        ["mkdir", path] => std::fs::create_dir_all(under(catalog, path)).map_err(|e| e.to_string()),
        ["symlink", link, target] => {
            let link = under(catalog, link);
            if link == catalog && catalog.is_dir() {
                std::fs::remove_dir_all(catalog).map_err(|e| e.to_string())?;
            }
            std::fs::create_dir_all(link.parent().unwrap()).map_err(|e| e.to_string())?;
            std::os::unix::fs::symlink(target, &link).map_err(|e| e.to_string())
        }
        ["generate", path, kind] => {
            let path = under(catalog, path);
            std::fs::create_dir_all(path.parent().unwrap()).map_err(|e| e.to_string())?;
            generate(&path, kind)
        }
        _ => Err(format!("unknown setup {op:?}")),
    }
}

const DEPTH: usize = 100_000;
const HUGE: usize = 50 * 1024 * 1024;

/// Inputs built at test time instead of committed: huge strings, deep nesting, databases.
fn generate(path: &Path, kind: &str) -> Result<(), String> {
    let pkg = r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}"#;
    let chan =
        r#"{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"a.v1"}]}"#;
    let bytes: Vec<u8> = match kind {
        // A 50 MB package name in an otherwise well-formed JSON meta.
        "huge-json-name" => format!(
            "{{\"schema\":\"olm.package\",\"name\":\"{}\",\"defaultChannel\":\"stable\"}}\n",
            "a".repeat(HUGE)
        )
        .into_bytes(),
        // A 50 MB double-quoted YAML scalar that never closes.
        "huge-yaml-unterminated" => {
            format!("schema: olm.package\nname: \"{}\n", "a".repeat(HUGE)).into_bytes()
        }
        // One JSON object holding 100k nested arrays (upstream re-reads it as YAML).
        "deep-json-arrays" => format!(
            "{{\"schema\":\"olm.package\",\"name\":\"p\",\"x\":{}{}}}\n",
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        )
        .into_bytes(),
        // Two good objects commit the stream to JSON; the third nests 100k objects.
        "deep-json-objects" => format!(
            "{pkg}\n{chan}\n{{\"schema\":\"olm.bundle\",\"x\":{}1{}}}\n",
            "{\"a\":".repeat(DEPTH),
            "}".repeat(DEPTH)
        )
        .into_bytes(),
        "deep-yaml-flow" => format!(
            "schema: olm.package\nname: p\nx: {}{}\n",
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        )
        .into_bytes(),
        // `- - - … 1`: 100k nested block sequences on one line.
        "deep-yaml-block" => {
            format!("schema: olm.package\nname: p\nx:\n  {}1\n", "- ".repeat(DEPTH)).into_bytes()
        }
        "deep-yaml-maps" => format!(
            "schema: olm.package\nname: p\nx: {}1{}\n",
            "{a: ".repeat(DEPTH),
            "}".repeat(DEPTH)
        )
        .into_bytes(),
        // A CSV in a bundle directory whose spec nests 100k flow sequences.
        "deep-yaml-csv" => format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: p.v1.0.0\nspec:\n  version: 1.0.0\n  x: {}{}\n",
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        )
        .into_bytes(),
        // A well-formed SQLite database that is neither an opreg catalog nor an upstream index.
        "sqlite-foreign" => {
            let c = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
            c.execute_batch(
                "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
                 INSERT INTO notes (body) VALUES ('not a catalog');",
            )
            .map_err(|e| e.to_string())?;
            return Ok(());
        }
        other => return Err(format!("unknown generator {other:?}")),
    };
    std::fs::write(path, bytes).map_err(|e| e.to_string())
}

/// Runs the binary with a hang guard; returns (exit code, stderr).
fn run_guarded(args: &[&Path]) -> Result<(i32, String), String> {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if start.elapsed() > HANG_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("hung: still running after {HANG_LIMIT:?}, killed"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let err = reader.join().unwrap();
    Ok((
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&err).into_owned(),
    ))
}

fn short(s: &str) -> String {
    const MAX: usize = 3000;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Ingests the case; checks exit code, error line, stderr hygiene. Returns stderr.
fn ingest_fails_as_expected(catalog: &Path, out: &Path, e: &Expect) -> Result<String, String> {
    let (code, err) = run_guarded(&[Path::new("ingest"), catalog, Path::new("-o"), out])?;
    if code != 1 {
        return Err(format!(
            "exit code {code}, expected 1; stderr:\n{}",
            short(&err)
        ));
    }
    for bad in ["panicked", "RUST_BACKTRACE", "stack overflow"] {
        if err.contains(bad) {
            return Err(format!("stderr contains {bad:?}:\n{}", short(&err)));
        }
    }
    if err.len() > MAX_STDERR {
        return Err(format!(
            "stderr is {} bytes (limit {MAX_STDERR}):\n{}",
            err.len(),
            short(&err)
        ));
    }
    let file = under(catalog, &e.file).display().to_string();
    let tag = format!("error[{}]", e.rule);
    let names_file =
        |l: &str| l.contains(&format!("{file}:")) || l.contains(&format!("{file} (document"));
    let found = err.lines().any(|l| {
        l.contains(&tag) && names_file(l) && e.messages.iter().all(|m| l.contains(m.as_str()))
    });
    if !found {
        return Err(format!(
            "no line with {tag}, naming {file}, containing {:?}; stderr:\n{}",
            e.messages,
            short(&err)
        ));
    }
    Ok(err)
}

fn check_case(case: &Path, scratch: &Path, reference_db: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(case.join("expect"))
        .map_err(|err| format!("cannot read expect: {err}"))?;
    let e = parse_expect(&text)?;
    let src = case.join("catalog");
    let work = scratch.join("src");
    std::fs::create_dir_all(&work).unwrap();
    let catalog = work.join("catalog");
    if std::fs::symlink_metadata(&src).is_ok() {
        copy_tree(&src, &catalog);
    } else if e.setup.is_empty() {
        return Err("no catalog and no setup".into());
    } else if !e.setup.iter().any(|s| s.starts_with("generate . ")) {
        std::fs::create_dir_all(&catalog).unwrap();
    }
    for op in &e.setup {
        apply_setup(&catalog, op)?;
    }

    // Fresh output: nothing at all may be left in the output directory.
    let out_dir = scratch.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("out.db");
    ingest_fails_as_expected(&catalog, &out, &e)?;
    let left = dir_entries(&out_dir);
    if !left.is_empty() {
        return Err(format!("a failed ingest left files behind: {left:?}"));
    }

    // Existing output: left byte-identical, same mtime, and still the only file.
    if e.keep_existing {
        std::fs::copy(reference_db, &out).unwrap();
        let before = std::fs::read(&out).unwrap();
        let mtime = std::fs::metadata(&out).unwrap().modified().unwrap();
        ingest_fails_as_expected(&catalog, &out, &e)?;
        if std::fs::read(&out).unwrap() != before {
            return Err("a failed ingest changed the existing output database".into());
        }
        if std::fs::metadata(&out).unwrap().modified().unwrap() != mtime {
            return Err("a failed ingest touched the existing output database".into());
        }
        let left = dir_entries(&out_dir);
        if left != ["out.db"] {
            return Err(format!("a failed ingest left files behind: {left:?}"));
        }
    }
    Ok(())
}

fn case_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/bad-catalogs exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "heavy tier: cargo test --release -- --ignored (CI runs it)"]
fn every_bad_catalog_is_rejected_with_its_error() {
    let cases = case_dirs();
    assert!(
        cases.len() >= 50,
        "the corpus holds {} cases, fewer than 50",
        cases.len()
    );
    let tmp = tempfile::tempdir().unwrap();

    // A valid database to put in the way of the cases that check an existing output.
    let good = tmp.path().join("good.yaml");
    std::fs::write(
        &good,
        "---\nschema: olm.package\nname: p\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n---\nschema: olm.bundle\nname: a.v1\npackage: p\nimage: example.com/p/a:v1\nproperties:\n  - type: olm.package\n    value: {packageName: p, version: 1.0.0}\n",
    )
    .unwrap();
    let reference_db = tmp.path().join("reference.db");
    ingest_ok(&good, &reference_db);

    let mut failures = Vec::new();
    let mut slow = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let start = Instant::now();
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let scratch = tmp.path().join(format!("case-{i}"));
        std::fs::create_dir_all(&scratch).unwrap();
        if let Err(msg) = check_case(case, &scratch, &reference_db) {
            failures.push(format!("{name}: {msg}"));
        }
        // Generated inputs are large; do not keep them around.
        let _ = std::fs::remove_dir_all(&scratch);
        let took = start.elapsed();
        if took > Duration::from_secs(1) {
            slow.push(format!("{name} {took:.1?}"));
        }
    }
    eprintln!(
        "{} bad catalogs checked, {} failed; cases over 1 s: {slow:?}",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} bad catalogs did not fail as expected:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_corpus_covers_every_catalog_rule() {
    // Each rule a catalog can break has at least one case (the rules that only warn never
    // fail an ingest). The list comes from the rules themselves, so a new rule without a case
    // fails here.
    let rules: std::collections::BTreeSet<String> = case_dirs()
        .iter()
        .map(|c| {
            let text = std::fs::read_to_string(c.join("expect")).unwrap();
            parse_expect(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", c.display()))
                .rule
        })
        .collect();
    for r in opreg::diag::Rule::ALL
        .into_iter()
        .filter(|r| r.can_fail_a_catalog())
    {
        assert!(
            rules.contains(r.id()),
            "no bad catalog breaks rule {}",
            r.id()
        );
    }
}
