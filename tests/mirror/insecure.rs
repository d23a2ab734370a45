//! One run that reads a plain-HTTP registry and a TLS one: the HTTP registry is marked
//! insecure (by containers' `registries.conf`, a drop-in of `registries.conf.d/`, or
//! `--insecure-registry`), and every other registry keeps verified HTTPS.

use crate::mirror_support::Source;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::{pki, Entry, Image, Registry};
use std::path::Path;

/// Whether a file named `hex` is anywhere under `dir`.
fn holds(dir: &Path, hex: &str) -> bool {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .any(|e| e.file_name() == hex)
}

#[test]
fn a_catalog_on_plain_http_and_images_on_tls_in_one_run() {
    let src = Source::start();
    let ctx = Ctx::new();
    let ca = pki::Pki::new(&ctx.path("pki"));
    let tls = Registry::private_ca(&ca, false);
    let ubi = Image::new(&[("name", "ubi-on-tls")])
        .layer(&[Entry::File("etc/release".into(), b"on tls\n".to_vec())]);
    let ubi_digest = tls.push("tools/ubi", "9", &ubi);
    let cfg = ctx.path("imageset.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: {}\n    packages:\n    - name: other\n  additionalImages:\n  - name: {}/tools/ubi:9\n",
            src.catalog(),
            tls.host()
        ),
    )
    .unwrap();
    let ca_dir = ca.ca_only_dir();
    let run = |n: &str, flags: &[&str]| {
        let out = format!("file://{}", ctx.path(&format!("out-{n}")).display());
        let ws = ctx.path(&format!("ws-{n}"));
        let mut args = vec!["mirror", "--config", cfg.to_str().unwrap()];
        args.extend(["--workspace", ws.to_str().unwrap()]);
        args.extend(flags);
        args.push(&out);
        let (code, _, err) = ctx.run(&args);
        (code, err, ctx.path(&format!("out-{n}")))
    };
    let cert_dir = ["--src-cert-dir", ca_dir.to_str().unwrap()];
    let ubi_hex = ubi_digest.trim_start_matches("sha256:").to_string();

    // Before: either way round, one of the two registries cannot be read.
    let (code, err, _) = run("tls-only", &cert_dir);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("use --insecure-registry {}", src.host)),
        "{err}"
    );
    let mut http = cert_dir.to_vec();
    http.push("--src-use-http");
    let (code, err, _) = run("http-only", &http);
    assert_eq!(code, 1, "{err}");

    // The flag: both read, the TLS registry still verified with the given CA.
    let mut flagged = cert_dir.to_vec();
    flagged.extend(["--insecure-registry", &src.host]);
    let (code, err, out) = run("flag", &flagged);
    assert_eq!(code, 0, "{err}");
    assert!(
        holds(&out, &ubi_hex),
        "the TLS registry's image is in the mirror"
    );
    let other = &src.images[&format!("{}/other/other-bundle:v1", src.host)];
    assert!(holds(&out, other.trim_start_matches("sha256:")), "{err}");

    // Only the named registry is insecure: without the CA, the TLS one is refused.
    let (code, err, _) = run("no-ca", &["--insecure-registry", &src.host]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&tls.host()), "{err}");

    // registries.conf in the user's directory , then a drop-in.
    let home_conf = ctx.path("home/.config/containers");
    std::fs::create_dir_all(&home_conf).unwrap();
    std::fs::write(
        home_conf.join("registries.conf"),
        format!(
            "unqualified-search-registries = [\"docker.io\"]\n[[registry]]\nlocation = \"{}\"\ninsecure = true\n",
            src.host
        ),
    )
    .unwrap();
    let (code, err, out) = run("conf", &cert_dir);
    assert_eq!(code, 0, "{err}");
    assert!(holds(&out, &ubi_hex));
    // A drop-in replaces the main file's entry for the same prefix.
    let drop_in = home_conf.join("registries.conf.d");
    std::fs::create_dir_all(&drop_in).unwrap();
    std::fs::write(
        drop_in.join("50-secure.conf"),
        format!(
            "[[registry]]\nlocation = \"{}\"\ninsecure = false\n",
            src.host
        ),
    )
    .unwrap();
    let (code, err, _) = run("drop-in-secure", &cert_dir);
    assert_eq!(code, 1, "{err}");
    std::fs::write(
        drop_in.join("50-secure.conf"),
        format!(
            "[[registry]]\nlocation = \"{}\"\ninsecure = true\n",
            src.host
        ),
    )
    .unwrap();
    std::fs::remove_file(home_conf.join("registries.conf")).unwrap();
    let (code, err, out) = run("drop-in", &cert_dir);
    assert_eq!(code, 0, "{err}");
    assert!(holds(&out, &ubi_hex));

    // A malformed file is one line naming it and the line.
    std::fs::write(
        drop_in.join("60-bad.conf"),
        "[[registry]]\ninsecure = maybe\n",
    )
    .unwrap();
    let (code, err, _) = run("bad", &cert_dir);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("60-bad.conf:2:"), "{err}");
}
