//! `opreg image build` and `opreg generate dockerfile`, run as the real binary: reproducible
//! digests, the layers' whiteouts, the pre-built cache checked by `serve
//! --cache-enforce-integrity`, opreg and foreign bases, multi-arch bases, and refusals. The
//! test binary is dynamically linked, so every build here names a base the test makes.

use crate::common;
use crate::registry_support;

use registry_support::{sha, Entry, Image};
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
  - name: etcd.v1.1.0
    replaces: etcd.v1.0.0
---
schema: olm.bundle
name: etcd.v1.0.0
package: etcd
image: quay.io/example/etcd-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.0.0}
---
schema: olm.bundle
name: etcd.v1.1.0
package: etcd
image: quay.io/example/etcd-bundle:v1.1.0
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.1.0}
"#;

/// A small valid FBC tree under `dir/catalog`.
pub fn catalog(dir: &Path) -> PathBuf {
    let c = dir.join("catalog");
    std::fs::create_dir_all(c.join("etcd")).unwrap();
    std::fs::write(c.join("etcd/index.yaml"), PACKAGE).unwrap();
    c
}

pub fn opreg_labels() -> Vec<(String, String)> {
    vec![
        ("io.opreg.version".into(), env!("CARGO_PKG_VERSION").into()),
        (
            "io.opreg.schema".into(),
            opreg::store::schema_version().to_string(),
        ),
    ]
}

/// A base image with a stale /configs and /tmp/cache of its own, as an OCI layout.
pub fn base_layout(dir: &Path, labels: &[(String, String)]) -> String {
    let l: Vec<(&str, &str)> = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    Image::new(&l)
        .layer(&[
            Entry::Dir("bin/".into()),
            Entry::File("bin/opm".into(), b"not a binary".to_vec()),
            Entry::Dir("configs/".into()),
            Entry::File("configs/stale.json".into(), b"{}".to_vec()),
            Entry::Dir("tmp/".into()),
            Entry::Dir("tmp/cache/".into()),
            Entry::File("tmp/cache/stale.db".into(), b"x".to_vec()),
        ])
        .write_layout(dir, "v1");
    format!("oci:{}:v1", dir.display())
}

pub fn build(args: &[&str], epoch: Option<&str>) -> (i32, String, String) {
    let mut c = Command::new(common::bin());
    c.arg("image").arg("build").args(args);
    match epoch {
        Some(e) => c.env("SOURCE_DATE_EPOCH", e),
        None => c.env_remove("SOURCE_DATE_EPOCH"),
    };
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

pub fn blob(layout: &Path, digest: &str) -> Vec<u8> {
    std::fs::read(layout.join("blobs/sha256").join(&digest[7..])).unwrap()
}

pub fn json_blob(layout: &Path, digest: &str) -> Value {
    serde_json::from_slice(&blob(layout, digest)).unwrap()
}

/// The digest `index.json` names for `tag`.
pub fn tagged(layout: &Path, tag: &str) -> String {
    let idx: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    idx["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The entries of a gzip layer: (path, mode, uid, mtime).
fn entries(layer: &[u8]) -> Vec<(String, u32, u64, u64)> {
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(layer));
    a.entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let h = e.header();
            (
                e.path().unwrap().to_string_lossy().to_string(),
                h.mode().unwrap(),
                h.uid().unwrap(),
                h.mtime().unwrap(),
            )
        })
        .collect()
}

/// Extracts the regular files and directories of `layers` into `root` (whiteouts skipped).
fn extract(layers: &[Vec<u8>], root: &Path) {
    for l in layers {
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(&l[..]));
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let p = e.path().unwrap().to_path_buf();
            if p.file_name().unwrap().to_string_lossy().starts_with(".wh.") {
                continue;
            }
            e.unpack_in(root).unwrap();
        }
    }
}

