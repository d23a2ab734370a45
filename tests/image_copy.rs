//! `opreg::image::copy::copy` between registries and OCI layouts, against Debian's
//! `docker-registry` on loopback, read back by `skopeo` as an independent client. The requests
//! a copy makes are counted by the fault relay, which sees every one of them.

use crate::registry_support;

use opreg::image::copy::{copy, Copied, CopyOptions};
use opreg::image::reference::{parse_source, ImageSource};
use opreg::progress::Silent;
use opreg::registry::{Connection, Connections};
use registry_support::ctx::Ctx;
use registry_support::faults::{Action, Faults, Seen};
use registry_support::pki::Pki;
use registry_support::{sha, Entry, Image, Registry};
use std::process::Command;
use std::sync::Arc;

fn opts() -> CopyOptions {
    CopyOptions::default()
}

/// Both sides over plain HTTP.
fn http() -> Connections {
    Connections::same(Connection {
        use_http: true,
        ..Default::default()
    })
}

fn src(s: &str) -> ImageSource {
    parse_source(s).unwrap()
}

fn run(from: &str, to: &str, o: &CopyOptions) -> Copied {
    copy(&src(from), &src(to), &http(), o, &Silent).unwrap_or_else(|e| panic!("{e:#}"))
}

/// `skopeo inspect --raw` of a `docker://` or `oci:` reference.
fn raw(reference: &str) -> Vec<u8> {
    let out = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false", reference])
        .output()
        .expect("skopeo is installed");
    assert!(
        out.status.success(),
        "skopeo inspect --raw {reference}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `skopeo inspect`'s digest of a reference (for an index, the platform skopeo picks).
fn inspected(reference: &str) -> String {
    let out = Command::new("skopeo")
        .args([
            "--override-arch",
            "arm64",
            "inspect",
            "--tls-verify=false",
            reference,
        ])
        .output()
        .expect("skopeo is installed");
    assert!(
        out.status.success(),
        "skopeo inspect {reference}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["Digest"].as_str().unwrap().to_string()
}

fn amd64() -> Image {
    Image::new(&[("a", "1")]).layer(&[Entry::File("a.txt".into(), b"amd64".to_vec())])
}

fn arm64() -> Image {
    Image::new(&[("a", "1")])
        .arch("arm64")
        .layer(&[Entry::File("a.txt".into(), b"arm64".to_vec())])
}

/// Every blob of the two platforms.
fn blob_count() -> usize {
    4
}

fn relay(reg: &Registry) -> Faults {
    Faults::start(reg.port, Box::new(|_: &Seen, _: usize| Action::Relay))
}

fn seen(f: &Faults, pred: impl Fn(&Seen) -> bool) -> usize {
    f.seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| pred(s))
        .count()
}

fn is_upload(s: &Seen) -> bool {
    s.path.contains("/blobs/uploads/") && (s.method == "PUT" || s.method == "PATCH")
}

#[test]
fn registry_to_registry_keeps_every_digest_and_a_second_copy_uploads_nothing() {
    let (a, b) = (Registry::http(), Registry::http());
    let top = a.push_index(
        "src/cat",
        "v1",
        &[("linux", "amd64", &amd64()), ("linux", "arm64", &arm64())],
    );
    let f = relay(&b);
    let to = format!("127.0.0.1:{}/dst/cat:v1", f.port);
    let first = run(&format!("{}/src/cat:v1", a.host()), &to, &opts());
    assert_eq!(first.digest, top);
    assert_eq!(
        (first.uploaded, first.skipped, first.mounted),
        (blob_count(), 0, 0)
    );
    assert_eq!(first.manifests, 3);
    let original = raw(&format!("docker://{}/src/cat:v1", a.host()));
    let copied = raw(&format!("docker://{}/dst/cat:v1", b.host()));
    assert_eq!(copied, original, "the index byte for byte");
    assert_eq!(sha(&copied), top);
    assert_eq!(
        inspected(&format!("docker://{}/dst/cat:v1", b.host())),
        inspected(&format!("docker://{}/src/cat:v1", a.host()))
    );
    for img in [amd64(), arm64()] {
        let d = sha(&img.manifest());
        assert_eq!(
            raw(&format!("docker://{}/dst/cat@{d}", b.host())),
            img.manifest()
        );
    }
    assert_eq!(seen(&f, is_upload), blob_count());

    let before = f.seen.lock().unwrap().len();
    let second = run(&format!("{}/src/cat:v1", a.host()), &to, &opts());
    assert_eq!((second.uploaded, second.skipped), (0, blob_count()));
    assert_eq!(
        seen(&f, is_upload),
        blob_count(),
        "the second copy sent no blob"
    );
    let posts = f.seen.lock().unwrap()[before..]
        .iter()
        .filter(|(s, _)| s.method == "POST")
        .count();
    assert_eq!(posts, 0, "the second copy opened no upload");
}

#[test]
fn registry_to_layout_and_layout_to_registry_keep_every_digest() {
    let ctx = Ctx::new();
    let (a, b) = (Registry::http(), Registry::http());
    let top = a.push_index(
        "src/cat",
        "v1",
        &[("linux", "amd64", &amd64()), ("linux", "arm64", &arm64())],
    );
    let dir = ctx.path("layout");
    let layout = format!("oci:{}:v1", dir.display());
    let into = run(&format!("{}/src/cat:v1", a.host()), &layout, &opts());
    assert_eq!(
        (into.digest.as_str(), into.uploaded),
        (top.as_str(), blob_count())
    );
    let original = raw(&format!("docker://{}/src/cat:v1", a.host()));
    assert_eq!(raw(&layout), original, "the layout's index byte for byte");
    assert_eq!(
        inspected(&layout),
        inspected(&format!("docker://{}/src/cat:v1", a.host()))
    );
    // Into the layout again: nothing is copied twice, and it is still listed once.
    let again = run(&format!("{}/src/cat:v1", a.host()), &layout, &opts());
    assert_eq!((again.uploaded, again.skipped), (0, blob_count()));
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["manifests"].as_array().unwrap().len(), 1);

    let out = run(&layout, &format!("{}/back/cat:v2", b.host()), &opts());
    assert_eq!(
        (out.digest.as_str(), out.uploaded),
        (top.as_str(), blob_count())
    );
    assert_eq!(raw(&format!("docker://{}/back/cat:v2", b.host())), original);

    // A single Docker image from a layout keeps its media type and digest too.
    let docker = Image::new(&[("d", "1")])
        .docker()
        .layer(&[Entry::File("d".into(), b"docker".to_vec())]);
    let single = ctx.path("single");
    docker.write_layout(&single, "v1");
    let one = run(
        &format!("oci:{}:v1", single.display()),
        &format!("{}/single/img:v1", b.host()),
        &opts(),
    );
    assert_eq!(one.digest, sha(&docker.manifest()));
    assert_eq!(
        raw(&format!("docker://{}/single/img:v1", b.host())),
        docker.manifest()
    );
}

#[test]
fn a_blob_in_another_repository_of_the_same_registry_is_mounted() {
    let reg = Registry::http();
    reg.push_index(
        "src/cat",
        "v1",
        &[("linux", "amd64", &amd64()), ("linux", "arm64", &arm64())],
    );
    let f = relay(&reg);
    let host = format!("127.0.0.1:{}", f.port);
    let out = run(
        &format!("{host}/src/cat:v1"),
        &format!("{host}/other/cat:v1"),
        &opts(),
    );
    assert_eq!((out.mounted, out.uploaded), (blob_count(), 0));
    let mounts = seen(&f, |s| {
        s.method == "POST" && s.path.contains("mount=") && s.path.contains("from=src/cat")
    });
    assert_eq!(mounts, blob_count());
    assert_eq!(seen(&f, is_upload), 0, "no bytes were sent");
    assert_eq!(
        raw(&format!("docker://{}/other/cat:v1", reg.host())),
        raw(&format!("docker://{}/src/cat:v1", reg.host()))
    );
}

#[test]
fn concurrent_copies_send_a_shared_blob_once() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let f = relay(&reg);
    let shared = Entry::File("base".into(), vec![7u8; 300_000]);
    let images: Vec<Image> = (0..4)
        .map(|i| {
            Image::new(&[("n", &i.to_string())])
                .layer(std::slice::from_ref(&shared))
                .layer(&[Entry::File("own".into(), vec![i as u8; 10])])
        })
        .collect();
    let base_digest = sha(&images[0].layers[0].1);
    for (i, img) in images.iter().enumerate() {
        img.write_layout(&ctx.path(&format!("l{i}")), "v1");
    }
    let mut o = opts();
    o.jobs = 2;
    o.in_flight = Arc::default();
    let host = format!("127.0.0.1:{}", f.port);
    let results: Vec<Copied> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (o, ctx, host) = (&o, &ctx, &host);
                s.spawn(move || {
                    run(
                        &format!("oci:{}:v1", ctx.path(&format!("l{i}")).display()),
                        &format!("{host}/many/img:v{i}"),
                        o,
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let puts = seen(&f, |s| {
        s.method == "PUT" && s.path.contains(&base_digest.replace(':', "%3A"))
    });
    assert_eq!(puts, 1, "the shared layer was uploaded once");
    let uploaded: usize = results.iter().map(|r| r.uploaded).sum();
    // Four configs, four own layers, one shared layer.
    assert_eq!(uploaded, 9);
    for (i, img) in images.iter().enumerate() {
        assert_eq!(
            raw(&format!("docker://{}/many/img:v{i}", reg.host())),
            img.manifest()
        );
    }
}

#[test]
fn unknown_fields_spacing_and_key_order_survive_a_copy() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let img = amd64();
    let dir = ctx.path("odd");
    img.write_layout(&dir, "v1");
    let config = img.config();
    let (_, z, mt) = &img.layers[0];
    // Pretty-printed, keys out of order, fields no struct of opreg's knows.
    let manifest = format!(
        "{{\n  \"layers\": [{{\"x-extra\": [1, 2], \"size\": {}, \"digest\": \"{}\", \"mediaType\": \"{mt}\"}}],\n  \"schemaVersion\": 2,\n  \"mediaType\": \"application/vnd.oci.image.manifest.v1+json\",\n  \"config\": {{\"mediaType\": \"application/vnd.oci.image.config.v1+json\", \"size\": {}, \"digest\": \"{}\"}},\n  \"annotations\": {{\"org.example\": \"kept\"}},\n  \"x-unknown\": {{\"nested\": true}}\n}}\n",
        z.len(),
        sha(z),
        config.len(),
        sha(&config)
    );
    let digest = sha(manifest.as_bytes());
    std::fs::write(dir.join("blobs/sha256").join(&digest[7..]), &manifest).unwrap();
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest,
        "size": manifest.len(), "annotations": {"org.opencontainers.image.ref.name": "v1"}
    }]});
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
    let to = format!("{}/odd/img:v1", reg.host());
    let out = run(&format!("oci:{}:v1", dir.display()), &to, &opts());
    assert_eq!(out.digest, digest);
    assert_eq!(raw(&format!("docker://{to}")), manifest.as_bytes());
    // And back into a layout.
    let back = format!("oci:{}:v1", ctx.path("back").display());
    run(&to, &back, &opts());
    assert_eq!(raw(&back), manifest.as_bytes());
}

