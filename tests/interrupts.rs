//! SIGINT and SIGTERM to each long-running command: one line saying it was interrupted and what
//! that leaves, exit 130, and no temporary file or directory left behind (in the output's
//! directory or in TMPDIR); until a command makes a temporary file, it has no watcher thread.
//! `ingest` and `serve` have their own tests (`cli_paths_and_signals`); `mirror` is interrupted
//! in the middle of a copy and then rerun.

use crate::common::{bin, corpus_valid, unsafe_kill};
use crate::image_build::{base_layout, opreg_labels};
use crate::mirror::put_digests;
use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::faults::{Action, Seen};
use crate::registry_support::Registry;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Names in `dir` (recursively) that a writer in progress leaves: temporary files and staging
/// directories.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(".tmp")
            || name.starts_with("opreg-image")
            || name.starts_with(".opreg-")
        {
            out.push(e.path().display().to_string());
        }
        if e.path().is_dir() {
            out.extend(leftovers(&e.path()));
        }
    }
    out
}

/// Runs opreg ARGS (TMPDIR `tmp`), signals it with `sig` after `after`, and returns its exit
/// code and stderr. The command must still be running when the signal comes.
fn interrupted(args: &[&str], tmp: &Path, sig: i32, after: Duration) -> (Option<i32>, String) {
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(bin())
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    assert!(
        child.try_wait().unwrap().is_none(),
        "opreg {args:?} ended before the signal: {}",
        std::fs::read_to_string(err.path()).unwrap_or_default()
    );
    unsafe_kill(child.id() as i32, sig);
    let code = child.wait().unwrap().code();
    (
        code,
        std::fs::read_to_string(err.path()).unwrap_or_default(),
    )
}

#[test]
fn long_commands_say_they_were_interrupted_and_leave_nothing_behind() {
    let community = corpus_valid("community-operators.fbc.json");
    let c = community.to_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    let tmp = work.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let base = base_layout(&work.path().join("base"), &opreg_labels());
    let layout = work.path().join("out");
    let target = format!("oci:{}", layout.display());
    let runs: [(&str, Vec<&str>); 4] = [
        ("validate", vec!["validate", c]),
        ("render", vec!["render", c]),
        ("diff", vec!["diff", c, c]),
        (
            "image build",
            vec!["image", "build", c, "--base", &base, "-t", &target],
        ),
    ];
    for (name, args) in &runs {
        for sig in [2, 15] {
            let (code, err) = interrupted(args, &tmp, sig, Duration::from_millis(400));
            assert_eq!(code, Some(130), "{name}, signal {sig}: {err}");
            let said: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
            assert_eq!(said.len(), 1, "{name}, signal {sig}: {err}");
            assert!(
                said[0].starts_with("error: interrupted; nothing"),
                "{name}, signal {sig}: {err}"
            );
            let left = [leftovers(&tmp), leftovers(work.path())].concat();
            assert!(left.is_empty(), "{name}, signal {sig}: {left:?}");
            assert!(
                !layout.exists(),
                "{name}, signal {sig}: nothing was written"
            );
        }
    }
}

#[test]
fn an_interrupted_mirror_says_so_and_a_rerun_finishes_it() {
    // Every blob read from the source takes a while, so the run can be caught in the middle.
    let src = Source::start_with(Some(Box::new(|s: &Seen, _| {
        if s.method == "GET" && s.path.contains("/blobs/") {
            std::thread::sleep(Duration::from_millis(250));
        }
        Action::Relay
    })));
    let dst = Registry::http();
    let relay = crate::mirror::watch(&dst);
    let ctx = Ctx::new();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let ws = ctx.path("ws");
    let dest = format!("docker://127.0.0.1:{}/m", relay.port);
    let args = [
        "mirror",
        "--use-http",
        "--config",
        cfg.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        &dest,
    ];
    let err = ctx.path("stderr");
    let mut child = ctx
        .cmd(&args, &[])
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while put_digests(&relay, 0).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "nothing uploaded"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe_kill(child.id() as i32, 15);
    let code = child.wait().unwrap().code();
    let text = std::fs::read_to_string(&err).unwrap();
    assert_eq!(code, Some(130), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("error: interrupted; every image completed so far")),
        "{text}"
    );
    assert!(leftovers(&ws).is_empty(), "{:?}", leftovers(&ws));
    let (code, _, e) = ctx.run(&args);
    assert_eq!(code, 0, "the rerun finishes: {e}");
}

/// The process's thread count, from /proc.
fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line["Threads:".len()..].trim().parse().unwrap()
}

#[test]
fn the_interrupt_watcher_thread_starts_only_when_it_is_needed() {
    // A second thread makes every system call dearer: a command that has made no temporary
    // file, with a plain-text line to say, has none; the signal handler says the line itself.
    // A JSON line is stamped when it is written, so that form starts the watcher at once.
    let community = corpus_valid("community-operators.fbc.json");
    let c = community.to_str().unwrap();
    for (format, want_threads) in [("text", 1), ("json", 2)] {
        let err = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(bin())
            .args(["--log-format", format, "validate", c])
            .stdout(Stdio::null())
            .stderr(err.reopen().unwrap())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        assert!(child.try_wait().unwrap().is_none(), "validate ended early");
        assert_eq!(threads(child.id()), want_threads, "{format}");
        unsafe_kill(child.id() as i32, 2);
        let code = child.wait().unwrap().code();
        let said = std::fs::read_to_string(err.path()).unwrap();
        assert_eq!(code, Some(130), "{format}: {said}");
        assert_eq!(said.lines().count(), 1, "{format}: {said}");
        assert!(
            said.contains("interrupted; nothing was written"),
            "{format}: {said}"
        );
    }
}
