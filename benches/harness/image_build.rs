//! Building and pushing a catalog image: `opreg image build` of the primary catalog against
//! `opreg ingest` of it plus the plain writing of its layers, `--push` to Debian's
//! `docker-registry` on loopback against the build plus a plain HTTP client's upload of the
//! same blobs, a second push of the same image, and (when podman and the image of
//! `scripts/container-smoke.sh` are there) `podman build` of the Dockerfile that
//! `opreg generate dockerfile` writes.
//!
//! The bench binary is dynamically linked, so every build names a base: a one-layer OCI layout
//! made here, labelled as an opreg base of this version and schema, so that the cache goes in
//! as with the default base.

use crate::image::{push_blob, start_registry};
use crate::procs::{run_child, ChildStats};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What building and pushing the catalog cost.
pub struct BuildRow {
    pub ingest: ChildStats,
    /// tar + gzip (level 6) of the catalog file and of the ingested database, in this process.
    pub layers: Duration,
    pub build: ChildStats,
    pub image_mb: f64,
    pub upload: Duration,
    pub push: ChildStats,
    /// The second push's "N blobs uploaded".
    pub second_uploaded: Option<u64>,
    /// `podman build` wall and the base it used, or why it was not measured.
    pub podman: Result<(Duration, String), String>,
}

const RUNS: usize = 3;

fn best(runs: impl IntoIterator<Item = Result<ChildStats, String>>) -> Result<ChildStats, String> {
    let mut out: Option<ChildStats> = None;
    for r in runs {
        let r = r?;
        if out.is_none_or(|o| r.wall < o.wall) {
            out = Some(r);
        }
    }
    out.ok_or_else(|| "no run".into())
}

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

fn write_blob(layout: &Path, data: &[u8]) -> Result<(String, usize), String> {
    let hex = format!("{:x}", Sha256::digest(data));
    let dir = layout.join("blobs/sha256");
    std::fs::create_dir_all(&dir).map_err(e)?;
    std::fs::write(dir.join(&hex), data).map_err(e)?;
    Ok((format!("sha256:{hex}"), data.len()))
}

fn gzip_tar(entries: &[(&str, &Path)], out: impl Write) -> Result<(), String> {
    let gz = flate2::write::GzEncoder::new(out, flate2::Compression::new(6));
    let mut b = tar::Builder::new(gz);
    for (name, path) in entries {
        b.append_path_with_name(path, name).map_err(e)?;
    }
    b.into_inner().and_then(|gz| gz.finish()).map_err(e)?;
    Ok(())
}

/// A one-layer base (`/etc/opreg-bench-base`) labelled as an opreg base of this build.
pub fn base_layout(dir: &Path) -> Result<String, String> {
    let _ = std::fs::remove_dir_all(dir);
    let file = dir.with_extension("txt");
    std::fs::write(&file, "bench base\n").map_err(e)?;
    let mut tar_bytes = Vec::new();
    {
        let mut b = tar::Builder::new(&mut tar_bytes);
        b.append_path_with_name(&file, "etc/opreg-bench-base")
            .map_err(e)?;
        b.finish().map_err(e)?;
    }
    let diff_id = format!("sha256:{:x}", Sha256::digest(&tar_bytes));
    let mut gz = Vec::new();
    {
        let mut w = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::new(6));
        w.write_all(&tar_bytes).map_err(e)?;
        w.finish().map_err(e)?;
    }
    let (layer, layer_size) = write_blob(dir, &gz)?;
    let labels = serde_json::json!({
        opreg::imagebuild::base::VERSION_LABEL: env!("CARGO_PKG_VERSION"),
        opreg::imagebuild::base::SCHEMA_LABEL: opreg::store::schema_version().to_string(),
    });
    let config = serde_json::json!({
        "architecture": opreg::oci::manifest::host_platform().architecture,
        "os": "linux",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    })
    .to_string();
    let (config, config_size) = write_blob(dir, config.as_bytes())?;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer, "size": layer_size}],
    })
    .to_string();
    let (m, m_size) = write_blob(dir, manifest.as_bytes())?;
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": m, "size": m_size,
            "annotations": {"org.opencontainers.image.ref.name": "base"}}],
    });
    std::fs::write(dir.join("index.json"), index.to_string()).map_err(e)?;
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).map_err(e)?;
    Ok(format!("oci:{}:base", dir.display()))
}

