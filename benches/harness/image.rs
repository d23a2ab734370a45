//! Ingest from a registry: the catalog served as a one-layer catalog image by a real registry
//! on loopback (Debian's `docker-registry`), against a local ingest of the same file and the
//! raw download of the same blob, all measured in the same run.

use crate::procs::{free_port, run_child, ChildStats};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one catalog costs from a registry.
pub struct ImageRow {
    pub layer_mb: f64,
    pub local: ChildStats,
    pub download: Duration,
    pub cold: ChildStats,
    pub warm: ChildStats,
}

/// A registry process on a free loopback port, killed on drop.
pub struct Registry {
    child: Child,
    pub port: u16,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_registry(work: &Path) -> Result<Registry, String> {
    start_registry_with(work, false)
}

/// [`start_registry`], with `storage.delete.enabled` set to `deletes` (off, as distribution
/// ships, unless a measurement deletes).
pub fn start_registry_with(work: &Path, deletes: bool) -> Result<Registry, String> {
    let port = free_port();
    let root = work.join("registry");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let cfg = work.join("registry.yml");
    std::fs::write(
        &cfg,
        format!(
            "version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: {}}}, delete: {{enabled: {deletes}}}}}\nhttp: {{addr: 127.0.0.1:{port}}}\n",
            root.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("docker-registry: {e} (apt-get install docker-registry)"))?;
    let reg = Registry { child, port };
    let t = Instant::now();
    while ureq::get(&format!("http://127.0.0.1:{port}/v2/"))
        .call()
        .is_err()
    {
        if t.elapsed() > Duration::from_secs(30) {
            return Err("docker-registry did not answer within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(reg)
}

fn sha_file(p: &Path) -> Result<String, String> {
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(p).map_err(|e| e.to_string())?;
    std::io::copy(&mut f, &mut h).map_err(|e| e.to_string())?;
    Ok(format!("sha256:{:x}", h.finalize()))
}

/// Uploads the file `data` as a blob of `repo`, monolithically (POST, then one PUT).
pub fn push_blob(base: &str, repo: &str, data: &Path) -> Result<String, String> {
    let digest = sha_file(data)?;
    let resp = ureq::post(&format!("{base}/v2/{repo}/blobs/uploads/"))
        .send_empty()
        .map_err(|e| e.to_string())?;
    let loc = resp.headers()["location"]
        .to_str()
        .map_err(|e| e.to_string())?
        .to_string();
    let loc = if loc.starts_with("http") {
        loc
    } else {
        format!("{base}{loc}")
    };
    let sep = if loc.contains('?') { '&' } else { '?' };
    let bytes = std::fs::read(data).map_err(|e| e.to_string())?;
    ureq::put(&format!("{loc}{sep}digest={digest}"))
        .header("Content-Type", "application/octet-stream")
        .send(&bytes[..])
        .map_err(|e| e.to_string())?;
    Ok(digest)
}

/// Pushes `catalog` as `bench/catalog:v1`, one gzip layer holding `configs/<file name>`;
/// returns the layer's digest and size.
fn push_catalog(base: &str, catalog: &Path, work: &Path) -> Result<(String, u64), String> {
    let tar_path = work.join("layer.tar");
    {
        let f = std::fs::File::create(&tar_path).map_err(|e| e.to_string())?;
        let mut b = tar::Builder::new(std::io::BufWriter::new(f));
        let name = format!(
            "configs/{}",
            catalog.file_name().unwrap_or_default().to_string_lossy()
        );
        b.append_path_with_name(catalog, name)
            .map_err(|e| e.to_string())?;
        b.into_inner()
            .and_then(|mut w| w.flush())
            .map_err(|e| e.to_string())?;
    }
    let diff_id = sha_file(&tar_path)?;
    let gz_path = work.join("layer.tar.gz");
    {
        let mut input = std::fs::File::open(&tar_path).map_err(|e| e.to_string())?;
        let out = std::fs::File::create(&gz_path).map_err(|e| e.to_string())?;
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        std::io::copy(&mut input, &mut gz).map_err(|e| e.to_string())?;
        gz.finish().map_err(|e| e.to_string())?;
    }
    let _ = std::fs::remove_file(&tar_path);
    let layer = push_blob(base, "bench/catalog", &gz_path)?;
    let layer_size = std::fs::metadata(&gz_path)
        .map_err(|e| e.to_string())?
        .len();
    let config = serde_json::json!({
        "architecture": std::env::consts::ARCH.replace("x86_64", "amd64").replace("aarch64", "arm64"),
        "os": "linux",
        "config": {"Labels": {"operators.operatorframework.io.index.configs.v1": "/configs"}},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    })
    .to_string();
    let config_path = work.join("config.json");
    std::fs::write(&config_path, &config).map_err(|e| e.to_string())?;
    let config_digest = push_blob(base, "bench/catalog", &config_path)?;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer, "size": layer_size}],
    })
    .to_string();
    ureq::put(&format!("{base}/v2/bench/catalog/manifests/v1"))
        .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        .send(manifest.as_bytes())
        .map_err(|e| e.to_string())?;
    Ok((layer, layer_size))
}

/// The raw download of one blob to nowhere (best of 3).
fn download(base: &str, digest: &str) -> Result<Duration, String> {
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let resp = ureq::get(&format!("{base}/v2/bench/catalog/blobs/{digest}"))
            .call()
            .map_err(|e| e.to_string())?;
        let mut body = resp.into_body().into_reader();
        let mut buf = vec![0u8; 1 << 20];
        while body.read(&mut buf).map_err(|e| e.to_string())? > 0 {}
        best = best.min(t.elapsed());
    }
    Ok(best)
}

