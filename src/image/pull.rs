//! Pulling one image: the manifest (through an index, for the wanted platform), the config and
//! its labels, then the layers, applied in order and streamed straight into the layer reader.
//! Every blob is verified; with a cache, blobs found there are not downloaded, and blobs
//! downloaded are kept there, and so is the unpacked content of a catalog image
//! ([`super::unpacked`]): a pull of an image kept there reads no layer at all.

use super::kind::{self, ImageKind};
use super::layers::{self, Extractor, LayerError};
use super::unpacked::Unpacked;
use crate::oci::cache::{BlobCache, Verify};
use crate::oci::manifest::{self, Descriptor, Manifest, Platform};
use crate::progress::Unit;
use crate::registry::{read_limited, BlobSource};
use anyhow::{anyhow, bail, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Limits and choices for a pull.
#[derive(Clone, Debug)]
pub struct PullOptions {
    pub platform: Platform,
    pub cache: Option<BlobCache>,
    pub max_manifest: u64,
    pub max_layer: u64,
    pub progress: crate::progress::Reporter,
    /// The signature policy to satisfy before anything but the top manifest is read.
    pub check: Option<super::signature::Check>,
}

/// A pulled image.
#[derive(Clone, Debug)]
pub struct Pulled {
    /// The digest the reference resolved to (an index's digest for a multi-arch image).
    pub digest: String,
    /// The platform manifest's digest, when `digest` is an index.
    pub platform_digest: Option<String>,
    pub kind: ImageKind,
    /// The labelled content on disk: the FBC directory, the database file, or a bundle
    /// directory holding `manifests/` and `metadata/`.
    pub path: PathBuf,
    /// Blobs read from the network (not from the cache).
    pub downloaded: usize,
}

/// Pulls the image `reference` (tag, digest, or "" for a layout's only image) from `src`
/// into `staging`.
pub fn pull(
    src: &mut dyn BlobSource,
    reference: &str,
    opts: &PullOptions,
    staging: &Path,
) -> Result<Pulled> {
    let mut downloaded = 0;
    let (bytes, ct, digest) = top_manifest(src, reference, opts, &mut downloaded)?;
    if let Some(check) = &opts.check {
        check.run(src, &digest)?;
    }
    let mut m = manifest::parse_manifest(&bytes, ct.as_deref()).map_err(|e| anyhow!(e))?;
    let mut platform_digest = None;
    let mut depth = 0;
    while let Manifest::Index { manifests } = &m {
        depth += 1;
        if depth > 2 {
            bail!("image indexes nested too deeply");
        }
        let d = manifest::select(manifests, &opts.platform)
            .ok_or_else(|| {
                anyhow!(
                    "no image for platform {} in the index (it has: {})",
                    opts.platform,
                    manifest::platforms(manifests)
                )
            })?
            .clone();
        let bytes = small_blob(src, &d, opts, true, &mut downloaded)?;
        m = manifest::parse_manifest(&bytes, Some(&d.media_type)).map_err(|e| anyhow!(e))?;
        platform_digest = Some(d.digest.clone());
    }
    let Manifest::Image { config, layers } = m else {
        unreachable!("the loop above leaves an image manifest")
    };
    let config_bytes = small_blob(src, &config, opts, false, &mut downloaded)?;
    let labels = manifest::config_labels(&config_bytes).map_err(|e| anyhow!(e))?;
    let kind = kind::classify(&labels).map_err(|e| anyhow!(e))?;
    for layer in &layers {
        if layer.size > opts.max_layer {
            bail!(
                "layer {} is {} bytes, over the size limit of {} bytes (--max-layer-size)",
                layer.digest,
                layer.size,
                opts.max_layer
            );
        }
    }
    // Catalog images are kept unpacked in the cache, by the image manifest's digest.
    let image_digest = platform_digest.as_deref().unwrap_or(&digest);
    // A cache that cannot take them (read-only, say) still serves its blobs: the image is then
    // unpacked into the private directory, as without a cache.
    let kept = match &opts.cache {
        Some(c) if matches!(kind, ImageKind::Catalog { .. }) => Unpacked::open(c.dir())
            .inspect_err(|e| tracing::debug!("no unpacked images in the cache: {e:#}"))
            .ok(),
        _ => None,
    };
    let root = match kept
        .as_ref()
        .and_then(|k| k.get(image_digest, opts.max_layer))
    {
        Some(root) => root,
        None => match kept.as_ref().and_then(|k| {
            let u = k
                .start()
                .inspect_err(|e| tracing::debug!("unpacking outside the cache: {e:#}"));
            Some((k, u.ok()?))
        }) {
            Some((k, u)) => {
                unpack(src, &layers, &kind, opts, &u.root(), &mut downloaded)?;
                k.keep(u, image_digest)?
            }
            None => {
                let root = staging.join("rootfs");
                unpack(src, &layers, &kind, opts, &root, &mut downloaded)?;
                root
            }
        },
    };
    let path = match &kind {
        ImageKind::Bundle {
            manifests,
            metadata,
        } => {
            // The bundle reader wants `DIR/manifests` and `DIR/metadata`.
            let dir = staging.join("bundle");
            std::fs::create_dir_all(&dir)?;
            for (label, name) in [(manifests, "manifests"), (metadata, "metadata")] {
                let p = layers::local_path(&root, label);
                if !p.is_dir() {
                    bail!("the bundle image has no {label} directory");
                }
                // Inside the private staging directory.
                crate::atomic::move_path(&p, &dir.join(name), false)?;
            }
            dir
        }
        ImageKind::Catalog { configs } => {
            let p = layers::local_path(&root, configs);
            if !p.exists() {
                bail!(
                    "the catalog image has no {configs} (its {} label)",
                    kind::CONFIGS_LABEL
                );
            }
            p
        }
        ImageKind::Index { database } => {
            let p = layers::local_path(&root, database);
            if !p.is_file() {
                bail!(
                    "the index image has no database file {database} (its {} label)",
                    kind::DATABASE_LABEL
                );
            }
            p
        }
    };
    Ok(Pulled {
        digest,
        platform_digest,
        kind,
        path,
        downloaded,
    })
}

/// The top manifest, and the digest the reference resolves to. A manifest named by digest is
/// taken from the cache when there.
fn top_manifest(
    src: &mut dyn BlobSource,
    reference: &str,
    opts: &PullOptions,
    downloaded: &mut usize,
) -> Result<(Vec<u8>, Option<String>, String)> {
    if crate::digest::is_valid(reference) {
        if let Some(bytes) = cached_small(opts, reference) {
            return Ok((bytes, None, reference.to_string()));
        }
    }
    let f = src.manifest(reference, opts.max_manifest)?;
    *downloaded += 1;
    let digest = crate::digest::sha256(&f.bytes);
    if crate::digest::is_valid(reference) && !crate::digest::matches(reference, &f.bytes) {
        bail!("manifest digest mismatch: asked for {reference}, got {digest}");
    }
    if let Some(h) = &f.digest {
        if crate::digest::is_valid(h) && !crate::digest::matches(h, &f.bytes) {
            bail!("manifest digest mismatch: the registry says {h}, the content is {digest}");
        }
    }
    if let Some(c) = &opts.cache {
        c.put(&digest, &f.bytes)?;
    }
    Ok((f.bytes, f.content_type, digest))
}

fn cached_small(opts: &PullOptions, digest: &str) -> Option<Vec<u8>> {
    let c = opts.cache.as_ref()?;
    let f = c.open_blob(digest)?;
    let bytes = read_limited(f, opts.max_manifest, "cached blob").ok()?;
    if crate::digest::matches(digest, &bytes) {
        Some(bytes)
    } else {
        tracing::warn!(%digest, "a corrupt blob in the image cache was removed");
        c.evict(digest);
        None
    }
}

/// A manifest or config blob, verified, from the cache or the source.
fn small_blob(
    src: &mut dyn BlobSource,
    d: &Descriptor,
    opts: &PullOptions,
    is_manifest: bool,
    downloaded: &mut usize,
) -> Result<Vec<u8>> {
    let what = if is_manifest {
        "manifest"
    } else {
        "image config"
    };
    if d.size > opts.max_manifest {
        bail!(
            "the {what} {} is {} bytes, over the size limit of {} bytes (--max-manifest-size)",
            d.digest,
            d.size,
            opts.max_manifest
        );
    }
    if let Some(b) = cached_small(opts, &d.digest) {
        return Ok(b);
    }
    let bytes = if is_manifest {
        src.manifest(&d.digest, opts.max_manifest)?.bytes
    } else {
        read_limited(src.blob(&d.digest)?, opts.max_manifest, what)?
    };
    *downloaded += 1;
    if !crate::digest::matches(&d.digest, &bytes) {
        bail!(
            "blob digest mismatch for the {what} {}: got {}",
            d.digest,
            crate::digest::sha256(&bytes)
        );
    }
    if let Some(c) = &opts.cache {
        c.put(&d.digest, &bytes)?;
    }
    Ok(bytes)
}

/// Applies `layers` in order to `root`, extracting the paths `kind` labels.
fn unpack(
    src: &mut dyn BlobSource,
    layers: &[Descriptor],
    kind: &ImageKind,
    opts: &PullOptions,
    root: &Path,
    downloaded: &mut usize,
) -> Result<()> {
    std::fs::create_dir_all(root)?;
    let mut x = Extractor::new(root, &kind.paths(), opts.max_layer)?;
    for (i, layer) in layers.iter().enumerate() {
        apply_layer(src, layer, i, opts, &mut x, downloaded)?;
    }
    Ok(())
}

fn apply_layer(
    src: &mut dyn BlobSource,
    layer: &Descriptor,
    index: usize,
    opts: &PullOptions,
    x: &mut Extractor,
    downloaded: &mut usize,
) -> Result<()> {
    let size = layer.size;
    let (reader, tee, from_cache): (Box<dyn Read + Send>, Option<&BlobCache>, bool) =
        match opts.cache.as_ref().and_then(|c| c.open_blob(&layer.digest)) {
            Some(f) => (Box::new(f), None, true),
            None => {
                *downloaded += 1;
                let r = src.blob(&layer.digest)?;
                let label = format!("layer {} {}", index + 1, short(&layer.digest));
                opts.progress.task(&label, size, Unit::Bytes);
                let r: Box<dyn Read + Send> = Box::new(opts.progress.reading(r));
                (r, opts.cache.as_ref(), false)
            }
        };
    let mut v = Verify::new(reader, &layer.digest, size, tee)?;
    let applied = x.apply(&mut v);
    let verified = v.finish();
    opts.progress.done();
    if let Err(e) = verified {
        if from_cache {
            if let Some(c) = &opts.cache {
                c.evict(&layer.digest);
            }
            bail!("{e:#} (a corrupt blob in the image cache; it was removed, run again)");
        }
        return Err(e);
    }
    match applied {
        Ok(()) => Ok(()),
        Err(LayerError::Io(e)) => Err(anyhow!("layer {}: {e}", layer.digest)),
        Err(e) => Err(anyhow!("layer {}: {e}", layer.digest)),
    }
}

fn short(digest: &str) -> &str {
    let hex = crate::digest::hex(digest);
    &hex[..hex.len().min(12)]
}
