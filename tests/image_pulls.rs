//! Image pulls beyond the basics of `image_sources.rs` (issue 14), against the real registry
//! on loopback and the real binary: an `identitytoken` exchanged in the OAuth2 POST flow of
//! the distribution token spec (and never logged), a pull killed in the middle of a blob
//! leaving the cache consistent, download progress bars on a terminal only, and catalog
//! images kept unpacked in the cache.

use crate::common;
use crate::registry_support;

use registry_support::ctx::*;
use registry_support::throttle::Throttle;
use registry_support::token::{REFRESH_TOKEN, SERVICE};
use registry_support::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A docker config the way `docker login` writes one for a registry that issues identity
/// tokens: the user `<token>` in `auth`, the refresh token in `identitytoken`.
fn identity_token_file(host: &str, token: &str) -> String {
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode("<token>:");
    serde_json::json!({"auths": {host: {"auth": auth, "identitytoken": token}}}).to_string()
}

#[test]
fn identity_token_is_exchanged_as_an_oauth2_refresh_token_and_never_logged() {
    let reg = Registry::token_auth();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    reg.push("secure/cat", "v1", &catalog_image(&etcd));
    let r = format!("{}/secure/cat:v1", reg.host());
    let token_log = || {
        reg.token_server
            .as_ref()
            .unwrap()
            .log
            .lock()
            .unwrap()
            .clone()
    };

    // A refresh token the token server does not know: refused, in one line, not echoed.
    let wrong = ctx.path("wrong.json");
    std::fs::write(&wrong, identity_token_file(&reg.host(), "not-the-token")).unwrap();
    let (code, _, err) = ctx.run_env(
        &["render", &r, "--use-http", "--no-image-cache"],
        &[("REGISTRY_AUTH_FILE", &wrong)],
    );
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("unauthorized"), "{line}");
    assert!(!err.contains("not-the-token"), "{err}");

    // The right one, with every log level on: the image renders, and neither the refresh
    // token nor the access token it was exchanged for (a JWT, `eyJ...`) shows in the logs.
    let good = ctx.path("auth.json");
    std::fs::write(&good, identity_token_file(&reg.host(), REFRESH_TOKEN)).unwrap();
    let out = ctx
        .cmd(
            &["render", &r, "--use-http", "--no-image-cache"],
            &[("REGISTRY_AUTH_FILE", &good)],
        )
        .env("OPREG_LOG", "trace")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), render_local(&etcd));
    assert!(
        err.contains("using credentials from auth file"),
        "the debug log is really on: {err}"
    );
    assert!(!err.contains(REFRESH_TOKEN), "refresh token logged: {err}");
    assert!(!err.contains("eyJ"), "a token logged: {err}");
    // The exchange was the POST flow, for a pull of this repository on this service; no
    // GET with basic credentials was tried.
    let log = token_log();
    let want =
        format!("200 POST /token HTTP/1.1 grant_type=refresh_token service={SERVICE} scope=repository:secure/cat:pull");
    assert!(log.contains(&want), "{log:?}");
    assert!(!log.iter().any(|l| l.starts_with("200 GET")), "{log:?}");
}

/// An FBC catalog of `mb` megabytes: etcd plus custom metas of incompressible text, so its
/// gzip layer is about half that size.
fn big_catalog(ctx: &Ctx, mb: usize) -> PathBuf {
    let dir = fbc_dir(ctx, "etcd");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut text = String::new();
    let mut i = 0;
    while text.len() < mb << 20 {
        let mut data = String::with_capacity(64 * 1024);
        while data.len() < 64 * 1024 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.push_str(&format!("{x:016x}"));
        }
        text.push_str(&format!(
            "{{\"schema\":\"example.padding\",\"name\":\"pad-{i}\",\"data\":\"{data}\"}}\n"
        ));
        i += 1;
    }
    std::fs::write(dir.join("padding.json"), text).unwrap();
    dir
}

/// Every blob under its digest's name in the cache holds bytes that hash to that digest.
fn assert_cache_consistent(cache: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(cache.join("blobs/sha256")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        let got = sha(&std::fs::read(e.path()).unwrap());
        assert_eq!(got, format!("sha256:{name}"), "a wrong blob in the cache");
        n += 1;
    }
    n
}