#[test]
fn builds_the_same_digest_in_different_directories() {
    let mut digests = Vec::new();
    let mut layouts = Vec::new();
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..2 {
        let dir = tmp.path().join(format!("checkout-{i}/nested"));
        std::fs::create_dir_all(&dir).unwrap();
        let cat = catalog(&dir);
        let base = base_layout(&dir.join("base"), &opreg_labels());
        let out = dir.join("out");
        let t = format!("oci:{}:cat", out.display());
        let (code, stdout, stderr) = build(
            &[
                cat.to_str().unwrap(),
                "--base",
                &base,
                "-t",
                &t,
                "--label",
                "a=b",
            ],
            Some("1700000000"),
        );
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.starts_with("sha256:"), "{stdout}");
        assert_eq!(tagged(&out, "cat"), stdout);
        digests.push(stdout);
        layouts.push(out);
    }
    assert_eq!(digests[0], digests[1]);

    let out = &layouts[0];
    let m = json_blob(out, &digests[0]);
    let cfg = json_blob(out, m["config"]["digest"].as_str().unwrap());
    let labels = &cfg["config"]["Labels"];
    assert_eq!(
        labels["operators.operatorframework.io.index.configs.v1"],
        "/configs"
    );
    assert_eq!(
        labels["org.opencontainers.image.created"],
        "2023-11-14T22:13:20Z"
    );
    assert_eq!(labels["a"], "b");
    assert_eq!(cfg["created"], "2023-11-14T22:13:20Z");
    assert_eq!(cfg["config"]["Entrypoint"], serde_json::json!(["/bin/opm"]));
    assert_eq!(
        cfg["config"]["Cmd"],
        serde_json::json!(["serve", "/configs", "--cache-dir=/tmp/cache"])
    );
    let layers = m["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 3, "the base's layer and two of the catalog");
    assert_eq!(
        cfg["rootfs"]["diff_ids"].as_array().unwrap().len(),
        layers.len()
    );

    // The catalog layer: /configs replaced whole, opm's layout, fixed owner and time.
    let configs = blob(out, layers[1]["digest"].as_str().unwrap());
    let e = entries(&configs);
    let names: Vec<&str> = e.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "configs/",
            "configs/.wh..wh..opq",
            "configs/etcd/",
            "configs/etcd/catalog.json"
        ]
    );
    assert!(e.iter().all(|x| x.2 == 0 && x.3 == 1_700_000_000));
    // The cache layer: the base's cache replaced.
    let cache = blob(out, layers[2]["digest"].as_str().unwrap());
    let names: Vec<String> = entries(&cache).into_iter().map(|x| x.0).collect();
    assert_eq!(
        names,
        [
            "tmp/",
            "tmp/cache/",
            "tmp/cache/.wh..wh..opq",
            "tmp/cache/opreg-catalog.db"
        ]
    );

    // The pre-built cache matches the files beside it: serve starts without building.
    let root = tempfile::tempdir().unwrap();
    extract(&[configs, cache], root.path());
    let (code, _, stderr) = common::opreg(&[
        "serve",
        root.path().join("configs").to_str().unwrap(),
        "--cache-dir",
        root.path().join("tmp/cache").to_str().unwrap(),
        "--cache-only",
        "--cache-enforce-integrity",
    ]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_foreign_base_gets_configs_only() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &[]);
    let out = tmp.path().join("out");
    let t = format!("oci:{}", out.display());
    let (code, digest, stderr) = build(&[cat.to_str().unwrap(), "--base", &base, "-t", &t], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("no pre-built cache goes in"), "{stderr}");
    let m = json_blob(&out, &digest);
    let cfg = json_blob(&out, m["config"]["digest"].as_str().unwrap());
    assert_eq!(
        cfg["config"]["Cmd"],
        serde_json::json!(["serve", "/configs"])
    );
    assert_eq!(cfg["created"], "1970-01-01T00:00:00Z");
    let layers = m["layers"].as_array().unwrap();
    let cache = blob(&out, layers[2]["digest"].as_str().unwrap());
    let names: Vec<String> = entries(&cache).into_iter().map(|x| x.0).collect();
    assert_eq!(names, ["tmp/", "tmp/.wh.cache"]);
    // What opreg reads back from the layout is the catalog.
    let (code, stdout, stderr) = common::opreg(&["list", "packages", &t]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("etcd"), "{stdout}");
}

