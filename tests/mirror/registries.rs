//! What is wrong with a whole registry is found before anything is copied and said once: an
//! expired certificate (as expired, with its dates, not as an untrusted CA) and refused
//! credentials (naming the auth file used).

use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::{auth_file, pki, Registry, USER};

fn one_error(err: &str) -> String {
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    errors[0].to_string()
}

#[test]
fn an_expired_certificate_is_said_to_have_expired_once() {
    let src = Source::start();
    let ctx = Ctx::new();
    let ca = pki::Pki::new(&ctx.path("pki"));
    ca.expire_server();
    let dst = Registry::private_ca(&ca, false);
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let (code, _, err) = ctx.run(&[
        "mirror",
        "--src-use-http",
        "--dest-cert-dir",
        ca.ca_only_dir().to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
        "--workspace",
        ctx.path("ws").to_str().unwrap(),
        &format!("docker://{}/m", dst.host()),
    ]);
    assert_eq!(code, 1, "{err}");
    let line = one_error(&err);
    assert!(
        line.contains("has expired (valid until ") && !line.contains("trust its CA"),
        "{line}"
    );
    assert!(line.contains("nothing was copied"), "{line}");
}

#[test]
fn refused_credentials_are_said_once_naming_the_auth_file() {
    let src = Source::start();
    let dst = Registry::tls_auth();
    let ctx = Ctx::new();
    let auth = ctx.path("auth.json");
    std::fs::write(&auth, auth_file(&dst.host(), USER, "wrong")).unwrap();
    let cfg = src.config(&ctx.path(""), &src.catalog(), "");
    let (code, _, err) = ctx.run_env(
        &[
            "mirror",
            "--src-use-http",
            "--dest-skip-tls-verify",
            "--config",
            cfg.to_str().unwrap(),
            "--workspace",
            ctx.path("ws").to_str().unwrap(),
            &format!("docker://{}/m", dst.host()),
        ],
        &[("REGISTRY_AUTH_FILE", &auth)],
    );
    assert_eq!(code, 1, "{err}");
    let line = one_error(&err);
    assert!(
        line.contains(&format!("registry {}", dst.host()))
            && line.contains(&format!("rejected the credentials from {}", auth.display())),
        "{line}"
    );
}