#[test]
fn each_side_of_a_copy_trusts_its_own_cert_dir() {
    let ctx = Ctx::new();
    let (pki_a, pki_b) = (Pki::new(&ctx.path("pki-a")), Pki::new(&ctx.path("pki-b")));
    let (a, b) = (
        Registry::private_ca(&pki_a, false),
        Registry::private_ca(&pki_b, false),
    );
    let digest = a.push("img", "v1", &amd64());
    let (from, to) = (
        format!("{}/img:v1", a.host()),
        format!("{}/img:v1", b.host()),
    );
    let side = |dir: std::path::PathBuf| Connection {
        cert_dir: Some(dir),
        ..Default::default()
    };
    // One connection for both sides: the source's certificate does not verify.
    let mut sides = Connections::same(side(pki_b.ca_only_dir()));
    let err = copy(&src(&from), &src(&to), &sides, &opts(), &Silent).unwrap_err();
    assert!(format!("{err:#}").contains("certificate"), "{err:#}");
    // Each side its own directory.
    sides.source = side(pki_a.ca_only_dir());
    let copied = copy(&src(&from), &src(&to), &sides, &opts(), &Silent).unwrap();
    assert_eq!(copied.digest, digest);
}

#[test]
fn a_missing_source_is_one_line_naming_both_references() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let from = format!("{}/nothing/here:v1", reg.host());
    let to = format!("oci:{}:v1", ctx.path("out").display());
    let e = copy(&src(&from), &src(&to), &http(), &opts(), &Silent).unwrap_err();
    let msg = format!("{e:#}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.starts_with(&format!("copy {from} to {to}: ")), "{msg}");
    assert!(!ctx.path("out/index.json").exists(), "nothing was tagged");
}