/// An opreg base for linux/amd64 and linux/arm64 (and an attestation entry) as the layout
/// `dir`, tagged `multi`; returns its reference.
pub fn multi_arch_base(dir: &Path) -> String {
    let labels = opreg_labels();
    let l: Vec<(&str, &str)> = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let amd = Image::new(&l).layer(&[Entry::File("amd".into(), b"1".to_vec())]);
    let arm = Image::new(&l).layer(&[Entry::File("arm".into(), b"2".to_vec())]);
    arm.write_layout(dir, "arm");
    amd.write_layout(dir, "amd");
    let entry = |img: &Image, arch: &str| {
        let m = img.manifest();
        serde_json::json!({"mediaType": img.media_type(), "digest": sha(&m), "size": m.len(),
            "platform": {"os": "linux", "architecture": arch}})
    };
    let index = serde_json::json!({"schemaVersion": 2, "mediaType": registry_support::OCI_INDEX,
        "manifests": [entry(&amd, "amd64"), entry(&arm, "arm64"),
            {"mediaType": registry_support::OCI_MANIFEST, "digest": sha(&amd.manifest()), "size": amd.manifest().len(),
             "platform": {"os": "unknown", "architecture": "unknown"}}]})
    .to_string();
    std::fs::write(
        dir.join("blobs/sha256").join(&sha(index.as_bytes())[7..]),
        &index,
    )
    .unwrap();
    let top = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": registry_support::OCI_INDEX, "digest": sha(index.as_bytes()), "size": index.len(),
        "annotations": {"org.opencontainers.image.ref.name": "multi"}}]});
    std::fs::write(dir.join("index.json"), top.to_string()).unwrap();
    format!("oci:{}:multi", dir.display())
}

#[test]
fn a_multi_arch_base_gives_a_multi_arch_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = multi_arch_base(&tmp.path().join("base"));

    let out = tmp.path().join("out");
    let t = format!("oci:{}:all", out.display());
    let (code, digest, stderr) = build(&[cat.to_str().unwrap(), "--base", &base, "-t", &t], None);
    assert_eq!(code, 0, "{stderr}");
    let idx = json_blob(&out, &digest);
    assert_eq!(idx["mediaType"], registry_support::OCI_INDEX);
    let ms = idx["manifests"].as_array().unwrap();
    let archs: Vec<&str> = ms
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(
        archs,
        ["amd64", "arm64"],
        "the attestation entry is left out"
    );
    let layers = |d: &Value| -> Vec<Value> {
        json_blob(&out, d["digest"].as_str().unwrap())["layers"]
            .as_array()
            .unwrap()
            .clone()
    };
    let (a, b) = (layers(&ms[0]), layers(&ms[1]));
    assert_ne!(a[0], b[0], "each platform keeps its own base layer");
    assert_eq!(a[1..], b[1..], "the same catalog layers on every platform");

    let t2 = format!("oci:{}:arm", out.display());
    let (code, digest, stderr) = build(
        &[
            cat.to_str().unwrap(),
            "--base",
            &base,
            "--platform",
            "linux/arm64",
            "-t",
            &t2,
        ],
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    let idx = json_blob(&out, &digest);
    assert_eq!(idx["manifests"].as_array().unwrap().len(), 1);
    assert_eq!(tagged(&out, "all"), tagged(&out, "all"));

    let (code, _, stderr) = build(
        &[
            cat.to_str().unwrap(),
            "--base",
            &base,
            "--platform",
            "linux/s390x",
            "-t",
            &t2,
        ],
        None,
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("no image for platform linux/s390x"),
        "{stderr}"
    );
}

