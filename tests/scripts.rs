//! The repository's shell scripts, run for real: `scripts/apt-mirror.sh` finds the Debian mirror
//! apt uses (one-line and deb822 sources), which the container smoke test debootstraps from.

use std::path::Path;
use std::process::Command;

/// `scripts/apt-mirror.sh ROOT` on an apt configuration written under ROOT.
fn apt_mirror(files: &[(&str, &str)]) -> (i32, String) {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("etc/apt/sources.list.d")).unwrap();
    for (name, content) in files {
        std::fs::write(root.path().join("etc/apt").join(name), content).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/apt-mirror.sh");
    let out = Command::new("sh")
        .arg(&script)
        .arg(root.path())
        .env_remove("OPREG_DEBIAN_MIRROR")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

#[test]
fn the_container_smoke_test_takes_its_mirror_from_apt() {
    let smoke = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/container-smoke.sh"),
    )
    .unwrap();
    assert!(
        !smoke.contains("deb.debian.org") && smoke.contains("apt-mirror.sh"),
        "container-smoke.sh must not name a mirror's host"
    );
    let deb822 = "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n\
                  Types: deb-src deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n";
    assert_eq!(
        apt_mirror(&[("sources.list.d/debian.sources", deb822)]),
        (0, "http://mirror.example/debian".into())
    );
    let one_line = "# comment\ndeb [signed-by=/k.gpg] http://one.example/debian bookworm main\n";
    assert_eq!(
        apt_mirror(&[("sources.list", one_line)]),
        (0, "http://one.example/debian".into())
    );
    let disabled = "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n";
    assert_eq!(apt_mirror(&[("sources.list.d/x.sources", disabled)]).0, 1);
    assert_eq!(apt_mirror(&[]).0, 1);
}
