//! `opreg serve --tls-cert --tls-key` against the real binary: grpcurl with `-cacert` on the
//! gRPC port (health, reflection, a call), curl with `--cacert` on the HTTP port (HTTP/1.1
//! and HTTP/2 by ALPN), and the flag errors (both flags or neither: usage, exit 2; a bad PEM
//! file: one line naming it, exit 1). The certificate is self-signed, made by openssl here.

use crate::common;

use crate::registry_support;

use common::{free_port, grpcurl_with, opreg, Server};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn cert_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    registry_support::self_signed(
        &key,
        &cert,
        &[
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            // A leaf: webpki (the health probe's verifier) refuses a CA certificate used as
            // the server's own (CaUsedAsEndEntity), which openssl's default for -x509 is.
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ],
    );
    (cert, key)
}

/// A small valid catalog.
fn catalog(dir: &Path) -> PathBuf {
    let f = dir.join("catalog.yaml");
    std::fs::write(
        &f,
        "schema: olm.package\nname: tls-test\ndefaultChannel: stable\n---\n\
         schema: olm.channel\npackage: tls-test\nname: stable\nentries:\n  - name: tls-test.v1.0.0\n---\n\
         schema: olm.bundle\nname: tls-test.v1.0.0\npackage: tls-test\nimage: example.com/tls-test:1\n\
         properties:\n  - type: olm.package\n    value: {packageName: tls-test, version: 1.0.0}\n",
    )
    .unwrap();
    f
}

fn curl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "30"])
        .args(args)
        .output()
        .expect("curl is installed (README: Tests)");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn tls_on_both_ports_with_grpcurl_and_curl() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = cert_pair(dir.path());
    let src = catalog(dir.path());
    let http = free_port();
    let mut server = Server::spawn(&[
        src.to_str().unwrap(),
        "--http-port",
        &http.to_string(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let target = format!("127.0.0.1:{}", server.port);
    let ca = cert.to_str().unwrap();

    // Health over TLS, polled until SERVING (bounded).
    let start = Instant::now();
    loop {
        let (code, out, _) =
            grpcurl_with(&["-cacert", ca, &target, "grpc.health.v1.Health/Check"], "");
        if code == 0 && out.contains("SERVING") {
            break;
        }
        if let Some(why) = server.exited() {
            panic!("opreg serve exited: {why}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no SERVING over TLS within 60 s:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Reflection and a call, with the CA; plaintext is refused by the TLS port.
    let (code, out, err) = grpcurl_with(&["-cacert", ca, &target, "list"], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("api.Registry"), "{out}");
    let (code, out, err) = grpcurl_with(
        &[
            "-cacert",
            ca,
            "-d",
            "{}",
            &target,
            "api.Registry/ListPackages",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"name\""), "{out}");
    let (code, _, _) = grpcurl_with(&["-plaintext", "-max-time", "10", &target, "list"], "");
    assert_ne!(code, 0, "plaintext gRPC answered on the TLS port");
    let (code, _, err) = grpcurl_with(&["-max-time", "10", &target, "list"], "");
    assert_ne!(code, 0, "an unknown CA was accepted: {err}");

    // The built-in health probe, as grpc_health_probe (its flags) and as `opreg health-probe`.
    let link_dir = tempfile::tempdir().unwrap();
    let probe = link_dir.path().join("grpc_health_probe");
    std::os::unix::fs::symlink(common::bin(), &probe).unwrap();
    let run_probe = |args: &[&str]| {
        let out = Command::new(&probe).args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let addr = format!("-addr={target}");
    let (code, out) = run_probe(&[
        &addr,
        "-tls",
        "-tls-ca-cert",
        ca,
        "-connect-timeout=10s",
        "-rpc-timeout=10s",
    ]);
    assert_eq!((code, out.trim()), (0, "status: SERVING"));
    let (code, out) = run_probe(&[
        &addr,
        "-tls",
        "-tls-no-verify",
        "-connect-timeout=10s",
        "-rpc-timeout=10s",
    ]);
    assert_eq!((code, out.trim()), (0, "status: SERVING"));
    // The public roots do not include the self-signed certificate; plaintext is no TLS server.
    let (code, out) = run_probe(&[&addr, "-tls", "-connect-timeout=10s"]);
    assert_eq!(code, 2, "{out}");
    let (code, out) = run_probe(&[&addr, "-connect-timeout=3s", "-rpc-timeout=3s"]);
    assert_ne!(code, 0, "{out}");
    let (code, out, err) = opreg(&[
        "health-probe",
        "--addr",
        &target,
        "--tls",
        "--tls-ca-cert",
        ca,
        "--rpc-timeout",
        "10s",
        "--connect-timeout",
        "10s",
    ]);
    assert_eq!((code, out.trim()), (0, "status: SERVING"), "{err}");

    // /api/v1/all with the CA, over HTTP/1.1 and HTTP/2; the source's objects as catalogd
    // stores them, one per line.
    let rendered = concat!(
        r#"{"defaultChannel":"stable","name":"tls-test","schema":"olm.package"}"#,
        "\n",
        r#"{"entries":[{"name":"tls-test.v1.0.0"}],"name":"stable","package":"tls-test","schema":"olm.channel"}"#,
        "\n",
        r#"{"image":"example.com/tls-test:1","name":"tls-test.v1.0.0","package":"tls-test","properties":[{"type":"olm.package","value":{"packageName":"tls-test","version":"1.0.0"}}],"schema":"olm.bundle"}"#,
        "\n",
    );
    let url = format!("https://127.0.0.1:{http}/catalogs/catalog/api/v1/all");
    for version in ["--http1.1", "--http2"] {
        let (code, body, err) = curl(&["--cacert", ca, version, "-w", "\n%{http_version}", &url]);
        assert_eq!(code, 0, "{version}: {err}");
        let (body, got) = body.rsplit_once('\n').unwrap();
        assert_eq!(got, if version == "--http2" { "2" } else { "1.1" });
        assert_eq!(body, rendered, "{version}");
    }
    let (code, out, _) = curl(&["--cacert", ca, &format!("https://127.0.0.1:{http}/healthz")]);
    assert_eq!((code, out.trim()), (0, "ok"));
    // Without the CA the certificate is not trusted (curl's exit code 60).
    let (code, _, _) = curl(&[&url]);
    assert_eq!(code, 60);
    assert_eq!(server.terminate(), Some(0));
}

#[test]
fn tls_flag_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = cert_pair(dir.path());
    let src = catalog(dir.path());
    let port = free_port().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "serve",
            src.to_str().unwrap(),
            "-p",
            &port,
            "-t",
            "/dev/null",
        ];
        args.extend_from_slice(extra);
        opreg(&args)
    };

    // One without the other: usage.
    let (code, _, err) = run(&["--tls-cert", cert.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--tls-key"), "{err}");
    let (code, _, err) = run(&["--tls-key", key.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");

    // A file that is not PEM, a missing file, a key that is not the certificate's.
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "hello\n").unwrap();
    let (other_cert, _) = {
        let d = dir.path().join("other");
        std::fs::create_dir(&d).unwrap();
        cert_pair(&d)
    };
    let missing = dir.path().join("missing.pem");
    for (c, k, names) in [
        (&junk, &key, &junk),
        (&cert, &junk, &junk),
        (&missing, &key, &missing),
        (&other_cert, &key, &key),
    ] {
        let (code, _, err) = run(&[
            "--tls-cert",
            c.to_str().unwrap(),
            "--tls-key",
            k.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{err}");
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("ERROR") || l.starts_with("error"))
            .collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert!(errors[0].contains(names.to_str().unwrap()), "{err}");
    }
}
