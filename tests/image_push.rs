//! `opreg image build --push` and `opreg image push` against Debian's `docker-registry` on
//! loopback (plain HTTP, and TLS with basic auth), read back by `skopeo` as an independent
//! client and served again by `opreg serve REF`. The test binary is dynamically linked, so
//! every build names a base the test makes and pushes.

use crate::common;
use crate::registry_support;
use registry_support::ctx::{list_packages, Ctx};
use registry_support::faults::{Action, Faults, Seen};
use registry_support::{auth_file, sha, Entry, Image, Registry, PASSWORD, USER};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGE: &str = r#"---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v1.0.0
---
schema: olm.bundle
name: etcd.v1.0.0
package: etcd
image: quay.io/example/etcd-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.0.0}
"#;

pub(crate) fn catalog(ctx: &Ctx) -> PathBuf {
    let c = ctx.path("catalog");
    std::fs::create_dir_all(c.join("etcd")).unwrap();
    std::fs::write(c.join("etcd/index.yaml"), PACKAGE).unwrap();
    c
}

/// A base image of this opreg version and schema (so the cache goes in), with one layer.
fn base() -> Image {
    base_with(b"not a binary")
}

/// The same, with `bin/opm` holding `opm`.
pub(crate) fn base_with(opm: &[u8]) -> Image {
    let version = env!("CARGO_PKG_VERSION").to_string();
    let schema = opreg::store::schema_version().to_string();
    Image::new(&[
        ("io.opreg.version", version.as_str()),
        ("io.opreg.schema", schema.as_str()),
    ])
    .layer(&[
        Entry::Dir("bin/".into()),
        Entry::File("bin/opm".into(), opm.to_vec()),
    ])
}