#[test]
fn an_invalid_catalog_builds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    std::fs::write(
        cat.join("etcd/index.yaml"),
        PACKAGE.replace("defaultChannel: stable", "defaultChannel: nope"),
    )
    .unwrap();
    let base = base_layout(&tmp.path().join("base"), &[]);
    let out = tmp.path().join("out");
    let t = format!("oci:{}", out.display());
    let (code, stdout, stderr) = build(&[cat.to_str().unwrap(), "--base", &base, "-t", &t], None);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("nope"), "{stderr}");
    assert!(stderr.contains("nothing was built"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn refusals_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let t = format!("oci:{}", tmp.path().join("out").display());
    // The test binary is dynamically linked: it cannot be the default base.
    let (code, _, stderr) = build(&[cat.to_str().unwrap(), "-t", &t], None);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("dynamically linked"), "{stderr}");
    assert!(stderr.contains("--base"), "{stderr}");
    // Said before the catalog is read: a source that is not there is not even looked at.
    let missing = tmp.path().join("no-such-catalog");
    let (code, _, stderr) = build(&[missing.to_str().unwrap(), "-t", &t], None);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("dynamically linked"), "{stderr}");
    // The default base has one platform, the binary's: another one is refused whatever the
    // binary's linking, and names both.
    let foreign = if cfg!(target_arch = "s390x") {
        "linux/ppc64le"
    } else {
        "linux/s390x"
    };
    let (code, _, stderr) = build(
        &[cat.to_str().unwrap(), "--platform", foreign, "-t", &t],
        None,
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("--platform {foreign}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("the default base is this opreg binary"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // The binary's own platform passes that check (and meets the linking one).
    let host = format!(
        "linux/{}",
        match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            a => a,
        }
    );
    let (code, _, stderr) = build(
        &[cat.to_str().unwrap(), "--platform", &host, "-t", &t],
        None,
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("dynamically linked"), "{stderr}");
    // A base that is not an image.
    let (code, _, stderr) = build(
        &[
            cat.to_str().unwrap(),
            "--base",
            &format!("oci:{}", tmp.path().display()),
            "-t",
            &t,
        ],
        None,
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("not an OCI image layout"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // A target that is not a reference.
    let (code, _, stderr) = build(&[cat.to_str().unwrap(), "-t", "Not/A Ref"], None);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("invalid image reference"), "{stderr}");
    assert!(!tmp.path().join("out").exists());
}

#[test]
fn a_registry_target_without_push_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let base = base_layout(&tmp.path().join("base"), &[]);
    // Nothing listens there: nothing is sent.
    let port = common::free_port();
    let r = format!("127.0.0.1:{port}/cat/alog:v1");
    let (code, digest, stderr) = build(&[cat.to_str().unwrap(), "--base", &base, "-t", &r], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("would push {r} {digest}")),
        "{stderr}"
    );
    assert!(stderr.contains("--push"), "{stderr}");
}

#[test]
fn generate_dockerfile_writes_opms_text() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let (code, _, stderr) = common::opreg(&[
        "generate",
        "dockerfile",
        &format!("{}/", cat.display()),
        "-l",
        "b=2,a=1",
        "--extra-labels",
        "c=3",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let got = std::fs::read_to_string(tmp.path().join("catalog.Dockerfile")).unwrap();
    // opm generate dockerfile -i quay.io/opreg/opreg:latest -b quay.io/opreg/opreg:latest
    // -l b=2,a=1 --extra-labels c=3 writes exactly this.
    let want = "# The builder image is expected to contain
# /bin/opm (with serve subcommand)
FROM quay.io/opreg/opreg:latest as builder

# Copy FBC root into image at /configs and pre-populate serve cache
ADD catalog /configs
RUN [\"/bin/opm\", \"serve\", \"/configs\", \"--cache-dir=/tmp/cache\", \"--cache-only\"]

FROM quay.io/opreg/opreg:latest
# The base image is expected to contain
# /bin/opm (with serve subcommand) and /bin/grpc_health_probe

# Configure the entrypoint and command
ENTRYPOINT [\"/bin/opm\"]
CMD [\"serve\", \"/configs\", \"--cache-dir=/tmp/cache\"]

COPY --from=builder /configs /configs
COPY --from=builder /tmp/cache /tmp/cache

# Set FBC-specific label for the location of the FBC root directory
# in the image
LABEL operators.operatorframework.io.index.configs.v1=/configs

# Set other custom labels
LABEL \"a\"=\"1\"
LABEL \"b\"=\"2\"
LABEL \"c\"=\"3\"
";
    assert_eq!(got, want);
    // Never replaced.
    let (code, _, stderr) = common::opreg(&["generate", "dockerfile", cat.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(stderr.contains("already exists"), "{stderr}");
    let (code, _, stderr) = common::opreg(&[
        "generate",
        "dockerfile",
        cat.to_str().unwrap(),
        "-b",
        "scratch",
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("invalid builder image"), "{stderr}");
}