fn files_in(dir: &Path) -> Vec<(PathBuf, u64)> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| (e.path(), e.metadata().map(|m| m.len()).unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_pull_killed_mid_blob_leaves_the_cache_consistent_and_a_rerun_succeeds() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let dir = big_catalog(&ctx, 4);
    let img = catalog_image(&dir);
    let layer = sha(&img.layers[0].1);
    reg.push("cat", "v1", &img);
    // About 2 MB of layer at 256 KB/s: eight seconds to download, unless killed.
    let slow = Throttle::start(reg.port, 256 * 1024);
    let reference = format!("{}/cat:v1", slow.host());
    let cache = ctx.path("image-cache");
    let db = ctx.path("out.db");
    let args = [
        "ingest",
        &reference,
        "--use-http",
        "--image-cache",
        cache.to_str().unwrap(),
        "-o",
        db.to_str().unwrap(),
    ];
    let mut child = ctx
        .cmd(&args, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Mid-download: the layer's temp file in the cache has some bytes, not all.
    let started = Instant::now();
    let partial = loop {
        let tmp = files_in(&cache.join("tmp"));
        if let Some((_, len)) = tmp.iter().find(|(_, len)| *len > 64 * 1024) {
            break *len;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the ingest ended before it was caught mid-download"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no partial blob appeared in {}",
            cache.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!((partial as usize) < img.layers[0].1.len());
    assert!(!db.exists(), "a killed ingest wrote no database");
    // Manifest and config may be there; the layer is not, and nothing is wrong.
    assert_cache_consistent(&cache);
    assert!(!cache.join("blobs/sha256").join(&layer[7..]).exists());

    // The rerun, at full speed, with the same cache: it succeeds and fills the cache.
    slow.set_rate(0);
    let (code, _, err) = ctx.run(&args);
    assert_eq!(code, 0, "{err}");
    assert!(cache.join("blobs/sha256").join(&layer[7..]).is_file());
    assert_eq!(assert_cache_consistent(&cache), img.blobs().len() + 1);
    // The same database as a pull that was never interrupted (no cache at all).
    let fresh = ctx.path("fresh.db");
    let (code, _, err) = ctx.run(&[
        "ingest",
        &reference,
        "--use-http",
        "--no-image-cache",
        "-o",
        fresh.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (a, b) = (
        opreg::store::Store::open(&db).unwrap(),
        opreg::store::Store::open(&fresh).unwrap(),
    );
    for key in ["images", "source_digest"] {
        assert_eq!(a.info(key).unwrap(), b.info(key).unwrap(), "{key}");
    }
    let render = |p: &Path| common::opreg(&["render", p.to_str().unwrap()]);
    let (ra, rb) = (render(&db), render(&fresh));
    assert_eq!(ra.0, 0, "{}", ra.2);
    assert_eq!(ra.1, rb.1);
    assert!(ra.1.contains("pad-0"), "the big layer's content is in it");
}

#[test]
fn downloads_draw_progress_bars_on_a_terminal_and_nothing_otherwise() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let dir = big_catalog(&ctx, 1);
    reg.push("cat", "v1", &catalog_image(&dir));
    // Half a megabyte of layer at 512 KB/s: a second of download, several redraws.
    let slow = Throttle::start(reg.port, 512 * 1024);
    let reference = format!("{}/cat:v1", slow.host());
    let render = |cache: &str| {
        format!(
            "{} render {reference} --use-http --image-cache {cache} > /dev/null",
            common::bin()
        )
    };

    // Under a pseudo-terminal (util-linux `script`): the bar, with the layer's short digest.
    let cache = ctx.path("c1");
    let mut script = std::process::Command::new("script");
    script
        .args(["-qec", &render(cache.to_str().unwrap()), "/dev/null"])
        .env("HOME", ctx.path("home"))
        .env("TMPDIR", ctx.tmp())
        .env("TERM", "xterm")
        .env_remove("OPREG_LOG")
        .env_remove("REGISTRY_AUTH_FILE");
    let out = script.output().expect("util-linux `script`");
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{tty}");
    let layer = sha(&catalog_image(&dir).layers[0].1);
    assert!(
        tty.contains(&format!("layer 1 {}", &layer[7..19])),
        "a progress bar for the layer: {tty:?}"
    );
    assert!(tty.contains('█'), "the bar is drawn: {tty:?}");

    // Under a terminal with --log-format json: log lines only, no bar.
    let cache = ctx.path("c3");
    let json = render(cache.to_str().unwrap()).replace(" render ", " --log-format json render ");
    let out = std::process::Command::new("script")
        .args(["-qec", &json, "/dev/null"])
        .env("HOME", ctx.path("home"))
        .env("TMPDIR", ctx.tmp())
        .env("TERM", "xterm")
        .env_remove("OPREG_LOG")
        .env_remove("REGISTRY_AUTH_FILE")
        .output()
        .expect("util-linux `script`");
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{tty}");
    assert!(tty.contains("image resolved"), "{tty}");
    for c in ["layer 1", "█", "░"] {
        assert!(!tty.contains(c), "a bar under --log-format json: {tty:?}");
    }

    // Piped stderr: no bar, no carriage returns or cursor movement; just the log lines.
    let cache = ctx.path("c2");
    let (code, _, err) = ctx.run(&[
        "render",
        &reference,
        "--use-http",
        "--image-cache",
        cache.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("image resolved"), "{err}");
    for c in ["layer 1", "█", "░", "\r", "\x1b["] {
        assert!(
            !err.contains(c),
            "progress output {c:?} without a terminal: {err:?}"
        );
    }
}

/// A catalog image pulled once is kept unpacked in the image cache: a second pull reads no
/// layer (its blob can be gone from cache and registry alike), and a kept tree that no
/// longer matches its file list is unpacked again from the layer, giving the same database.
#[test]
fn a_kept_catalog_image_reads_no_layer_and_a_changed_tree_is_unpacked_again() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    let img = catalog_image(&etcd);
    reg.push("cat", "v1", &img);
    let reference = format!("{}/cat:v1", reg.host());
    let db = ctx.path("out.db");
    let db_s = db.to_str().unwrap();
    let ingest = || ctx.run(&["ingest", &reference, "--use-http", "-o", db_s]);
    let source_digest = || {
        opreg::store::Store::open(&db)
            .unwrap()
            .info("source_digest")
            .unwrap()
            .unwrap()
    };
    let (code, _, err) = ingest();
    assert_eq!(code, 0, "{err}");
    let first = source_digest();
    let trees: Vec<PathBuf> = std::fs::read_dir(ctx.cache().join("unpacked"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(trees.len(), 1, "one kept tree: {trees:?}");
    let catalog = trees[0].join("rootfs/configs/catalog.json");
    assert!(catalog.is_file(), "{}", catalog.display());

    // The layer gone from cache and registry: the kept tree is all a pull needs.
    let layer = sha(&img.layers[0].1);
    std::fs::remove_file(ctx.cache().join("blobs/sha256").join(&layer[7..])).unwrap();
    reg.delete_blob("cat", &layer);
    let (code, _, err) = ingest();
    assert_eq!(code, 0, "from the kept tree: {err}");
    assert_eq!(source_digest(), first);

    // A truncated file: the tree is not used; without the layer anywhere the pull fails.
    let text = std::fs::read(&catalog).unwrap();
    std::fs::write(&catalog, &text[..text.len() / 2]).unwrap();
    let (code, _, err) = ingest();
    let line = one_error_line(code, &err, &reference);
    assert!(line.contains("not found"), "{line}");
    assert!(!catalog.exists(), "the changed tree was removed");
    // With the layer back in the registry, it is unpacked again: the same catalog.
    reg.push("cat", "v1", &img);
    let (code, _, err) = ingest();
    assert_eq!(code, 0, "{err}");
    assert_eq!(source_digest(), first);
    assert_eq!(std::fs::read(&catalog).unwrap(), text);

    // A cache that cannot keep trees (its `unpacked` is a file here) still serves its blobs:
    // the image is unpacked privately, as without a cache, and nothing is left behind.
    let other = ctx.path("other-cache");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("unpacked"), "").unwrap();
    let other_s = other.to_str().unwrap();
    let args = [
        "ingest",
        &reference,
        "--use-http",
        "--image-cache",
        other_s,
        "-o",
        db_s,
    ];
    let (code, _, err) = ctx.run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(source_digest(), first);
    assert!(other.join("unpacked").is_file());
    assert_eq!(std::fs::read_dir(other.join("tmp")).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(ctx.tmp()).unwrap().count(), 0);
}