/// `catalog` pushed to a registry of its own, and what ingests it.
pub struct Pushed {
    reg: Registry,
    layer: String,
    layer_size: u64,
    pub reference: String,
    work: PathBuf,
}

impl Pushed {
    pub fn new(catalog: &Path, work: &Path) -> Result<Pushed, String> {
        let work = work.join("image");
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        let reg = start_registry(&work)?;
        let (layer, layer_size) = push_catalog(&reg.base(), catalog, &work)?;
        let reference = format!("127.0.0.1:{}/bench/catalog:v1", reg.port);
        Ok(Pushed {
            reg,
            layer,
            layer_size,
            reference,
            work,
        })
    }

    /// `bin ingest SRC` into a fresh database, from the image cache `cache` when given.
    fn ingest(&self, bin: &Path, src: &str, cache: Option<&Path>) -> Result<ChildStats, String> {
        let db = self.work.join("image.db");
        let _ = std::fs::remove_file(&db);
        let mut cmd = Command::new(bin);
        cmd.args(["ingest", src, "-o"]).arg(&db).arg("-q");
        if let Some(c) = cache {
            cmd.arg("--use-http").arg("--image-cache").arg(c);
        }
        run_child(&mut cmd, &self.work.join("child.stderr"))
    }
}

impl Registry {
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Measures `catalog` (an FBC file) as a catalog image against its local ingest.
pub fn measure(bin: &Path, catalog: &Path, work: &Path) -> Result<ImageRow, String> {
    let p = Pushed::new(catalog, work)?;
    let local = p.ingest(bin, &catalog.to_string_lossy(), None)?;
    let download = download(&p.reg.base(), &p.layer)?;
    let cache = p.work.join("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let cold = p.ingest(bin, &p.reference, Some(&cache))?;
    let warm = p.ingest(bin, &p.reference, Some(&cache))?;
    let layer_size = p.layer_size;
    Ok(ImageRow {
        layer_mb: layer_size as f64 / 1e6,
        local,
        download,
        cold,
        warm,
    })
}

/// For iterating by hand: each build's local and warm ingest of `catalog`, `rounds` times,
/// the builds taking turns, printed one line per ingest.
pub fn compare(bins: &[PathBuf], catalog: &Path, work: &Path, rounds: usize) -> Result<(), String> {
    let p = Pushed::new(catalog, work)?;
    let local = catalog.to_string_lossy();
    for (i, bin) in bins.iter().enumerate() {
        let cache = p.work.join(format!("cache{i}"));
        let _ = std::fs::remove_dir_all(&cache);
        let cold = p.ingest(bin, &p.reference, Some(&cache))?;
        println!("{} cold {:.3} s", bin.display(), cold.wall.as_secs_f64());
    }
    for _ in 0..rounds {
        for (i, bin) in bins.iter().enumerate() {
            let l = p.ingest(bin, &local, None)?;
            let w = p.ingest(bin, &p.reference, Some(&p.work.join(format!("cache{i}"))))?;
            let (l, w) = (l.wall.as_secs_f64(), w.wall.as_secs_f64());
            println!(
                "{} local {l:.3} s warm {w:.3} s ({:.2}x)",
                bin.display(),
                w / l
            );
        }
    }
    Ok(())
}

/// The report section.
pub fn section(w: &mut String, name: &str, row: &Result<ImageRow, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n## Ingest from a registry\n\n`{name}` pushed as a one-layer gzip catalog image to Debian's `docker-registry` on loopback. Local: `opreg ingest FILE`. Download: the raw GET of the layer blob, best of 3. Cold: `opreg ingest IMAGE --image-cache EMPTY` (pull, verify, unpack, ingest). Warm: the same again with the filled cache (no blob downloaded). Targets: cold ≤ 1.3 × (local + download), warm ≤ 1.1 × local.\n");
    match row {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
        }
        Ok(r) => {
            let l = r.local.wall.as_secs_f64();
            let d = r.download.as_secs_f64();
            let c = r.cold.wall.as_secs_f64();
            let wm = r.warm.wall.as_secs_f64();
            let _ = writeln!(w, "| layer | local | download | cold | cold ÷ (local + download) | warm | warm ÷ local | peak RSS cold / warm |");
            let _ = writeln!(w, "|---|---|---|---|---|---|---|---|");
            let _ = writeln!(
                w,
                "| {:.1} MB | {l:.2} s | {d:.2} s | {c:.2} s | {:.2} ({}) | {wm:.2} s | {:.2} ({}) | {} / {} MB |",
                r.layer_mb,
                c / (l + d),
                if c <= 1.3 * (l + d) { "MET" } else { "NOT MET" },
                wm / l,
                if wm <= 1.1 * l { "MET" } else { "NOT MET" },
                r.cold.maxrss_kb / 1024,
                r.warm.maxrss_kb / 1024
            );
        }
    }
}
