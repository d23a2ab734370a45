//! Reaching a registry for an image SOURCE, against Debian's `docker-registry` on loopback: TLS
//! with basic auth, the bearer-token flow with credentials, and unreachable or unknown images
//! failing in one line.

use crate::registry_support;
use registry_support::ctx::*;
use registry_support::*;
use std::time::{Duration, Instant};

#[test]
fn unreachable_or_unknown_images_fail_with_one_line() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    reg.push("cat", "v1", &catalog_image(&etcd));
    // Unknown repository, unknown tag.
    for r in [
        format!("{}/nope:v1", reg.host()),
        format!("{}/cat:v2", reg.host()),
    ] {
        let (code, _, err) = ctx.run(&["render", &r, "--use-http"]);
        let line = one_error_line(code, &err, &r);
        assert!(line.contains("not found"), "{line}");
    }
    // Registry down.
    let r = format!("127.0.0.1:{}/cat:v1", free_port());
    let (code, _, err) = ctx.run(&["validate", &r, "--use-http"]);
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("connection refused"), "{line}");
    // A registry that does not answer.
    let (port, _h) = silent_server();
    let r = format!("127.0.0.1:{port}/cat:v1");
    let t = Instant::now();
    let (code, _, err) = ctx.run(&["render", &r, "--use-http", "--registry-timeout", "2"]);
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("did not answer within 2 s"), "{line}");
    assert!(t.elapsed() < Duration::from_secs(20));
    // Plain HTTP registry without --use-http: a TLS failure, still one line.
    let r = format!("{}/cat:v1", reg.host());
    let (code, _, err) = ctx.run(&["render", &r]);
    one_error_line(code, &err, &r);
}

#[test]
fn tls_registry_with_basic_auth() {
    let reg = Registry::tls_auth();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    reg.push("secure/cat", "v1", &catalog_image(&etcd));
    let r = format!("{}/secure/cat:v1", reg.host());
    // Self-signed certificate, no --skip-tls-verify.
    let (code, _, err) = ctx.run(&["render", &r]);
    let line = one_error_line(code, &err, &r);
    assert!(
        line.contains("certificate") && line.contains("--skip-tls-verify"),
        "{line}"
    );
    // No credentials: the error says where it looked, a missing REGISTRY_AUTH_FILE by name.
    let (code, _, err) = ctx.run(&["render", &r, "--skip-tls-verify"]);
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("unauthorized"), "{line}");
    assert!(line.contains("none were found in"), "{line}");
    let missing = ctx.path("no-such-auth.json");
    let (code, _, err) = ctx.run_env(
        &["render", &r, "--skip-tls-verify"],
        &[("REGISTRY_AUTH_FILE", &missing)],
    );
    let line = one_error_line(code, &err, &r);
    assert!(
        line.contains(&format!(
            "{} (REGISTRY_AUTH_FILE; it does not exist)",
            missing.display()
        )),
        "{line}"
    );
    // Wrong credentials first in the search order, right ones later: the first file wins.
    let auth = |user: &str, pass: &str| auth_file(&reg.host(), user, pass);
    let wrong = ctx.path("wrong-auth.json");
    std::fs::write(&wrong, auth(USER, "not-the-password")).unwrap();
    let docker = ctx.path("docker");
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(docker.join("config.json"), auth(USER, PASSWORD)).unwrap();
    let (code, _, err) = ctx.run_env(
        &["render", &r, "--skip-tls-verify"],
        &[("REGISTRY_AUTH_FILE", &wrong), ("DOCKER_CONFIG", &docker)],
    );
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("unauthorized"), "{line}");
    assert!(
        line.contains(&format!(
            "rejected the credentials from {}",
            wrong.display()
        )),
        "the auth file used is named: {line}"
    );
    // The right ones (from $DOCKER_CONFIG), with debug logs that must not show the secret.
    let mut c = ctx.cmd(
        &["render", &r, "--skip-tls-verify"],
        &[("DOCKER_CONFIG", &docker)],
    );
    let out = c.env("OPREG_LOG", "debug").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), render_local(&etcd));
    assert!(
        !err.contains(PASSWORD) && !err.contains(&basic(USER, PASSWORD)[6..]),
        "{err}"
    );
}

#[test]
fn bearer_token_flow_with_credentials() {
    let reg = Registry::token_auth();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    reg.push("secure/cat", "v1", &catalog_image(&etcd));
    let r = format!("{}/secure/cat:v1", reg.host());
    // Anonymous: the token server refuses.
    let (code, _, err) = ctx.run(&["render", &r, "--use-http"]);
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("unauthorized"), "{line}");
    // Credentials from $XDG_RUNTIME_DIR/containers/auth.json: a token, then the image.
    let run = ctx.path("run");
    std::fs::create_dir_all(run.join("containers")).unwrap();
    let auth = auth_file(&reg.host(), USER, PASSWORD);
    std::fs::write(run.join("containers/auth.json"), auth).unwrap();
    let (code, out, err) = ctx.run_env(&["render", &r, "--use-http"], &[("XDG_RUNTIME_DIR", &run)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, render_local(&etcd));
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
            .any(|l| l.starts_with("200 GET /token?scope=repository%3Asecure%2Fcat%3Apull")),
        "{log:?}"
    );
}
