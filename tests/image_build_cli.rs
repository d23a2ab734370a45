//! What a new user hit building images, each as the user reported it, against the real binary:
//! `generate dockerfile .` and its quoting, the `scratch` note against docs/deployment.md, an
//! untagged layout target beside tags, the layout's file modes, a platform given twice,
//! `image build -q`, a dry run's `--digest-file`, and `oci:` references as skopeo reads them
//! (skopeo reads the layouts back where it helps).

use crate::common;
use crate::image_build::{base_layout, build, catalog, json_blob, multi_arch_base, opreg_labels};
use crate::registry_support::{sha, Registry};

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Runs `opreg ARGS` in `cwd`, under `umask` when given: (exit code, stdout, stderr).
fn run_in(cwd: &Path, umask: Option<u32>, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(common::bin());
    c.args(args)
        .current_dir(cwd)
        .env_remove("SOURCE_DATE_EPOCH");
    if let Some(mask) = umask {
        // SAFETY: umask is async-signal-safe and touches nothing but the child's own mask.
        unsafe {
            c.pre_exec(move || {
                libc::umask(mask as libc::mode_t);
                Ok(())
            });
        }
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn one_error_line(stderr: &str) {
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
}

fn skopeo(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("skopeo")
        .args(args)
        .output()
        .expect("run skopeo");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `index.json`'s entries as (digest, name), in order.
fn entries(layout: &Path) -> Vec<(String, Option<String>)> {
    let idx: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    idx["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["digest"].as_str().unwrap().to_string(),
                m["annotations"]["org.opencontainers.image.ref.name"]
                    .as_str()
                    .map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn generate_dockerfile_dot_writes_beside_the_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let (code, _, stderr) = run_in(&cat, None, &["generate", "dockerfile", "."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !cat.join("..Dockerfile").exists(),
        "written inside the catalog"
    );
    let text = std::fs::read_to_string(tmp.path().join("catalog.Dockerfile")).unwrap();
    assert!(text.contains("\nADD catalog /configs\n"), "{text}");
    // The catalog holds nothing new: it is still valid.
    let (code, _, stderr) = run_in(&cat, None, &["validate", "."]);
    assert_eq!(code, 0, "{stderr}");

    // `..` is the directory it names too.
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let (code, _, stderr) = run_in(&cat.join("etcd"), None, &["generate", "dockerfile", ".."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(tmp.path().join("catalog.Dockerfile").is_file());
    assert!(!cat.join("...Dockerfile").exists());
}

#[test]
fn generate_dockerfile_quotes_labels_and_refuses_control_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let dir = cat.to_str().unwrap();
    let (code, _, stderr) = common::opreg(&[
        "generate",
        "dockerfile",
        dir,
        "-l",
        "c=q\"uote",
        "-l",
        "d=back\\slash",
        "-l",
        "e=$HOME",
        "-l",
        "k\"ey=v",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let path = tmp.path().join("catalog.Dockerfile");
    let text = std::fs::read_to_string(&path).unwrap();
    let labels: Vec<&str> = text.lines().filter(|l| l.starts_with("LABEL \"")).collect();
    assert_eq!(
        labels,
        [
            r#"LABEL "c"="q\"uote""#,
            r#"LABEL "d"="back\\slash""#,
            r#"LABEL "e"="\$HOME""#,
            r#"LABEL "k\"ey"="v""#,
        ],
        "{text}"
    );
    std::fs::remove_file(&path).unwrap();

    // A newline would be an instruction of its own: refused, in one line, and nothing written.
    for (flag, value) in [
        ("-l", "x=a\nRUN rm -rf /"),
        ("-l", "x\r=a"),
        ("-l", "x=a\tb"),
        ("-i", "img:1\nRUN rm -rf /"),
        ("-b", "img:1\nRUN rm -rf /"),
    ] {
        let (code, _, stderr) = common::opreg(&["generate", "dockerfile", dir, flag, value]);
        assert_eq!(code, 1, "{flag} {value:?}: {stderr}");
        one_error_line(&stderr);
        assert!(stderr.contains("control character"), "{stderr}");
        assert!(!path.exists(), "{flag} {value:?}");
    }
    // An empty key is no label.
    let (code, _, stderr) = common::opreg(&["generate", "dockerfile", dir, "-l", "=x"]);
    assert_eq!(code, 1, "{stderr}");
    one_error_line(&stderr);
    assert!(stderr.contains("\"=x\""), "{stderr}");
    assert!(!path.exists());
}

/// The `scratch` Dockerfile's note and docs/deployment.md say the same about OLM's
/// extractContent: name `catalogDir` only. `cacheDir` would hand OLM's opm the cache the image
/// carries, which is opreg's database: the file the container smoke checks the catalog image
/// for (scripts/container-smoke.sh), and which opm cannot read.
#[test]
fn the_scratch_note_and_the_deployment_doc_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let (code, _, stderr) = common::opreg(&[
        "generate",
        "dockerfile",
        cat.to_str().unwrap(),
        "-i",
        "scratch",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(tmp.path().join("catalog.Dockerfile")).unwrap();
    let note: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("# OLMv0 CatalogSources"))
        .take_while(|l| l.starts_with('#'))
        .collect();
    assert!(note.contains(&"#       catalogDir: /configs"), "{text}");
    assert!(
        !note
            .iter()
            .any(|l| l.trim_start_matches('#').trim().starts_with("cacheDir:")),
        "the note sets cacheDir: {text}"
    );
    assert!(note.iter().any(|l| l.contains("not cacheDir")), "{text}");

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/deployment.md")).unwrap();
    let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        doc.contains("naming only `catalogDir: /configs` (not `cacheDir`"),
        "docs/deployment.md"
    );
    assert!(!doc.contains("cacheDir: /tmp/cache"), "docs/deployment.md");
    // What the smoke finds in /tmp/cache is opreg's database.
    let smoke = std::fs::read_to_string(root.join("scripts/container-smoke.sh")).unwrap();
    let db = opreg::cache::CACHE_DB;
    assert!(
        smoke.contains(&format!("tmp/cache/{db}")),
        "container-smoke.sh"
    );
    assert!(
        text.contains("COPY --from=builder /tmp/cache /tmp/cache"),
        "{text}"
    );
}

#[test]
fn oci_targets_are_read_as_skopeo_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &opreg_labels());
    let build_in = |target: &str| {
        run_in(
            tmp.path(),
            None,
            &[
                "image",
                "build",
                cat.to_str().unwrap(),
                "--base",
                &base,
                "-t",
                target,
            ],
        )
    };
    // A name with a slash: directory `tt`, tag `a/b`, where skopeo finds it.
    let (code, digest, stderr) = build_in("oci:tt:a/b");
    assert_eq!(code, 0, "{stderr}");
    assert!(!tmp.path().join("tt:a").exists());
    let (code, raw, e) = skopeo(&[
        "inspect",
        "--raw",
        &format!("oci:{}/tt:a/b", tmp.path().display()),
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(sha(raw.as_bytes()), digest.trim());
    // Nothing after the colon, and a tag that is not one: refused, naming the reference.
    for bad in [
        "oci:tt:",
        "oci:uu:",
        "oci:uu:bad tag",
        "oci:uu:-x",
        "oci:uu:@0",
    ] {
        let (code, _, stderr) = build_in(bad);
        assert_eq!(code, 2, "{bad}: {stderr}");
        one_error_line(&stderr);
        assert!(stderr.contains(&format!("{bad:?}")), "{stderr}");
    }
    assert!(!tmp.path().join("tt:").exists());
    assert!(!tmp.path().join("uu").exists() && !tmp.path().join("uu:").exists());
    assert_eq!(entries(&tmp.path().join("tt")).len(), 1);
}

#[test]
fn an_untagged_layout_target_keeps_the_tags() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &opreg_labels());
    let layout = tmp.path().join("L");
    let tagged = format!("oci:{}:v1", layout.display());
    let untagged = format!("oci:{}", layout.display());
    let mut digests = Vec::new();
    for t in [&tagged, &untagged] {
        let (code, digest, stderr) =
            build(&[cat.to_str().unwrap(), "--base", &base, "-t", t], None);
        assert_eq!(code, 0, "{stderr}");
        digests.push(digest);
    }
    assert_eq!(digests[0], digests[1], "the same build");
    let d = &digests[0];
    let (code, out, stderr) = common::opreg(&["list", "packages", &tagged]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("etcd"), "{out}");

    // skopeo, writing the same image to a layout the same two ways, lists the same entries.
    let copied = tmp.path().join("S");
    for to in [
        format!("oci:{}:v1", copied.display()),
        format!("oci:{}", copied.display()),
    ] {
        let (code, _, e) = skopeo(&["copy", "-q", "--preserve-digests", &tagged, &to]);
        assert_eq!(code, 0, "{e}");
    }
    let want = vec![(d.clone(), Some("v1".to_string())), (d.clone(), None)];
    assert_eq!(entries(&copied), want, "skopeo");
    assert_eq!(entries(&layout), want);
    // A second untagged build replaces the untagged entry only.
    let (code, _, stderr) = build(
        &[cat.to_str().unwrap(), "--base", &base, "-t", &untagged],
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(entries(&layout), want);
}

#[test]
fn layouts_are_written_as_the_umask_allows() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &opreg_labels());
    for (mask, want) in [(0o022, 0o644), (0o077, 0o600)] {
        let layout = tmp.path().join(format!("L{mask:o}"));
        let t = format!("oci:{}:v1", layout.display());
        let (code, _, stderr) = run_in(
            tmp.path(),
            Some(mask),
            &[
                "image",
                "build",
                cat.to_str().unwrap(),
                "--base",
                &base,
                "-t",
                &t,
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        let mut files = vec![layout.join("index.json"), layout.join("oci-layout")];
        for e in std::fs::read_dir(layout.join("blobs/sha256")).unwrap() {
            files.push(e.unwrap().path());
        }
        assert!(files.len() > 5, "{files:?}");
        for f in files {
            let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, want, "{} under umask {mask:03o}", f.display());
        }
    }
}

#[test]
fn image_build_refuses_an_empty_label_key() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &opreg_labels());
    let out = tmp.path().join("out");
    let t = format!("oci:{}:v1", out.display());
    let args = [cat.to_str().unwrap(), "--base", &base, "-t", &t, "--label"];
    let (code, _, stderr) = build(&[&args[..], &["=x"]].concat(), None);
    assert_eq!(code, 2, "{stderr}");
    one_error_line(&stderr);
    assert!(stderr.contains("--label =x"), "{stderr}");
    assert!(!out.exists());
    // A key with an empty value is a label.
    let (code, _, stderr) = build(&[&args[..], &["k="]].concat(), None);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_platform_given_twice_is_kept_once() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = multi_arch_base(&tmp.path().join("base"));
    let out = tmp.path().join("out");
    let t = format!("oci:{}:amd", out.display());
    for platforms in [
        "linux/amd64,linux/amd64",
        "linux/amd64,linux/arm64,linux/amd64",
    ] {
        let (code, digest, stderr) = build(
            &[
                cat.to_str().unwrap(),
                "--base",
                &base,
                "--platform",
                platforms,
                "-t",
                &t,
            ],
            None,
        );
        assert_eq!(code, 0, "{stderr}");
        let idx = json_blob(&out, &digest);
        let archs: Vec<&str> = idx["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["platform"]["architecture"].as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = Vec::new();
        for p in platforms.split(',') {
            if !want.contains(&&p["linux/".len()..]) {
                want.push(&p["linux/".len()..]);
            }
        }
        assert_eq!(archs, want, "{platforms}");
    }
}

#[test]
fn a_quiet_build_prints_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &opreg_labels());
    let out = tmp.path().join("out");
    let t = format!("oci:{}:v1", out.display());
    let file = tmp.path().join("digest");
    let f = file.to_str().unwrap();
    let (code, stdout, stderr) = build(
        &[
            cat.to_str().unwrap(),
            "--base",
            &base,
            "-t",
            &t,
            "-q",
            "--digest-file",
            f,
        ],
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!((stdout.as_str(), stderr.as_str()), ("", ""));
    let digest = std::fs::read_to_string(&file).unwrap();
    assert!(digest.starts_with("sha256:"), "{digest}");
    let (code, _, e) = skopeo(&["inspect", "--raw", &t]);
    assert_eq!(code, 0, "{e}");
}

#[test]
fn a_dry_run_writes_no_digest_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &opreg_labels());
    // Nothing listens there: nothing is sent.
    let r = format!("127.0.0.1:{}/cat/alog:v1", common::free_port());
    let file = tmp.path().join("digest");
    let f = file.to_str().unwrap();
    for quiet in [false, true] {
        let mut args = vec![
            cat.to_str().unwrap(),
            "--base",
            &base,
            "-t",
            &r,
            "--digest-file",
            f,
        ];
        if quiet {
            args.push("-q");
        }
        let (code, _, stderr) = build(&args, None);
        assert_eq!(code, 0, "a dry run succeeds: {stderr}");
        assert!(
            !file.exists(),
            "nothing was pushed, yet the digest file says so"
        );
        let warning: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("--digest-file"))
            .collect();
        assert_eq!(warning.len(), 1, "{stderr}");
        assert!(warning[0].contains("not written"), "{stderr}");
        assert!(warning[0].contains(f), "{stderr}");
    }
    // With a layout target beside it, the image was written somewhere: the file is written.
    let t = format!("oci:{}:v1", tmp.path().join("out").display());
    let (code, digest, stderr) = build(
        &[
            cat.to_str().unwrap(),
            "--base",
            &base,
            "-t",
            &r,
            "-t",
            &t,
            "--digest-file",
            f,
        ],
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), digest);
}

#[test]
fn a_quiet_push_prints_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &opreg_labels());
    let t = format!("oci:{}:v1", tmp.path().join("out").display());
    let (code, digest, stderr) = build(&[cat.to_str().unwrap(), "--base", &base, "-t", &t], None);
    assert_eq!(code, 0, "{stderr}");
    let reg = Registry::http();
    let to = format!("{}/cat/alog:v1", reg.host());
    let file = tmp.path().join("digest");
    let f = file.to_str().unwrap();
    let (code, stdout, stderr) = common::opreg(&[
        "image",
        "push",
        &t,
        &to,
        "--use-http",
        "-q",
        "--digest-file",
        f,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!((stdout.as_str(), stderr.as_str()), ("", ""));
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), digest);
}