/// The blobs of the one image in the OCI layout `dir`: (config and layers, manifest bytes).
fn layout_blobs(dir: &Path) -> Result<(Vec<PathBuf>, Vec<u8>), String> {
    let read = |d: &str| -> Result<Vec<u8>, String> {
        let hex = d.strip_prefix("sha256:").ok_or("not a sha256 digest")?;
        std::fs::read(dir.join("blobs/sha256").join(hex)).map_err(e)
    };
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).map_err(e)?).map_err(e)?;
    let m = index["manifests"][0]["digest"]
        .as_str()
        .ok_or("index.json names no manifest")?;
    let manifest = read(m)?;
    let v: serde_json::Value = serde_json::from_slice(&manifest).map_err(e)?;
    let mut blobs = vec![v["config"]["digest"]
        .as_str()
        .unwrap_or_default()
        .to_string()];
    for l in v["layers"].as_array().ok_or("the manifest has no layers")? {
        blobs.push(l["digest"].as_str().unwrap_or_default().to_string());
    }
    let paths = blobs
        .iter()
        .map(|d| {
            dir.join("blobs/sha256")
                .join(d.trim_start_matches("sha256:"))
        })
        .collect();
    Ok((paths, manifest))
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|f| f.metadata().map_or(0, |m| m.len()))
        .sum()
}

/// Measures building and pushing `catalog` (an FBC file).
pub fn measure(bin: &Path, catalog: &Path, work: &Path) -> Result<BuildRow, String> {
    let work = work.join("image-build");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(e)?;
    let errf = work.join("child.stderr");
    let base = base_layout(&work.join("base"))?;
    let src = work.join("catalog");
    std::fs::create_dir_all(&src).map_err(e)?;
    std::fs::copy(catalog, src.join("catalog.json")).map_err(e)?;
    let db = work.join("ingest.db");
    let ingest = best((0..RUNS).map(|_| {
        let _ = std::fs::remove_file(&db);
        run_child(
            Command::new(bin)
                .arg("ingest")
                .arg(&src)
                .arg("-o")
                .arg(&db)
                .arg("-q"),
            &errf,
        )
    }))?;
    let mut layers = Duration::MAX;
    for _ in 0..RUNS {
        let t = Instant::now();
        let f = std::fs::File::create(work.join("layers.tar.gz")).map_err(e)?;
        let f = std::io::BufWriter::new(f);
        gzip_tar(
            &[
                ("configs/catalog.json", &src.join("catalog.json")),
                ("tmp/cache/opreg-catalog.db", &db),
            ],
            f,
        )?;
        layers = layers.min(t.elapsed());
    }
    let out = work.join("out");
    let build = best((0..RUNS).map(|_| {
        let _ = std::fs::remove_dir_all(&out);
        run_child(
            Command::new(bin)
                .args(["image", "build", "-q", "--base", &base, "-t"])
                .arg(format!("oci:{}", out.display()))
                .arg(&src),
            &errf,
        )
    }))?;
    let image_mb = dir_bytes(&out.join("blobs/sha256")) as f64 / 1e6;

    let reg = start_registry(&work)?;
    let (blobs, manifest) = layout_blobs(&out)?;
    let mut upload = Duration::MAX;
    for i in 0..RUNS {
        let repo = format!("bench/plain{i}");
        let t = Instant::now();
        for b in &blobs {
            push_blob(&reg.base(), &repo, b)?;
        }
        ureq::put(&format!("{}/v2/{repo}/manifests/v1", reg.base()))
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            .send(&manifest[..])
            .map_err(e)?;
        upload = upload.min(t.elapsed());
    }
    let push_to = |repo: &str| {
        run_child(
            Command::new(bin)
                .args([
                    "image",
                    "build",
                    "--push",
                    "--use-http",
                    "--base",
                    &base,
                    "-t",
                ])
                .arg(format!("127.0.0.1:{}/{repo}:v1", reg.port))
                .arg(&src),
            &errf,
        )
    };
    let push = best((0..RUNS).map(|i| push_to(&format!("bench/built{i}"))))?;
    push_to("bench/built0")?;
    let said = std::fs::read_to_string(&errf).unwrap_or_default();
    let second_uploaded = said.lines().find_map(|l| {
        let (head, _) = l.split_once(" blobs uploaded")?;
        head.rsplit(' ').next()?.parse().ok()
    });
    drop(reg);
    let podman = podman_build(bin, &src, &work);
    Ok(BuildRow {
        ingest,
        layers,
        build,
        image_mb,
        upload,
        push,
        second_uploaded,
        podman,
    })
}

/// The opreg image `scripts/container-smoke.sh` builds, the base of the podman comparison.
const PODMAN_BASE: &str = "localhost/opreg:smoke";

