//! What a new user hit on a first run, each against the real binary: `serve FILE --watch` with a
//! relative FILE, `--port 0 --http-port 0`, `diff`'s documented exit codes, a SOURCE that is a
//! link to a directory, man pages for nested subcommands, one prefix per `migrate` warning, and
//! messages that name what went wrong and the fix.

use crate::common;

use common::{bin, opreg, wait_serving};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CATALOG: &str = r#"---
schema: olm.package
name: demo
defaultChannel: stable
---
schema: olm.channel
package: demo
name: stable
entries:
  - name: demo.v1.0.0
---
schema: olm.bundle
name: demo.v1.0.0
package: demo
image: example.com/demo:1.0.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.0.0}
"#;

/// CATALOG with a second package, `other`.
fn two_packages() -> String {
    CATALOG.to_string() + &CATALOG.replace("demo", "other")
}

/// `opreg serve ARGS` started in `dir`, its stderr in `log`; killed on drop.
struct InDir {
    child: Child,
    log: std::path::PathBuf,
}

impl InDir {
    fn spawn(dir: &Path, args: &[&str]) -> InDir {
        let log = dir.join("serve.log");
        let child = Command::new(bin())
            .arg("serve")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn opreg serve");
        InDir { child, log }
    }
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
    /// Waits until the log holds `n` lines containing `what`.
    fn wait_for(&mut self, what: &str, n: usize) {
        let start = Instant::now();
        while self.log().matches(what).count() < n {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("opreg serve exited ({st}):\n{}", self.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no {what:?} ({n}) in:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for InDir {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_reloads_a_relative_file_rewritten_in_place_and_by_rename() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("wf")).unwrap();
    std::fs::write(tmp.path().join("wf/cat.yaml"), CATALOG).unwrap();
    let port = common::free_port().to_string();
    let mut s = InDir::spawn(
        tmp.path(),
        &["wf/cat.yaml", "--watch", "-p", &port, "-t", "/dev/null"],
    );
    let mut child = std::mem::replace(&mut s.child, Command::new("true").spawn().unwrap());
    wait_serving(
        &format!("http://127.0.0.1:{port}"),
        Duration::from_secs(60),
        || child.try_wait().ok().flatten().map(|st| st.to_string()),
    );
    s.child = child;
    // In place.
    std::fs::write(tmp.path().join("wf/cat.yaml"), two_packages()).unwrap();
    s.wait_for("reloaded: serving the new version", 1);
    assert!(s.log().contains("packages=2"), "{}", s.log());
    // By rename, as editors save.
    std::fs::write(tmp.path().join("wf/.cat.yaml.new"), CATALOG).unwrap();
    std::fs::rename(
        tmp.path().join("wf/.cat.yaml.new"),
        tmp.path().join("wf/cat.yaml"),
    )
    .unwrap();
    s.wait_for("reloaded: serving the new version", 2);
}

/// The port in `addr = ...:PORT` of the log's `listen addresses` line, for `key`.
fn bound_port(log: &str, key: &str) -> u16 {
    let line = log
        .lines()
        .find(|l| l.contains("listen addresses"))
        .expect("a listen addresses line");
    let at = line.find(&format!("{key}=")).expect(key) + key.len() + 1;
    let rest = &line[at..];
    let end = rest.find([' ', '"', ')']).map_or(rest.len(), |e| e);
    let rest = &rest[..end];
    rest.rsplit(':').next().unwrap().parse().expect("a port")
}

#[test]
fn port_zero_on_both_ports_binds_two_free_ports_and_logs_them() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = InDir::spawn(
        tmp.path(),
        &["--port", "0", "--http-port", "0", "-t", "/dev/null"],
    );
    s.wait_for("listen addresses", 1);
    let log = s.log();
    let (grpc, http) = (bound_port(&log, "grpc"), bound_port(&log, "http"));
    assert!(grpc != 0 && http != 0 && grpc != http, "{log}");
    s.wait_for("catalog built", 1);
    let metrics = common::rt().block_on(async {
        reqwest::get(format!("http://127.0.0.1:{http}/metrics"))
            .await
            .expect("GET /metrics on the logged HTTP port")
            .status()
    });
    assert_eq!(metrics.as_u16(), 200);
    // The same port twice, when not 0, is still refused.
    let (code, _, err) = opreg(&["serve", "--port", "5999", "--http-port", "5999"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("must differ"), "{err}");
}

#[test]
fn diff_documents_exit_code_3_for_an_unreadable_source() {
    let (code, help, _) = opreg(&["diff", "--help"]);
    assert_eq!(code, 0);
    assert!(
        help.contains("1 something stranded; 2 usage error; 3 a SOURCE could not")
            || help.contains("3 a SOURCE could not be read"),
        "{help}"
    );
    assert!(!help.contains("or a SOURCE unreadable"), "{help}");
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let (code, _, err) = opreg(&["diff", missing.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme
            .contains("`opreg diff` exits 1 when a\nversion someone runs would be stranded and 3"),
        "the README documents diff's exit codes"
    );
    assert!(!readme.contains("Exit codes are the same for every command"));
    let authoring =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/authoring.md")).unwrap();
    assert!(authoring.contains("and 3 when OLD or NEW\ncould not be read"));
}

#[test]
fn a_source_that_links_to_a_directory_is_followed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("cat")).unwrap();
    std::fs::write(tmp.path().join("cat/index.yaml"), CATALOG).unwrap();
    let link = tmp.path().join("catlink");
    std::os::unix::fs::symlink("cat", &link).unwrap();
    let (code, _, err) = opreg(&["validate", link.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = opreg(&["render", link.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("demo.v1.0.0"), "{out}");
    let (code, out, err) = opreg(&["list", "packages", link.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("demo"), "{out}");
}

#[test]
fn man_writes_a_page_for_every_subcommand_at_any_depth_into_a_new_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new/man1");
    let (code, _, err) = opreg(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for page in [
        "opreg.1",
        "opreg-serve.1",
        "opreg-image.1",
        "opreg-image-build.1",
        "opreg-image-push.1",
        "opreg-generate.1",
        "opreg-generate-dockerfile.1",
    ] {
        let text =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        let th = text.lines().find(|l| l.starts_with(".TH ")).expect(".TH");
        assert!(
            th.contains(&format!("\"opreg {}\"", env!("CARGO_PKG_VERSION"))),
            "{page}: {th}"
        );
    }
    // Every page another page refers to exists.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for word in text.split(|c: char| c.is_whitespace() || c == '\\') {
            if let Some(name) = word.strip_suffix("(1)") {
                if name.starts_with("opreg") {
                    assert!(dir.join(format!("{name}.1")).exists(), "{name}(1) missing");
                }
            }
        }
    }
    let (code, page, _) = opreg(&["man", "image-build"]);
    assert_eq!(code, 0);
    assert!(page.contains(".TH opreg-image-build"), "{page}");
}

#[test]
fn migrate_prints_one_prefix_per_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("cat");
    std::fs::create_dir(&src).unwrap();
    // Two heads in `stable`: a channel-head problem, written all the same.
    let two_heads = CATALOG.replace(
        "  - name: demo.v1.0.0\n",
        "  - name: demo.v1.0.0\n  - name: demo.v1.1.0\n",
    ) + &CATALOG
        .split("---\nschema: olm.bundle")
        .nth(1)
        .map(|b| format!("---\nschema: olm.bundle{}", b.replace("1.0.0", "1.1.0")))
        .unwrap();
    std::fs::write(src.join("index.yaml"), two_heads).unwrap();
    let out = tmp.path().join("out");
    let (code, _, err) = opreg(&["migrate", src.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning[channel-head]"), "{err}");
    assert!(!err.contains("warning: error"), "{err}");
}

#[test]
fn validate_of_a_missing_path_says_so_once() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("catalog");
    let (code, _, err) = opreg(&["validate", missing.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no such file or directory"), "{err}");
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
    assert!(!err.contains("cannot read source\n"), "{err}");
}

#[test]
fn an_integrity_mismatch_names_the_cache_dir_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("cat");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("index.yaml"), CATALOG).unwrap();
    let cache = tmp.path().join("cache");
    let (s, c) = (src.to_str().unwrap(), cache.to_str().unwrap());
    let (code, _, err) = opreg(&["serve", s, "--cache-dir", c, "--cache-only"]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(src.join("index.yaml"), two_packages()).unwrap();
    let (code, _, err) = opreg(&[
        "serve",
        s,
        "--cache-dir",
        c,
        "--cache-enforce-integrity",
        "-t",
        "/dev/null",
    ]);
    assert_eq!(code, 1, "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("integrity check failed"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(&format!("--cache-dir {c}")), "{line}");
    assert!(line.contains("--cache-only"), "{line}");
}

#[test]
fn render_template_names_the_schema_of_another_kind_and_helps_with_substitutes() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("subs.yaml");
    std::fs::write(
        &file,
        "schema: olm.template.substitutes\nentries: []\nsubstitutions: []\n",
    )
    .unwrap();
    let (code, _, err) = opreg(&["render-template", "semver", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("olm.template.substitutes"), "{err}");
    assert!(!err.contains("unknown field"), "{err}");
    let (_, help, _) = opreg(&["render-template", "--help"]);
    assert!(help.contains("(basic, semver or substitutes)"), "{help}");
    assert!(help.contains("`substitutes` reads"), "{help}");
    let (_, top, _) = opreg(&["--help"]);
    assert!(!top.contains("(basic or semver)"), "{top}");
    let authoring =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/authoring.md")).unwrap();
    assert!(!authoring.contains("| grep olm.channel"));
}