pub(crate) fn skopeo(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("skopeo")
        .args(args)
        .output()
        .expect("skopeo is installed (apt-get install -y skopeo; see .ci/run)");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The one `pushed …` line of a push's stderr, as (uploaded, mounted, already there).
fn counts(stderr: &str) -> (usize, usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.contains("pushed "))
        .unwrap_or_else(|| panic!("no pushed line: {stderr}"));
    let n = |after: &str| -> usize {
        let before = line.split(after).next().unwrap();
        before
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    (n(" blobs uploaded"), n(" mounted"), n(" already there"))
}

fn digest_of_layout(dir: &Path, tag: &str) -> String {
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn build_push_then_skopeo_reads_and_serve_serves_it() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let cat = catalog(&ctx);
    reg.push("base", "v1", &base());
    let host = reg.host();
    let base_ref = format!("{host}/base:v1");
    let target = format!("{host}/catalogs/etcd:v1");
    let digest_file = ctx.path("digest");
    let args = [
        "image",
        "build",
        cat.to_str().unwrap(),
        "--base",
        &base_ref,
        "-t",
        &target,
        "--push",
        "--use-http",
        "--digest-file",
        digest_file.to_str().unwrap(),
    ];
    let (code, out, err) = ctx.run(&args);
    assert_eq!(code, 0, "{err}");
    let digest = out.trim().to_string();
    assert!(digest.starts_with("sha256:"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&digest_file).unwrap().trim(),
        digest
    );
    // The base's layer is mounted from its repository; the config and the two catalog layers
    // are uploaded.
    assert_eq!(counts(&err), (3, 1, 0), "{err}");

    // skopeo reads it: the manifest's digest, and the labels.
    let docker = format!("docker://{target}");
    let (code, raw, e) = skopeo(&["inspect", "--tls-verify=false", "--raw", &docker]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(sha(raw.as_bytes()), digest);
    let (code, info, e) = skopeo(&["inspect", "--tls-verify=false", &docker]);
    assert_eq!(code, 0, "{e}");
    let info: Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["Digest"], digest.as_str());
    assert_eq!(
        info["Labels"]["operators.operatorframework.io.index.configs.v1"],
        "/configs"
    );

    // A second push of the same build sends nothing: every blob is there.
    let (code, out, err) = ctx.run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), digest, "reproducible");
    assert_eq!(counts(&err), (0, 0, 4), "{err}");

    // skopeo copies it to a layout, and `opreg image push` sends that layout to another
    // repository under the same digest, every blob above 1,000 bytes in chunks.
    let layout = ctx.path("copied");
    let dest = format!("oci:{}:etcd", layout.display());
    let (code, _, e) = skopeo(&[
        "copy",
        "--src-tls-verify=false",
        "--preserve-digests",
        &docker,
        &dest,
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(digest_of_layout(&layout, "etcd"), digest);
    let relay = Faults::start(reg.port, Box::new(|_: &Seen, _: usize| Action::Relay));
    let again = format!("127.0.0.1:{}/mirror/etcd:v1", relay.port);
    let (code, out, err) = ctx.run(&[
        "image",
        "push",
        &dest,
        &again,
        "--use-http",
        "--chunk-size",
        "1000",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), digest);
    let patches = relay
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| s.method == "PATCH")
        .count();
    assert!(patches > 2, "uploaded in chunks: {patches} PATCH requests");
    let (code, raw, e) = skopeo(&[
        "inspect",
        "--tls-verify=false",
        "--raw",
        &format!("docker://{host}/mirror/etcd:v1"),
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(sha(raw.as_bytes()), digest);

    // opreg serves the pushed image.
    let image_cache = ctx.cache();
    let server = common::Server::start(&[
        &target,
        "--use-http",
        "--image-cache",
        image_cache.to_str().unwrap(),
        "--cache-dir",
        ctx.path("serve-cache").to_str().unwrap(),
        "--cache-enforce-integrity=false",
    ]);
    assert_eq!(list_packages(&server), vec!["etcd".to_string()]);
    assert_eq!(server.terminate(), Some(0));
}

#[test]
fn pushes_to_a_tls_registry_with_credentials_and_refuses_in_one_line() {
    let reg = Registry::tls_auth();
    let ctx = Ctx::new();
    let cat = catalog(&ctx);
    // The base is a layout here: nothing to mount from.
    let base_dir = ctx.path("base");
    base().write_layout(&base_dir, "v1");
    let base_ref = format!("oci:{}:v1", base_dir.display());
    let target = format!("{}/secure/etcd:v1", reg.host());
    let args = [
        "image",
        "build",
        cat.to_str().unwrap(),
        "--base",
        &base_ref,
        "-t",
        &target,
        "--push",
        "--skip-tls-verify",
    ];

    // No credentials: refused, one line naming the reference, exit 1.
    let (code, out, err) = ctx.run(&args);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    let line = err.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(line.contains(&format!("push to {target}")), "{err}");
    assert!(line.contains("unauthorized"), "{err}");

    // With the credentials in an auth file: pushed; every blob uploaded.
    let auth = ctx.path("auth.json");
    std::fs::write(&auth, auth_file(&reg.host(), USER, PASSWORD)).unwrap();
    let (code, out, err) = ctx.run_env(&args, &[("REGISTRY_AUTH_FILE", &auth)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(counts(&err), (4, 0, 0), "{err}");
    let (code, raw, e) = skopeo(&[
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASSWORD}"),
        "--raw",
        &format!("docker://{target}"),
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(sha(raw.as_bytes()), out.trim());
}

#[test]
fn refusals_name_the_reference() {
    let ctx = Ctx::new();
    let cat = catalog(&ctx);
    let base_dir = ctx.path("base");
    base().write_layout(&base_dir, "v1");
    let base_ref = format!("oci:{}:v1", base_dir.display());

    // Nothing listens: one line, exit 1.
    let port = registry_support::free_port();
    let target = format!("127.0.0.1:{port}/etcd:v1");
    let (code, out, err) = ctx.run(&[
        "image",
        "build",
        cat.to_str().unwrap(),
        "--base",
        &base_ref,
        "-t",
        &target,
        "--push",
        "--use-http",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains(&format!("push to {target}")), "{err}");
    assert!(errors[0].contains("connection refused"), "{err}");

    // `image push` takes a layout and a registry reference, in that order (usage, exit 2).
    let layout = format!("oci:{}:v1", base_dir.display());
    let (code, _, err) = ctx.run(&["image", "push", &target, &layout]);
    assert_eq!(code, 2, "{err}");
    // A layout without that tag: exit 1, naming it.
    let (code, _, err) = ctx.run(&[
        "image",
        "push",
        &format!("oci:{}:nope", base_dir.display()),
        &target,
        "--use-http",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(":nope"), "{err}");
}

/// The layout of a built catalog image, for `image push`.
fn built_layout(ctx: &Ctx) -> String {
    let cat = catalog(ctx);
    let base_dir = ctx.path("base");
    base().write_layout(&base_dir, "v1");
    let out = ctx.path("out");
    let (code, _, err) = ctx.run(&[
        "image",
        "build",
        cat.to_str().unwrap(),
        "--base",
        &format!("oci:{}:v1", base_dir.display()),
        "-t",
        &format!("oci:{}:cat", out.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    format!("oci:{}:cat", out.display())
}

fn is_blob_put(s: &Seen) -> bool {
    s.method == "PUT" && s.path.contains("/blobs/uploads/")
}

/// Whether the registry itself has `repo:tag` (asked directly, not through the relay).
fn tagged(reg: &Registry, repo: &str, tag: &str) -> bool {
    let (code, _, _) = skopeo(&[
        "inspect",
        "--tls-verify=false",
        "--raw",
        &format!("docker://{}/{repo}:{tag}", reg.host()),
    ]);
    code == 0
}

#[test]
fn a_refusing_or_failing_registry_is_retried_or_reported_and_never_tagged() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let layout = built_layout(&ctx);
    let push = |port: u16, repo: &str| {
        let target = format!("127.0.0.1:{port}/{repo}:v1");
        let started = std::time::Instant::now();
        let (code, out, err) = ctx.run(&["image", "push", &layout, &target, "--use-http"]);
        (code, out, err, target, started.elapsed())
    };

    // A 503 with Retry-After on the first blob upload: tried again after that second.
    let f = Faults::start(
        reg.port,
        Box::new(|s: &Seen, _: usize| {
            if is_blob_put(s) {
                Action::Answer(503, vec![("Retry-After".into(), "1".into())])
            } else {
                Action::Relay
            }
        }),
    );
    // (The rule answers every blob PUT: only the retry budget lets a push through, so first
    // show that it runs out, then let one through.)
    let (code, _, err, target, _) = push(f.port, "always-503");
    assert_eq!(code, 1, "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains(&format!("push to {target}")), "{err}");
    assert!(errors[0].contains("HTTP 503"), "{err}");
    // Uploads follow the registry client's one retry policy: five attempts, then the error.
    assert_eq!(opreg::registry::retry::Retries::default().attempts, 5);
    assert_eq!(f.count("answered"), 5, "five attempts: {err}");
    assert!(!tagged(&reg, "always-503", "v1"));

    let once = std::sync::atomic::AtomicBool::new(false);
    let f = Faults::start(
        reg.port,
        Box::new(move |s: &Seen, _: usize| {
            if is_blob_put(s) && !once.swap(true, std::sync::atomic::Ordering::SeqCst) {
                Action::Answer(503, vec![("Retry-After".into(), "1".into())])
            } else {
                Action::Relay
            }
        }),
    );
    let (code, out, err, _, elapsed) = push(f.port, "once-503");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("sha256:"));
    assert_eq!(f.count("answered"), 1);
    assert!(
        elapsed >= std::time::Duration::from_secs(1),
        "Retry-After honoured"
    );
    assert!(tagged(&reg, "once-503", "v1"));

    // The connection cut in the middle of an upload, once: the upload starts again.
    let once = std::sync::atomic::AtomicBool::new(false);
    let f = Faults::start(
        reg.port,
        Box::new(move |s: &Seen, _: usize| {
            if is_blob_put(s) && !once.swap(true, std::sync::atomic::Ordering::SeqCst) {
                Action::Drop
            } else {
                Action::Relay
            }
        }),
    );
    let (code, _, err, _, _) = push(f.port, "dropped-once");
    assert_eq!(code, 0, "{err}");
    assert_eq!(f.count("dropped"), 1);
    assert!(tagged(&reg, "dropped-once", "v1"));

    // Refusals that will not pass are not retried: 413 on an upload, 403 on the manifest.
    for (status, on_manifest, says) in [(413, false, "HTTP 413"), (403, true, "access denied")] {
        let f = Faults::start(
            reg.port,
            Box::new(move |s: &Seen, _: usize| {
                let hit = if on_manifest {
                    s.method == "PUT" && s.path.contains("/manifests/")
                } else {
                    is_blob_put(s)
                };
                if hit {
                    Action::Answer(status, vec![])
                } else {
                    Action::Relay
                }
            }),
        );
        let repo = format!("refused-{status}");
        let (code, out, err, target, _) = push(f.port, &repo);
        assert_eq!(code, 1, "{status}: {err}");
        assert!(out.is_empty(), "{status}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{status}: {err}");
        assert!(errors[0].contains(&format!("push to {target}")), "{err}");
        assert!(errors[0].contains(says), "{status}: {err}");
        assert_eq!(f.count("answered"), 1, "{status}: not retried");
        assert!(!tagged(&reg, &repo, "v1"), "{status}: no tag");
    }
}

#[test]
fn pushes_through_the_bearer_token_flow_asking_for_push() {
    use base64::Engine;
    let reg = Registry::token_auth();
    let ctx = Ctx::new();
    let layout = built_layout(&ctx);
    // `docker login` to a registry that issues identity tokens writes this.
    let auth = ctx.path("auth.json");
    let user = base64::engine::general_purpose::STANDARD.encode("<token>:");
    std::fs::write(
        &auth,
        serde_json::json!({"auths": {reg.host(): {"auth": user,
            "identitytoken": registry_support::token::REFRESH_TOKEN}}})
        .to_string(),
    )
    .unwrap();
    let target = format!("{}/secure/cat:v2", reg.host());
    let (code, out, err) = ctx.run_env(
        &["image", "push", &layout, &target, "--use-http"],
        &[("REGISTRY_AUTH_FILE", &auth)],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("sha256:"), "{out}");
    let log = reg
        .token_server
        .as_ref()
        .unwrap()
        .log
        .lock()
        .unwrap()
        .clone();
    assert!(
        log.iter()
            .any(|l| l.starts_with("200 ") && l.contains("repository:secure/cat:pull,push")),
        "a token for pushing was asked for: {log:?}"
    );
}

#[test]
fn a_read_only_registry_is_said_to_refuse_writes() {
    let reg = Registry::read_only();
    let ctx = Ctx::new();
    let layout = built_layout(&ctx);
    let target = format!("{}/ro/cat:v1", reg.host());
    let (code, _, err) = ctx.run(&["image", "push", &layout, &target, "--use-http"]);
    assert_eq!(code, 1, "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains(&format!(
            "the registry {} refuses writes to ro/cat",
            reg.host()
        )),
        "{err}"
    );
    assert!(!tagged(&reg, "ro/cat", "v1"));
}

#[test]
fn use_http_against_a_tls_registry_is_explained_by_push_and_mirror() {
    let reg = Registry::tls_auth();
    let ctx = Ctx::new();
    let layout = built_layout(&ctx);
    let target = format!("{}/cat:v1", reg.host());
    let explained = |err: &str| {
        err.lines().any(|l| {
            l.starts_with("error:")
                && l.contains(&format!("the registry {} speaks TLS (HTTPS)", reg.host()))
        })
    };
    let (code, _, err) = ctx.run(&["image", "push", &layout, &target, "--use-http"]);
    assert_eq!(code, 1, "{err}");
    assert!(explained(&err), "{err}");
    // A mirror from a plain-HTTP source to it, the same way.
    let src = Registry::http();
    src.push(
        "app/hello",
        "v1",
        &registry_support::Image::new(&[("name", "hello")]).layer(&[
            registry_support::Entry::File("hello".into(), b"hello".to_vec()),
        ]),
    );
    let cfg = ctx.path("imageset.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: {}/app/hello:v1\n",
            src.host()
        ),
    )
    .unwrap();
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--use-http",
        "--config",
        cfg.to_str().unwrap(),
        &format!("docker://{}/m", reg.host()),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(explained(&err), "{err}");
}
