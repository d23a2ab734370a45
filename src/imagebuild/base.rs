//! The image a catalog is built on: one read from a registry or an OCI layout (`--base`), each
//! of its platforms with its config and layers, or, by default, the running opreg binary made
//! into an image of its own (when it is statically linked: a dynamic one needs its libraries,
//! which no image built here carries).

use super::layer::{Layer, LayerBuilder, Owner, ROOT};
use crate::error::Error;
use crate::image::reference::{self, ImageSource};
use crate::oci::manifest::{self, Descriptor, Manifest, Platform};
use crate::registry::{self, BlobSource};
use anyhow::anyhow;
use serde_json::{json, Value};
use std::path::Path;

/// The label saying which opreg version made an image.
pub const VERSION_LABEL: &str = "io.opreg.version";
/// The label saying which database schema that opreg writes.
pub const SCHEMA_LABEL: &str = "io.opreg.schema";

/// One platform of the base.
pub struct BaseImage {
    pub platform: Platform,
    /// The image config, as the base has it.
    pub config: Value,
    /// Its layers (their blobs are read from the base's source).
    pub layers: Vec<Descriptor>,
}

/// The base image.
pub struct Base {
    /// Where the base's blobs are read; `None` for the default base (its one layer is built).
    pub source: Option<Box<dyn BlobSource>>,
    /// The base as given, and the digest it resolved to (`None` for the default base).
    pub name: String,
    pub digest: Option<String>,
    /// True when the base is an image index (the result is one too).
    pub index: bool,
    pub images: Vec<BaseImage>,
    /// The default base's layer, written already.
    pub own_layer: Option<Layer>,
}