/// `podman build --pull=never` of `opreg generate dockerfile`'s Dockerfile on `src`, with the
/// container build's opreg image as its base.
fn podman_build(bin: &Path, src: &Path, work: &Path) -> Result<(Duration, String), String> {
    let have = Command::new("podman")
        .args(["image", "exists", PODMAN_BASE])
        .status()
        .map_err(|_| "podman is not installed".to_string())?;
    if !have.success() {
        return Err(format!(
            "no {PODMAN_BASE} image (scripts/container-smoke.sh builds it)"
        ));
    }
    let errf = work.join("podman.stderr");
    let _ = std::fs::remove_file(src.with_extension("Dockerfile"));
    run_child(
        Command::new(bin)
            .args([
                "generate",
                "dockerfile",
                "-i",
                PODMAN_BASE,
                "-b",
                PODMAN_BASE,
            ])
            .arg(src),
        &errf,
    )?;
    let dockerfile = src.with_extension("Dockerfile");
    let ctx = src.parent().ok_or("no parent")?;
    let mut podman = Command::new("podman");
    // The runtime settings scripts/container-smoke.sh writes for this machine, unless the
    // environment names its own.
    let smoke_conf =
        Path::new(&std::env::var("OPREG_CI_DIR").unwrap_or_else(|_| "/var/tmp/opreg-ci".into()))
            .join("containers.conf");
    if std::env::var_os("CONTAINERS_CONF").is_none() && smoke_conf.is_file() {
        podman.env("CONTAINERS_CONF", &smoke_conf);
    }
    let t = Instant::now();
    run_child(
        podman
            .args([
                "build",
                "--pull=never",
                "--network",
                "none",
                "--no-cache",
                "-t",
            ])
            .arg("localhost/opreg-bench-catalog:podman")
            .arg("-f")
            .arg(&dockerfile)
            .arg(ctx),
        &errf,
    )?;
    let wall = t.elapsed();
    let _ = Command::new("podman")
        .args(["rmi", "-f", "localhost/opreg-bench-catalog:podman"])
        .output();
    Ok((wall, PODMAN_BASE.into()))
}

/// The report section.
pub fn section(w: &mut String, name: &str, row: &Result<BuildRow, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n## Building and pushing a catalog image\n\n`opreg image build {name}` (its directory) onto a one-layer opreg base, best of {RUNS}. Ingest: `opreg ingest` of the same directory. Layers: tar + gzip (level 6) of the catalog file and of the ingested database, written by the harness. Upload: a plain HTTP client (monolithic POST + PUT per blob, then the manifest) sending the built image's blobs to Debian's `docker-registry` on loopback, a new repository each time. Push: `opreg image build --push --use-http` to a new repository each time. Targets: build ≤ 1.5 × (ingest + layers); build and push ≤ 1.3 × (build + upload); a second push of the same image uploads no blob.\n");
    let r = match row {
        Err(x) => {
            let _ = writeln!(w, "Not measured: {x}");
            return;
        }
        Ok(r) => r,
    };
    let (i, l, b) = (
        r.ingest.wall.as_secs_f64(),
        r.layers.as_secs_f64(),
        r.build.wall.as_secs_f64(),
    );
    let (u, p) = (r.upload.as_secs_f64(), r.push.wall.as_secs_f64());
    let met = |ok: bool| if ok { "MET" } else { "NOT MET" };
    let _ = writeln!(w, "| ingest | layers | build | build ÷ (ingest + layers) | image | upload | build and push | ÷ (build + upload) | second push uploads | peak RSS build / push |");
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|---|");
    let _ = writeln!(
        w,
        "| {i:.2} s | {l:.2} s | {b:.2} s | {:.2} ({}) | {:.1} MB | {u:.2} s | {p:.2} s | {:.2} ({}) | {} | {} / {} MB |",
        b / (i + l),
        met(b <= 1.5 * (i + l)),
        r.image_mb,
        p / (b + u),
        met(p <= 1.3 * (b + u)),
        match r.second_uploaded {
            Some(n) => format!("{n} blobs ({})", met(n == 0)),
            None => "not read (NOT MET)".into(),
        },
        r.build.maxrss_kb / 1024,
        r.push.maxrss_kb / 1024,
    );
    match &r.podman {
        Ok((t, base)) => {
            let _ = writeln!(w, "\n`podman build --pull=never --no-cache` of the Dockerfile `opreg generate dockerfile -i {base}` writes for the same directory: {:.2} s, {:.1}× `opreg image build`.", t.as_secs_f64(), t.as_secs_f64() / b);
        }
        Err(x) => {
            let x = x
                .lines()
                .find(|l| l.contains("Error"))
                .unwrap_or(x.lines().next().unwrap_or_default());
            let _ = writeln!(
                w,
                "\n`podman build` of the generated Dockerfile: not measured ({x})."
            );
        }
    }
}
