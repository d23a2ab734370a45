//! The registry client against real registries: one fault on any request (503, 429 with
//! `Retry-After`, a reset connection) is survived by every command that pulls; a blob that
//! always fails is one error line; a hung registry fails in about `--registry-timeout`; a
//! registry behind a private CA is trusted through `SSL_CERT_FILE`, `--cert-dir` or certs.d,
//! with a client certificate for mutual TLS, the system store read only for TLS; plain HTTP and TLS mixed up, and a malformed auth
//! file, are one line that says what to do. Faults come from a relay in front of a real
//! `docker-registry`, never from a fake registry.

use crate::registry_support::ctx::{
    catalog_image, fbc_dir, one_error_line, render_local, silent_server, Ctx,
};
use crate::registry_support::faults::{Action, Faults, Seen};
use crate::registry_support::pki::Pki;
use crate::registry_support::Registry;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A catalog image `cat:v1` in a plain-HTTP registry, and what rendering it must give.
fn catalog_in(reg: &Registry, ctx: &Ctx) -> String {
    let dir = fbc_dir(ctx, "etcd");
    reg.push("cat", "v1", &catalog_image(&dir));
    render_local(&dir)
}

/// A relay that does `fault` to the `n`-th request whose path matches `on` (from 0), once,
/// and relays everything else.
fn fault_once(upstream: u16, on: &'static str, n: usize, fault: fn() -> Action) -> Faults {
    let count = Arc::new(AtomicUsize::new(0));
    Faults::start(
        upstream,
        Box::new(move |s: &Seen, _| {
            if s.path.contains(on) && count.fetch_add(1, Ordering::SeqCst) == n {
                fault()
            } else {
                Action::Relay
            }
        }),
    )
}

fn status_503() -> Action {
    Action::Answer(503, vec![])
}
fn status_429() -> Action {
    Action::Answer(429, vec![("Retry-After".into(), "1".into())])
}
fn reset() -> Action {
    Action::Reset
}

#[test]
fn render_survives_one_fault_on_any_request() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let want = catalog_in(&reg, &ctx);
    // The requests a clean pull makes, in order.
    let clean = Faults::start(reg.port, Box::new(|_: &Seen, _| Action::Relay));
    let r = format!("127.0.0.1:{}/cat:v1", clean.port);
    let (code, out, err) = ctx.run(&["render", &r, "--use-http", "--no-image-cache"]);
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
    let requests = clean.seen.lock().unwrap().len();
    assert!(requests >= 3, "manifest, config and layer: {requests}");
    for (name, fault) in [
        ("503", status_503 as fn() -> Action),
        ("429", status_429),
        ("reset", reset),
    ] {
        for n in 0..requests {
            let f = fault_once(reg.port, "/v2/", n, fault);
            let r = format!("127.0.0.1:{}/cat:v1", f.port);
            let started = Instant::now();
            let (code, out, err) = ctx.run(&["render", &r, "--use-http", "--no-image-cache"]);
            assert_eq!(code, 0, "{name} on request {n}: {err}");
            assert_eq!(out, want, "{name} on request {n}");
            let faulted = f.count("answered") + f.count("reset");
            assert_eq!(faulted, 1, "{name} on request {n}: one fault");
            if name == "429" {
                assert!(
                    started.elapsed() >= Duration::from_secs(1),
                    "Retry-After: 1 honoured"
                );
            }
        }
    }
    // The manifest GET answered 503 twice in a row.
    let count = Arc::new(AtomicUsize::new(0));
    let f = Faults::start(
        reg.port,
        Box::new(move |s: &Seen, _| {
            if s.path.contains("/manifests/") && count.fetch_add(1, Ordering::SeqCst) < 2 {
                Action::Answer(503, vec![])
            } else {
                Action::Relay
            }
        }),
    );
    let r = format!("127.0.0.1:{}/cat:v1", f.port);
    let (code, out, err) = ctx.run(&["render", &r, "--use-http", "--no-image-cache"]);
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
    assert_eq!(f.count("answered"), 2);
}

