//! Exit codes are decided in one place, `cli::exit_code`: the source is read for any other
//! place that decides one (a planted violation of each rule shows the check fails), and the
//! binary is run for the codes clap's own errors and the other dialects end with.

use crate::common::opreg;
use std::path::{Path, PathBuf};

/// The file of the one place, relative to the crate root.
const ONE_PLACE: &str = "src/cli/mod.rs";

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            out.push((p, text));
        }
    }
}

/// The places that decide an exit code outside `cli::exit_code`: `file:line: why`. `files` are
/// (path relative to the crate root, text); comment lines are skipped.
fn second_places(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        let in_cli = path.starts_with("src/cli/");
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let mut bad = |why: &str| found.push(format!("{path}:{}: {why}: {code}", n + 1));
            if code.contains("process::exit") && path != "src/main.rs" {
                bad("exits the process outside main");
            }
            if code.contains("ExitCode") {
                bad("an ExitCode outside cli::exit_code");
            }
            if code.contains("EXIT_") && path != ONE_PLACE {
                bad("names an exit code outside cli::exit_code's file");
            }
            if code.contains("use_stderr()") && path != ONE_PLACE {
                bad("decides clap's usage-or-help code outside cli::exit_code");
            }
            if in_cli && code.contains("-> i32") {
                let allowed = path == ONE_PLACE
                    && (code.starts_with("pub fn run(") || code.starts_with("pub fn exit_code("));
                if !allowed {
                    bad("a function in cli/ returning a code (return an Ended)");
                }
            }
        }
    }
    found
}

#[test]
fn only_cli_exit_code_decides_an_exit_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let files: Vec<(String, String)> = files
        .into_iter()
        .map(|(p, t)| {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, t)
        })
        .collect();
    assert!(files.iter().any(|(p, _)| p == ONE_PLACE));
    let found = second_places(&files);
    assert!(
        found.is_empty(),
        "exit codes decided outside cli::exit_code:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_planted_second_place_is_found() {
    let planted = [
        ("src/cli/opm.rs", "fn run_opm() -> i32 {\n    2\n}\n"),
        ("src/serve/mod.rs", "    std::process::exit(3);\n"),
        (
            "src/cli/image.rs",
            "    return std::process::ExitCode::from(4);\n",
        ),
        ("src/cli/diff.rs", "    return super::EXIT_UNREADABLE;\n"),
        ("src/cli/opm.rs", "    if e.use_stderr() { 2 } else { 0 }\n"),
    ];
    for (path, text) in planted {
        let found = second_places(&[(path.to_string(), text.to_string())]);
        assert_eq!(found.len(), 1, "{path}: {text:?} gave {found:?}");
    }
    // The one place itself, main's exit and comments pass.
    let fine = [
        (
            ONE_PLACE,
            "pub fn exit_code(ended: Ended) -> i32 {\n    EXIT_OK\n}\n",
        ),
        ("src/main.rs", "    std::process::exit(code);\n"),
        (
            "src/cli/opm.rs",
            "    // never std::process::exit(2) here\n",
        ),
    ];
    for (path, text) in fine {
        let found = second_places(&[(path.to_string(), text.to_string())]);
        assert!(found.is_empty(), "{path}: {found:?}");
    }
}

#[test]
fn clap_errors_help_and_version_keep_their_codes() {
    let (code, _, err) = opreg(&["validate", "--no-such-flag"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--no-such-flag"), "{err}");
    let (code, out, _) = opreg(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Exit codes"), "{out}");
    let (code, out, _) = opreg(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("opreg "), "{out}");
    let (code, _, err) = opreg(&["no-such-command"]);
    assert_eq!(code, 2, "{err}");
}

/// `opm` and `grpc_health_probe`: the binary run under those names.
fn run_as(name: &str, args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join(name);
    std::os::unix::fs::symlink(crate::common::bin(), &link).unwrap();
    let out = std::process::Command::new(&link)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn the_opm_and_grpc_health_probe_dialects_keep_their_codes() {
    let (code, _, err) = run_as("opm", &["serve", "--no-such-flag"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = run_as("opm", &["index", "add"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`opm index` is not available"), "{err}");
    let (code, out, _) = run_as("opm", &["--help"]);
    assert_eq!(code, 0, "{out}");
    // grpc_health_probe: -help and bad flags are 1, -version 0, no server 2.
    assert_eq!(run_as("grpc_health_probe", &["-help"]).0, 1);
    assert_eq!(run_as("grpc_health_probe", &["-no-such-flag"]).0, 1);
    assert_eq!(run_as("grpc_health_probe", &["-version"]).0, 0);
    let port = crate::common::free_port();
    let addr = format!("-addr=127.0.0.1:{port}");
    let (code, _, err) = run_as("grpc_health_probe", &[&addr, "-connect-timeout=300ms"]);
    assert_eq!(code, 2, "{err}");
}
