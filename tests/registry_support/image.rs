//! Images built here: tar layers (gzip or zstd) with whiteouts, OCI or Docker schema 2
//! manifests and indexes, catalog and bundle labels; pushed through the registry HTTP API or
//! written as OCI layouts on disk.

use super::*;

/// An entry of a layer being built.
pub enum Entry {
    File(String, Vec<u8>),
    Dir(String),
    Symlink(String, String),
    HardLink(String, String),
    CharDevice(String),
}

/// A tar stream of entries. Paths go into the header as given (no sanitizing), so tests can
/// build hostile layers.
pub fn tar(entries: &[Entry]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_mtime(1);
        let (path, data): (&str, &[u8]) = match e {
            Entry::File(p, d) => {
                h.set_entry_type(tar::EntryType::Regular);
                (p, d)
            }
            Entry::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                (p, &[])
            }
            Entry::Symlink(p, t) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_link_name(t).unwrap();
                (p, &[])
            }
            Entry::HardLink(p, t) => {
                h.set_entry_type(tar::EntryType::Link);
                h.set_link_name(t).unwrap();
                (p, &[])
            }
            Entry::CharDevice(p) => {
                h.set_entry_type(tar::EntryType::Char);
                (p, &[])
            }
        };
        h.set_size(data.len() as u64);
        let name = path.as_bytes();
        assert!(name.len() < 100, "test paths must fit the old header");
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

/// The files of a directory tree as layer entries under `prefix` (e.g. `configs`).
pub fn dir_entries(dir: &Path, prefix: &str) -> Vec<Entry> {
    let mut out = vec![Entry::Dir(format!("{prefix}/"))];
    let mut walk: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    walk.sort();
    for p in walk {
        let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            out.push(Entry::Dir(format!("{prefix}/{rel}/")));
        } else {
            out.push(Entry::File(
                format!("{prefix}/{rel}"),
                std::fs::read(&p).unwrap(),
            ));
        }
    }
    out
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

pub fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

/// How an image's manifest is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Oci,
    Docker,
}

/// An image: labels and layers (each the uncompressed tar and its compressed blob).
pub struct Image {
    pub labels: BTreeMap<String, String>,
    pub layers: Vec<(Vec<u8>, Vec<u8>, &'static str)>,
    pub format: Format,
    /// The config's architecture (amd64 unless set).
    pub arch: &'static str,
}

impl Image {
    pub fn new(labels: &[(&str, &str)]) -> Image {
        Image {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            layers: Vec::new(),
            format: Format::Oci,
            arch: "amd64",
        }
    }

    /// Sets the config's architecture.
    pub fn arch(mut self, arch: &'static str) -> Image {
        self.arch = arch;
        self
    }

    pub fn docker(mut self) -> Image {
        self.format = Format::Docker;
        self
    }

    /// Adds a gzip layer.
    pub fn layer(mut self, entries: &[Entry]) -> Image {
        let t = tar(entries);
        let mt = match self.format {
            Format::Oci => "application/vnd.oci.image.layer.v1.tar+gzip",
            Format::Docker => "application/vnd.docker.image.rootfs.diff.tar.gzip",
        };
        let z = gzip(&t);
        self.layers.push((t, z, mt));
        self
    }

    /// Adds a zstd layer.
    pub fn zstd_layer(mut self, entries: &[Entry]) -> Image {
        let t = tar(entries);
        let z = zstd(&t);
        self.layers
            .push((t, z, "application/vnd.oci.image.layer.v1.tar+zstd"));
        self
    }

    pub fn config(&self) -> Vec<u8> {
        let diff_ids: Vec<String> = self.layers.iter().map(|(t, _, _)| sha(t)).collect();
        serde_json::json!({
            "architecture": self.arch, "os": "linux",
            "config": {"Labels": self.labels},
            "rootfs": {"type": "layers", "diff_ids": diff_ids}
        })
        .to_string()
        .into_bytes()
    }

    pub fn media_type(&self) -> String {
        match self.format {
            Format::Oci => OCI_MANIFEST.into(),
            Format::Docker => DOCKER_MANIFEST.into(),
        }
    }

    pub fn manifest(&self) -> Vec<u8> {
        let config = self.config();
        let config_mt = match self.format {
            Format::Oci => "application/vnd.oci.image.config.v1+json",
            Format::Docker => "application/vnd.docker.container.image.v1+json",
        };
        let layers: Vec<serde_json::Value> = self
            .layers
            .iter()
            .map(|(_, z, mt)| serde_json::json!({"mediaType": mt, "digest": sha(z), "size": z.len()}))
            .collect();
        serde_json::json!({
            "schemaVersion": 2, "mediaType": self.media_type(),
            "config": {"mediaType": config_mt, "digest": sha(&config), "size": config.len()},
            "layers": layers
        })
        .to_string()
        .into_bytes()
    }

    /// Config and layer blobs.
    pub fn blobs(&self) -> Vec<Vec<u8>> {
        let mut v = vec![self.config()];
        v.extend(self.layers.iter().map(|(_, z, _)| z.clone()));
        v
    }

    /// Writes the image as an OCI image layout with `tag`.
    pub fn write_layout(&self, dir: &Path, tag: &str) {
        let blobs = dir.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        let mut all = self.blobs();
        all.push(self.manifest());
        for b in all {
            std::fs::write(blobs.join(&sha(&b)[7..]), &b).unwrap();
        }
        std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        let m = self.manifest();
        let idx = serde_json::json!({"schemaVersion": 2, "manifests": [{
            "mediaType": self.media_type(), "digest": sha(&m), "size": m.len(),
            "annotations": {"org.opencontainers.image.ref.name": tag}
        }]});
        std::fs::write(dir.join("index.json"), idx.to_string()).unwrap();
    }
}

pub const CONFIGS: &str = "operators.operatorframework.io.index.configs.v1";
pub const DATABASE: &str = "operators.operatorframework.io.index.database.v1";

/// The labels of a registry+v1 bundle image for `package`.
pub fn bundle_labels(package: &str, channels: &str, default: &str) -> Vec<(String, String)> {
    let p = "operators.operatorframework.io.bundle";
    vec![
        (format!("{p}.mediatype.v1"), "registry+v1".into()),
        (format!("{p}.manifests.v1"), "manifests/".into()),
        (format!("{p}.metadata.v1"), "metadata/".into()),
        (format!("{p}.package.v1"), package.into()),
        (format!("{p}.channels.v1"), channels.into()),
        (format!("{p}.channel.default.v1"), default.into()),
    ]
}