#[test]
#[ignore = "heavy tier: cargo test --release -- --ignored (CI runs it)"]
fn pushing_a_200_mb_layer_from_a_layout_stays_under_40_mb() {
    use sha2::Digest;
    use std::io::Write;
    let ctx = Ctx::new();
    let reg = Registry::http();
    let dir = ctx.path("big");
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    // 200 MB that does not compress, written and hashed a MB at a time.
    let size: u64 = 200 << 20;
    let tmp = blobs.join("layer.tmp");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&tmp).unwrap());
    let mut hash = sha2::Sha256::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut mb = vec![0u8; 1 << 20];
    for _ in 0..200 {
        for chunk in mb.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        hash.update(&mb);
        file.write_all(&mb).unwrap();
    }
    file.flush().unwrap();
    drop(file);
    let layer = format!("sha256:{:x}", hash.finalize());
    std::fs::rename(&tmp, blobs.join(&layer[7..])).unwrap();
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    std::fs::write(blobs.join(&sha(config)[7..]), config).unwrap();
    let manifest = serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(config), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": size}]
    })
    .to_string();
    std::fs::write(blobs.join(&sha(manifest.as_bytes())[7..]), &manifest).unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": sha(manifest.as_bytes()), "size": manifest.len(),
        "annotations": {"org.opencontainers.image.ref.name": "v1"}
    }]});
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();

    let source = format!("oci:{}:v1", dir.display());
    // In 16 MiB chunks (the default), and in one PUT.
    for (repo, chunk) in [("chunked", "16777216"), ("whole", "1073741824")] {
        let target = format!("{}/{repo}/img:v1", reg.host());
        let peak = peak_of_push(&ctx, &source, &target, chunk);
        eprintln!("peak RSS of image push of a 200 MB layer ({repo}): {peak} kB");
        assert!(peak > 0, "VmHWM was read");
        assert!(peak < 40 * 1024, "{repo}: peak RSS {peak} kB");
        assert_eq!(
            raw(&format!("docker://{target}")),
            manifest.as_bytes(),
            "the manifest byte for byte"
        );
    }
}