impl Base {
    /// True when the base is an opreg image of this version and database schema, whose server
    /// reads the cache built here.
    pub fn reads_our_cache(&self) -> bool {
        self.images.iter().all(|i| {
            let label = |k: &str| {
                i.config
                    .pointer("/config/Labels")
                    .and_then(|l| l.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            label(VERSION_LABEL).as_deref() == Some(env!("CARGO_PKG_VERSION"))
                && label(SCHEMA_LABEL) == Some(crate::store::schema_version().to_string())
        })
    }
}

/// Opens `--base IMAGE` and reads the configs of the platforms asked for (all, when
/// `platforms` is empty).
pub fn open(
    given: &str,
    conn: &registry::Connection,
    platforms: &[Platform],
    max_manifest: u64,
    policy: Option<&std::path::Path>,
) -> Result<Base, Error> {
    let fail = |e: anyhow::Error| Error::failed(format!("base image {given}: {e:#}"));
    let source =
        reference::parse_source(given).map_err(|e| Error::Usage(format!("--base {given}: {e}")))?;
    let check = crate::image::signature::check_for(&source, given, policy, max_manifest)
        .map_err(|e| Error::failed(format!("{e:#}")))?;
    let (mut src, top_ref): (Box<dyn BlobSource>, String) = match &source {
        ImageSource::Registry(r) => (
            Box::new(registry::Registry::new(r, conn).map_err(fail)?),
            r.manifest_ref().to_string(),
        ),
        ImageSource::Layout { dir, tag } => (
            Box::new(registry::Layout::open(dir).map_err(fail)?),
            tag.clone().unwrap_or_default(),
        ),
    };
    let top = src.manifest(&top_ref, max_manifest).map_err(fail)?;
    let digest = crate::digest::sha256(&top.bytes);
    if let Some(c) = &check {
        c.run(src.as_mut(), &digest).map_err(fail)?;
    }
    let m = manifest::parse_manifest(&top.bytes, top.content_type.as_deref())
        .map_err(|e| fail(anyhow!(e)))?;
    let mut images = Vec::new();
    let index = matches!(m, Manifest::Index { .. });
    match m {
        Manifest::Index { manifests } => {
            let offered: Vec<&Descriptor> = manifests
                .iter()
                .filter(|d| d.platform.as_ref().is_some_and(|p| p.os != "unknown"))
                .collect();
            let picked: Vec<&Descriptor> = if platforms.is_empty() {
                offered.clone()
            } else {
                let mut v = Vec::new();
                for p in platforms {
                    let owned: Vec<Descriptor> = offered.iter().map(|d| (*d).clone()).collect();
                    let d = manifest::select(&owned, p).ok_or_else(|| {
                        fail(anyhow!(
                            "no image for platform {p} (it has: {})",
                            manifest::platforms(&manifests)
                        ))
                    })?;
                    let o = *offered.iter().find(|o| o.digest == d.digest).unwrap();
                    // `linux/amd64,linux/amd64` (or two names of one platform) pick one image.
                    if !v.iter().any(|p: &&Descriptor| p.digest == o.digest) {
                        v.push(o);
                    }
                }
                v
            };
            for d in picked {
                let bytes =
                    read_small(src.as_mut(), &d.digest, max_manifest, true).map_err(fail)?;
                let m = manifest::parse_manifest(&bytes, Some(&d.media_type))
                    .map_err(|e| fail(anyhow!(e)))?;
                let mut img = image_of(src.as_mut(), m, max_manifest).map_err(fail)?;
                if let Some(p) = &d.platform {
                    img.platform = p.clone();
                }
                images.push(img);
            }
        }
        m => {
            let img = image_of(src.as_mut(), m, max_manifest).map_err(fail)?;
            if let Some(p) = platforms.iter().find(|p| !same_platform(p, &img.platform)) {
                return Err(fail(anyhow!(
                    "no image for platform {p} (it is {})",
                    img.platform
                )));
            }
            images.push(img);
        }
    }
    if images.is_empty() {
        return Err(fail(anyhow!(
            "the index holds no image of a known platform"
        )));
    }
    Ok(Base {
        source: Some(src),
        name: given.to_string(),
        digest: Some(digest),
        index,
        images,
        own_layer: None,
    })
}

fn same_platform(a: &Platform, b: &Platform) -> bool {
    manifest::select(
        &[Descriptor {
            platform: Some(b.clone()),
            ..Default::default()
        }],
        a,
    )
    .is_some()
}

fn read_small(
    src: &mut dyn BlobSource,
    digest: &str,
    limit: u64,
    is_manifest: bool,
) -> anyhow::Result<Vec<u8>> {
    let bytes = if is_manifest {
        src.manifest(digest, limit)?.bytes
    } else {
        registry::read_limited(src.blob(digest)?, limit, "image config")?
    };
    if !crate::digest::matches(digest, &bytes) {
        let got = crate::digest::sha256(&bytes);
        anyhow::bail!("blob digest mismatch for {digest}: got {got}");
    }
    Ok(bytes)
}

fn image_of(src: &mut dyn BlobSource, m: Manifest, limit: u64) -> anyhow::Result<BaseImage> {
    let Manifest::Image { config, layers } = m else {
        anyhow::bail!("image indexes nested in an index are not supported as a base");
    };
    let bytes = read_small(src, &config.digest, limit, false)?;
    let config: Value = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow!("malformed image config {}: {e}", config.digest))?;
    let platform = Platform {
        os: str_at(&config, "/os"),
        architecture: str_at(&config, "/architecture"),
        variant: config
            .get("variant")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    Ok(BaseImage {
        platform,
        config,
        layers,
    })
}

fn str_at(v: &Value, p: &str) -> String {
    v.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The user the default base runs as (the project's Dockerfile's).
const USER: Owner = Owner { uid: 1001, gid: 0 };

/// Whether the running binary can be the base for `platforms` (it is for the host's platform,
/// and statically linked); its path. Checked before the catalog is read, so that a build that
/// cannot succeed says so at once.
pub fn default_base_usable(platforms: &[Platform]) -> Result<std::path::PathBuf, Error> {
    let host = manifest::host_platform();
    if let Some(p) = platforms.iter().find(|p| !same_platform(p, &host)) {
        return Err(Error::Usage(format!(
            "--platform {p}: the default base is this opreg binary, which is {host}; give --base for other platforms"
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| Error::failed(format!("cannot find the running binary: {e}")))?;
    if !is_static(&exe).map_err(|e| Error::failed(format!("cannot read {}: {e}", exe.display())))? {
        return Err(Error::Usage(format!(
            "{} is dynamically linked, so it cannot be the catalog image's server by itself: give --base IMAGE (an opreg or opm image), or use the static binary of the container build",
            exe.display()
        )));
    }
    Ok(exe)
}

/// The running binary as a base: `/bin/opreg`, linked as `/bin/opm` and
/// `/bin/grpc_health_probe`, a passwd with the non-root user, `/tmp` 1777. Refused for a
/// dynamically linked binary.
pub fn default_base(platforms: &[Platform], mtime: u64, staging: &Path) -> Result<Base, Error> {
    let exe = default_base_usable(platforms)?;
    let host = manifest::host_platform();
    let mut b = LayerBuilder::new(mtime);
    b.dir("bin", 0o755, ROOT);
    b.file("bin/opreg", 0o755, ROOT, &exe);
    b.hardlink("bin/opm", "bin/opreg");
    b.hardlink("bin/grpc_health_probe", "bin/opreg");
    b.dir("etc", 0o755, ROOT);
    b.bytes(
        "etc/passwd",
        0o644,
        ROOT,
        b"root:x:0:0:root:/root:/sbin/nologin\nopreg:x:1001:0:opreg:/tmp:/sbin/nologin\n".to_vec(),
    );
    b.bytes("etc/group", 0o644, ROOT, b"root:x:0:\n".to_vec());
    b.bytes(
        "etc/nsswitch.conf",
        0o644,
        ROOT,
        b"hosts: files dns\n".to_vec(),
    );
    b.dir("tmp", 0o1777, ROOT);
    let layer = b
        .write(staging)
        .map_err(|e| Error::failed(format!("cannot write the base layer: {e}")))?;
    let mut config = json!({
        "architecture": host.architecture,
        "os": host.os,
        "config": {
            "User": USER.uid.to_string(),
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "ExposedPorts": {"50051/tcp": {}},
            "Labels": {
                VERSION_LABEL: env!("CARGO_PKG_VERSION"),
                SCHEMA_LABEL: crate::store::schema_version().to_string(),
                "org.opencontainers.image.title": "opreg",
                "org.opencontainers.image.licenses": "Apache-2.0",
            },
        },
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
        "history": [{"created": crate::text::rfc3339(mtime), "created_by": "opreg image build: the opreg binary"}],
    });
    config["created"] = crate::text::rfc3339(mtime).into();
    let desc = Descriptor {
        media_type: super::layer::MEDIA_TYPE.into(),
        digest: layer.digest.clone(),
        size: layer.size,
        ..Default::default()
    };
    Ok(Base {
        source: None,
        name: format!("opreg {}", env!("CARGO_PKG_VERSION")),
        digest: None,
        index: false,
        images: vec![BaseImage {
            platform: host,
            config,
            layers: vec![desc],
        }],
        own_layer: Some(layer),
    })
}

/// True when the ELF file at `path` has no program interpreter (a static executable).
pub fn is_static(path: &Path) -> std::io::Result<bool> {
    let bytes = std::fs::read(path)?;
    let bad = || std::io::Error::other("not an ELF executable");
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Err(bad());
    }
    let is64 = bytes[4] == 2;
    let le = bytes[5] == 1;
    let rd = |off: usize, n: usize| -> std::io::Result<u64> {
        let s = bytes.get(off..off + n).ok_or_else(bad)?;
        let mut v = 0u64;
        for i in 0..n {
            let b = if le { s[n - 1 - i] } else { s[i] };
            v = (v << 8) | b as u64;
        }
        Ok(v)
    };
    let (phoff, phentsize, phnum) = if is64 {
        (rd(0x20, 8)?, rd(0x36, 2)?, rd(0x38, 2)?)
    } else {
        (rd(0x1c, 4)?, rd(0x2a, 2)?, rd(0x2c, 2)?)
    };
    for i in 0..phnum {
        let off = (phoff + i * phentsize) as usize;
        // PT_INTERP
        if rd(off, 4)? == 3 {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_test_binary_is_dynamic() {
        let exe = std::env::current_exe().unwrap();
        assert!(!super::is_static(&exe).unwrap());
        assert!(super::is_static(std::path::Path::new("Cargo.toml")).is_err());
    }
}