#[test]
fn ingest_serve_and_image_build_survive_a_fault() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    catalog_in(&reg, &ctx);
    // ingest: the layer's GET reset once.
    let f = fault_once(reg.port, "/blobs/", 1, reset);
    let r = format!("127.0.0.1:{}/cat:v1", f.port);
    let db = ctx.path("cat.db");
    let (code, _, err) = ctx.run(&[
        "ingest",
        &r,
        "-o",
        db.to_str().unwrap(),
        "--use-http",
        "--no-image-cache",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(f.count("reset"), 1);
    // serve: the manifest answered 503 once.
    let f = fault_once(reg.port, "/manifests/", 0, status_503);
    let r = format!("127.0.0.1:{}/cat:v1", f.port);
    let grpc = crate::common::free_port().to_string();
    let mut child = ctx
        .cmd(
            &[
                "serve",
                &r,
                "--use-http",
                "--no-image-cache",
                "-p",
                &grpc,
                "-t",
                "/dev/null",
            ],
            &[],
        )
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::common::wait_serving(
        &format!("http://127.0.0.1:{grpc}"),
        Duration::from_secs(60),
        || child.try_wait().ok().flatten().map(|s| s.to_string()),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(f.count("answered"), 1);
    // image build --base: the base's config answered 429 once.
    let f = fault_once(reg.port, "/blobs/", 0, status_429);
    let base = format!("127.0.0.1:{}/cat:v1", f.port);
    let src = fbc_dir(&ctx, "etcd");
    let out = format!("oci:{}:v1", ctx.path("built").display());
    let (code, _, err) = ctx.run(&[
        "image",
        "build",
        src.to_str().unwrap(),
        "-t",
        &out,
        "--base",
        &base,
        "--use-http",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(f.count("answered"), 1);
}

#[test]
fn a_blob_that_always_fails_is_one_error_line_naming_the_status() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    catalog_in(&reg, &ctx);
    let f = Faults::start(
        reg.port,
        Box::new(|s: &Seen, _| {
            if s.path.contains("/blobs/") {
                Action::Answer(503, vec![])
            } else {
                Action::Relay
            }
        }),
    );
    let r = format!("127.0.0.1:{}/cat:v1", f.port);
    let started = Instant::now();
    let (code, _, err) = ctx.run(&["render", &r, "--use-http", "--no-image-cache"]);
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("HTTP 503"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(f.count("answered") > 1, "retried before giving up");
}

#[test]
fn a_registry_that_never_answers_fails_in_about_the_timeout() {
    let ctx = Ctx::new();
    let (port, _h) = silent_server();
    for http in [true, false] {
        let r = format!("127.0.0.1:{port}/cat:v1");
        let mut args = vec!["render", &r, "--registry-timeout", "3"];
        if http {
            args.push("--use-http");
        }
        let started = Instant::now();
        let (code, _, err) = ctx.run(&args);
        let line = one_error_line(code, &err, &r);
        assert!(line.contains("did not answer within 3 s"), "{line}");
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "a timed-out request is not retried: {:?}",
            started.elapsed()
        );
    }
    // A push to it: the same, though pushes retry what may pass.
    catalog_image(&fbc_dir(&ctx, "etcd")).write_layout(&ctx.path("built"), "v1");
    let layout = format!("oci:{}:v1", ctx.path("built").display());
    let target = format!("127.0.0.1:{port}/cat:v1");
    let started = Instant::now();
    let (code, _, err) = ctx.run(&[
        "image",
        "push",
        &layout,
        &target,
        "--use-http",
        "--registry-timeout",
        "3",
    ]);
    let line = one_error_line(code, &err, &target);
    assert!(line.contains("did not answer within 3 s"), "{line}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "a timed-out push is not retried: {:?}",
        started.elapsed()
    );
}

#[test]
fn a_private_ca_is_trusted_through_ssl_cert_file_cert_dir_and_certs_d() {
    let ctx = Ctx::new();
    let pki = Pki::new(&ctx.path("pki"));
    let reg = Registry::private_ca(&pki, false);
    let want = catalog_in(&reg, &ctx);
    let r = format!("{}/cat:v1", reg.host());
    // Not trusted: one line naming the certificate problem and the ways to trust it.
    let (code, _, err) = ctx.run(&["render", &r, "--no-image-cache"]);
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("certificate"), "{line}");
    assert!(
        line.contains("--cert-dir") && line.contains("SSL_CERT_FILE"),
        "{line}"
    );
    // SSL_CERT_FILE.
    let ca = pki.ca();
    let (code, out, err) = ctx.run_env(
        &["render", &r, "--no-image-cache"],
        &[("SSL_CERT_FILE", &ca)],
    );
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
    // --cert-dir.
    let dir = pki.ca_only_dir();
    let (code, out, err) = ctx.run(&[
        "render",
        &r,
        "--no-image-cache",
        "--cert-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
    // $HOME/.config/containers/certs.d/HOST:PORT/ca.crt.
    let certs_d = ctx.path("home/.config/containers/certs.d").join(reg.host());
    std::fs::create_dir_all(&certs_d).unwrap();
    std::fs::copy(&ca, certs_d.join("ca.crt")).unwrap();
    let (code, out, err) = ctx.run(&["render", &r, "--no-image-cache"]);
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
}

#[test]
fn the_system_trust_store_is_read_at_the_first_tls_connection() {
    let ctx = Ctx::new();
    let debug = ("OPREG_LOG", std::path::Path::new("opreg=debug"));
    let read = "system trust store read";
    // Plain HTTP: never read.
    let http = Registry::http();
    let want = catalog_in(&http, &ctx);
    let r = format!("127.0.0.1:{}/cat:v1", http.port);
    let (code, out, err) = ctx.run_env(&["render", &r, "--use-http", "--no-image-cache"], &[debug]);
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
    assert!(!err.contains(read), "{err}");
    // TLS: read, and the registry's CA trusted beside it.
    let pki = Pki::new(&ctx.path("pki"));
    let tls = Registry::private_ca(&pki, false);
    let want = catalog_in(&tls, &ctx);
    let r = format!("{}/cat:v1", tls.host());
    let dir = pki.ca_only_dir();
    let (code, out, err) = ctx.run_env(
        &[
            "render",
            &r,
            "--no-image-cache",
            "--cert-dir",
            dir.to_str().unwrap(),
        ],
        &[debug],
    );
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
    assert_eq!(err.matches(read).count(), 1, "{err}");
}

#[test]
fn mutual_tls_presents_the_client_certificate_of_the_cert_dir() {
    let ctx = Ctx::new();
    let pki = Pki::new(&ctx.path("pki"));
    let reg = Registry::private_ca(&pki, true);
    let want = catalog_in(&reg, &ctx);
    let r = format!("{}/cat:v1", reg.host());
    let dir = pki.certs_dir();
    let (code, out, err) = ctx.run(&[
        "render",
        &r,
        "--no-image-cache",
        "--cert-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (0, want.as_str()), "{err}");
    // Without the client certificate the registry refuses the handshake: one line.
    let ca_only = pki.ca_only_dir();
    let (code, _, err) = ctx.run(&[
        "render",
        &r,
        "--no-image-cache",
        "--cert-dir",
        ca_only.to_str().unwrap(),
    ]);
    one_error_line(code, &err, &r);
}

#[test]
fn a_build_reads_and_pushes_through_two_private_cas_with_src_and_dest_cert_dirs() {
    let ctx = Ctx::new();
    let (pki_a, pki_b) = (Pki::new(&ctx.path("pki-a")), Pki::new(&ctx.path("pki-b")));
    let (src, dst) = (
        Registry::private_ca(&pki_a, false),
        Registry::private_ca(&pki_b, false),
    );
    catalog_in(&src, &ctx);
    let from = format!("{}/cat:v1", src.host());
    let to = format!("{}/built:v1", dst.host());
    let base = crate::image_build::base_layout(&ctx.path("base"), &[]);
    let (a, b) = (pki_a.ca_only_dir(), pki_b.ca_only_dir());
    let build = |dirs: &[&str]| {
        let mut args = vec![
            "image", "build", &from, "--base", &base, "-t", &to, "--push",
        ];
        args.extend(dirs);
        ctx.run(&args)
    };
    // One --cert-dir for both sides: the destination's certificate does not verify.
    let (code, _, err) = build(&["--cert-dir", a.to_str().unwrap()]);
    let line = one_error_line(code, &err, &to);
    assert!(line.contains("certificate"), "{line}");
    // Each side its own directory: read from A, pushed to B.
    let (code, digest, err) = build(&[
        "--src-cert-dir",
        a.to_str().unwrap(),
        "--dest-cert-dir",
        b.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let out = std::process::Command::new("skopeo")
        .args(["inspect", "--raw", "--cert-dir", b.to_str().unwrap()])
        .arg(format!("docker://{to}"))
        .output()
        .expect("skopeo is installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        crate::registry_support::sha(&out.stdout),
        digest.trim(),
        "{err}"
    );
}

#[test]
fn plain_http_and_tls_mixed_up_say_which_flag_to_change() {
    let ctx = Ctx::new();
    let plain = Registry::http();
    catalog_in(&plain, &ctx);
    let r = format!("{}/cat:v1", plain.host());
    let (code, _, err) = ctx.run(&["render", &r, "--no-image-cache"]);
    let line = one_error_line(code, &err, &r);
    assert!(
        line.contains("plain HTTP") && line.contains("--use-http"),
        "{line}"
    );
    assert!(!err.contains("retrying"), "not retried: {err}");

    let pki = Pki::new(&ctx.path("pki"));
    let tls = Registry::private_ca(&pki, false);
    catalog_in(&tls, &ctx);
    let r = format!("{}/cat:v1", tls.host());
    let (code, _, err) = ctx.run(&["render", &r, "--no-image-cache", "--use-http"]);
    let line = one_error_line(code, &err, &r);
    assert!(
        line.contains("speaks TLS") && line.contains("--use-http"),
        "{line}"
    );
    assert!(!err.contains("retrying"), "not retried: {err}");
}

#[test]
fn a_malformed_auth_file_is_an_error_naming_it() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    catalog_in(&reg, &ctx);
    let auth = ctx.path("auth.json");
    std::fs::write(&auth, "{\"auths\": {\"x\": ").unwrap();
    let r = format!("{}/cat:v1", reg.host());
    let (code, _, err) = ctx.run_env(
        &["render", &r, "--use-http", "--no-image-cache"],
        &[("REGISTRY_AUTH_FILE", &auth)],
    );
    let line = one_error_line(code, &err, &r);
    assert!(
        line.contains(auth.to_str().unwrap()) && line.contains("malformed"),
        "{line}"
    );
}

/// A layer's body cut off half way is asked for again from where it stopped (a `Range`
/// request the registry answers 206), and the catalog is still verified and rendered whole.
#[test]
fn a_blob_cut_off_part_way_is_resumed() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let want = catalog_in(&reg, &ctx);
    let blobs = Arc::new(AtomicUsize::new(0));
    let seen_blobs = blobs.clone();
    let f = Faults::start(
        reg.port,
        Box::new(move |s: &Seen, _| {
            // The second blob is the layer (the first is the config).
            if s.path.contains("/blobs/") && seen_blobs.fetch_add(1, Ordering::SeqCst) == 1 {
                Action::Truncate
            } else {
                Action::Relay
            }
        }),
    );
    let r = format!("127.0.0.1:{}/cat:v1", f.port);
    let (code, out, err) = ctx.run(&["render", &r, "--use-http", "--no-image-cache"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, want);
    assert_eq!(f.count("truncated"), 1);
    assert_eq!(
        blobs.load(Ordering::SeqCst),
        3,
        "config, cut layer, the rest of the layer"
    );
}