/// Runs `opreg image push SOURCE TARGET` and gives its peak resident set, in kB: its own
/// VmHWM, read every few milliseconds until it exits. (Not `wait4`'s `ru_maxrss`: Linux
/// records there the high-water mark of the memory the child was spawned from, here the
/// whole test process, which other heavy tests running beside it make hundreds of MB.)
fn peak_of_push(ctx: &Ctx, source: &str, target: &str, chunk: &str) -> u64 {
    let log = ctx.path("push.log");
    let mut child = ctx
        .cmd(
            &[
                "image",
                "push",
                source,
                target,
                "--use-http",
                "--chunk-size",
                chunk,
            ],
            &[],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    let hwm = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    let mut peak = 0;
    let status = loop {
        // Read before reaping: a reaped process has no /proc entry.
        if let Some(kb) = hwm() {
            peak = peak.max(kb);
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    peak
}

#[test]
fn image_push_reports_blobs_as_json_log_lines_and_nothing_when_quiet() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let img = amd64();
    let dir = ctx.path("layout");
    img.write_layout(&dir, "v1");
    let source = format!("oci:{}:v1", dir.display());
    let target = format!("{}/json/img:v1", reg.host());
    let (code, out, err) = ctx.run(&[
        "--log-format",
        "json",
        "image",
        "push",
        &source,
        &target,
        "--use-http",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), sha(&img.manifest()));
    let lines: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let blobs: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|v| v["fields"]["message"] == "blob")
        .collect();
    assert_eq!(blobs.len(), 2, "config and layer: {err}");
    assert!(
        blobs.iter().all(|v| v["fields"]["how"] == "uploaded"),
        "{err}"
    );

    let (code, out, err) = ctx.run(&[
        "--log-format",
        "json",
        "image",
        "push",
        "-q",
        &source,
        &format!("{}/quiet/img:v1", reg.host()),
        "--use-http",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!((out.as_str(), err.as_str()), ("", ""));
}
