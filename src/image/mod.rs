//! Images as SOURCEs: catalogs, legacy indexes and bundles read straight from container
//! registries or OCI image layouts.
//!
//! An image is one more input kind, not another pipeline: [`resolve`] turns each SOURCE that
//! is an image reference into a local path (the image's labelled content, unpacked into a
//! private temporary directory) and the usual readers of [`crate::catalog`] take it from
//! there. A bundle read from a bundle image then gets what `opm render` gives it
//! ([`Resolved::finish_bundle`]). Registries are reached through [`crate::registry`].
//!
//! | module | owns |
//! |---|---|
//! | [`reference`] | parsing `[registry[:port]/]repository[:tag][@digest]` and `oci:DIR[:TAG]` |
//! | [`tags`] | a repository's tags, manifest HEADs and OCI referrers |
//! | [`kind`] | catalog / index / bundle image by labels |
//! | [`pull`] | one image: manifests → config → layers, verified and cached |
//! | [`layers`] | the layer reader: tar, whiteouts, safety checks |
//! | [`unpacked`] | catalog images kept unpacked in the cache |
//! | [`opm`] | `opm render`'s finishing of bundle images and its migrations |
//! | [`copy`] | copying an image or index between registries and OCI layouts, digests kept |
//! | [`destination`] | where a copy writes and what a mirror asks first: a registry repository or an OCI layout |
//! | [`push`] | pushing an image read from an OCI layout to a registry (a copy) |
//! | [`dockerfile`] | `opm generate dockerfile`'s Dockerfile |
//! | [`signature`] | cosign's signatures in registries: read, checked against a policy, written |

pub mod copy;
pub mod destination;
pub mod dockerfile;
pub mod kind;
pub mod layers;
pub mod opm;
pub mod pull;
pub mod push;
pub mod reference;
pub mod signature;
pub mod tags;
pub mod unpacked;

use crate::model::Bundle;
use crate::oci::{cache, manifest};
use crate::registry;
use anyhow::{Context, Result};
use reference::ImageSource;
use std::path::{Path, PathBuf};

/// How image SOURCEs are read: the registry connection, the platform, the blob cache and the
/// size limits. The command line fills it from its image flags (`cli::ImageOptions`).
#[derive(Debug, Clone)]
pub struct ImageOptions {
    /// How to reach registries: `--use-http`, `--skip-tls-verify`, `--cert-dir`,
    /// `--registry-timeout`.
    pub connection: registry::Connection,
    /// Platform to pick from multi-arch images (`None`: linux/<host architecture>).
    pub platform: Option<String>,
    /// Content-addressed blob cache (`None`: the default directory, [`cache::default_dir`]).
    pub image_cache: Option<PathBuf>,
    /// Keep no downloaded blobs.
    pub no_image_cache: bool,
    /// Largest manifest or image config accepted, in bytes.
    pub max_manifest_size: u64,
    /// Largest layer accepted, and most bytes extracted from an image, in bytes.
    pub max_layer_size: u64,
    /// A containers-policy.json every image pulled must satisfy (sigstoreSigned keys,
    /// reject, insecureAcceptAnything); without it, and without the variable, any image is used.
    pub signature_policy: Option<PathBuf>,
}

impl Default for ImageOptions {
    fn default() -> Self {
        ImageOptions {
            connection: registry::Connection::default(),
            platform: None,
            image_cache: None,
            no_image_cache: false,
            max_manifest_size: DEFAULT_MAX_MANIFEST_SIZE,
            max_layer_size: DEFAULT_MAX_LAYER_SIZE,
            signature_policy: None,
        }
    }
}

pub use crate::registry::DEFAULT_REGISTRY_TIMEOUT;
/// `--max-manifest-size`'s default, in bytes.
pub const DEFAULT_MAX_MANIFEST_SIZE: u64 = 4 << 20;
/// `--max-layer-size`'s default, in bytes.
pub const DEFAULT_MAX_LAYER_SIZE: u64 = 8 << 30;

/// One image SOURCE, pulled.
#[derive(Debug, Clone)]
pub struct ResolvedImage {
    /// The SOURCE as given.
    pub given: String,
    pub digest: String,
    pub platform_digest: Option<String>,
    pub kind: kind::ImageKind,
    /// Its labelled content on disk.
    pub path: PathBuf,
}

impl ResolvedImage {
    /// `REFERENCE:/path/in/image` for a file unpacked from this image; `None` for any other.
    fn image_path(&self, local: &Path) -> Option<String> {
        let rel = local.strip_prefix(&self.path).ok()?;
        let inner = match &self.kind {
            kind::ImageKind::Catalog { configs } => Path::new(configs).join(rel),
            kind::ImageKind::Index { database } => PathBuf::from(database),
            kind::ImageKind::Bundle {
                manifests,
                metadata,
            } => {
                let mut parts = rel.components();
                let top = parts.next()?.as_os_str().to_str()?.to_string();
                let label = if top == "manifests" {
                    manifests
                } else {
                    metadata
                };
                Path::new(label).join(parts.as_path())
            }
        };
        let inner = inner.to_string_lossy();
        let slash = if inner.starts_with('/') { "" } else { "/" };
        Some(format!("{}:{slash}{inner}", self.given))
    }
}

/// SOURCEs as local paths, with the temporary directories that hold the unpacked images
/// (removed when this is dropped).
#[derive(Debug, Default)]
pub struct Resolved {
    pub paths: Vec<PathBuf>,
    /// For each entry of `paths`, the image it came from, if any.
    pub images: Vec<Option<ResolvedImage>>,
    _staging: Vec<crate::atomic::Dir>,
}

impl Resolved {
    /// SOURCEs that are all local paths.
    pub fn local(paths: &[PathBuf]) -> Resolved {
        Resolved {
            paths: paths.to_vec(),
            images: vec![None; paths.len()],
            _staging: Vec::new(),
        }
    }

    /// A bundle read from a bundle image, as `opm render` writes it; any other bundle as is.
    pub fn finish_bundle(&self, mut b: Bundle) -> Bundle {
        for img in self.images.iter().flatten() {
            if matches!(img.kind, kind::ImageKind::Bundle { .. })
                && Path::new(&b.origin.file).starts_with(&img.path)
            {
                opm::finish_bundle_image(&mut b, &img.given);
            }
        }
        b
    }

    /// Names the image a diagnostic's file came from, as `REFERENCE:/path/in/image`, instead of
    /// the temporary directory it was unpacked to.
    pub fn locate(&self, diags: &mut [crate::diag::Diagnostic]) {
        for d in diags {
            let Some(o) = d.origin.as_mut() else { continue };
            let local = Path::new(&o.file);
            if let Some(named) = self
                .images
                .iter()
                .flatten()
                .find_map(|i| i.image_path(local))
            {
                o.file = named;
            }
        }
    }

    /// The images pulled, for the built database's catalog info (`images`): a JSON array of
    /// `{reference, digest, kind}`; `None` when no SOURCE was an image.
    pub fn catalog_info(&self) -> Option<String> {
        let v: Vec<serde_json::Value> = self
            .images
            .iter()
            .flatten()
            .map(|i| {
                let mut o = serde_json::json!({
                    "reference": i.given, "digest": i.digest, "kind": i.kind.name(),
                });
                if let Some(p) = &i.platform_digest {
                    o["platformDigest"] = p.clone().into();
                }
                o
            })
            .collect();
        (!v.is_empty()).then(|| serde_json::Value::Array(v).to_string())
    }
}

/// True when SOURCE names a local path (it exists, or is written like a path) rather than
/// an image.
pub fn is_local(src: &Path) -> bool {
    if std::fs::symlink_metadata(src).is_ok() {
        return true;
    }
    let s = src.to_string_lossy();
    s.starts_with('/')
        || s.starts_with('.')
        || s.starts_with('~')
        || s.is_empty()
        || named_like_a_file(&s)
}

/// A name no one writes for an image: a catalog file's extension (`catalog.yaml`,
/// `index.db`), or a single word with no `/`, `:` or `@` (`Catalog.yaml`, `configs`).
fn named_like_a_file(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    [".json", ".yaml", ".yml", ".db"]
        .iter()
        .any(|ext| lower.ends_with(ext))
        || !s.contains(['/', ':', '@'])
}

/// The error for a SOURCE that is neither on disk nor an image reference.
fn not_found(src: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: no such file or directory (an image SOURCE is written registry/repository:tag, registry/repository@sha256:DIGEST or oci:DIR:TAG)",
        src.display()
    )
}

/// Turns SOURCEs into local paths, pulling the ones that are image references, reporting each
/// layer's download to `progress`.
pub fn resolve(
    sources: &[PathBuf],
    args: &ImageOptions,
    progress: &crate::progress::Reporter,
) -> Result<Resolved> {
    let mut out = Resolved::default();
    let mut opts: Option<pull::PullOptions> = None;
    let mut policy = None;
    for src in sources {
        let text = src.to_string_lossy().to_string();
        let image = if is_local(src) {
            if std::fs::symlink_metadata(src).is_err() {
                return Err(not_found(src));
            }
            None
        } else {
            match reference::parse_source(&text) {
                Ok(i) => Some(i),
                // Neither on disk nor a reference: a missing path, said once.
                Err(_) if !text.starts_with("oci:") => return Err(not_found(src)),
                Err(e) => anyhow::bail!("{e}"),
            }
        };
        let Some(image) = image else {
            out.paths.push(src.clone());
            out.images.push(None);
            continue;
        };
        let mut this = match &opts {
            Some(o) => o.clone(),
            None => {
                policy = signature::load_policy(args.signature_policy.as_deref())?;
                let o = pull_options(args, progress)?;
                opts = Some(o.clone());
                o
            }
        };
        // Known to the interrupt handler, which removes it if the process ends at once.
        let staging = crate::atomic::Dir::create_in(&std::env::temp_dir(), "opreg-image-")
            .context("cannot create a temporary directory for the image")?;
        this.check = policy.as_ref().map(|p| signature::Check {
            policy: std::sync::Arc::clone(p),
            named: signature::named_of(&image),
            given: text.clone(),
            max_manifest: args.max_manifest_size,
        });
        let pulled = pull_one(&image, args, &this, staging.path())
            .map_err(|e| anyhow::anyhow!("image {text}: {}", crate::text::one_line(&e)))?;
        tracing::info!(
            image = %text,
            digest = %pulled.digest,
            kind = pulled.kind.name(),
            downloaded_blobs = pulled.downloaded,
            "image resolved"
        );
        out.paths.push(pulled.path.clone());
        out.images.push(Some(ResolvedImage {
            given: text,
            digest: pulled.digest,
            platform_digest: pulled.platform_digest,
            kind: pulled.kind,
            path: pulled.path,
        }));
        out._staging.push(staging);
    }
    Ok(out)
}

/// The digest an image SOURCE's tag resolves to now (an index's digest for a multi-arch
/// image: the same digest a pull of it records), from its manifest alone: no blob is read.
/// `None` for a SOURCE that is not an image reference.
pub fn current_digest(source: &Path, args: &ImageOptions) -> Result<Option<String>> {
    if is_local(source) {
        return Ok(None);
    }
    let text = source.to_string_lossy();
    let Ok(image) = reference::parse_source(&text) else {
        return Ok(None);
    };
    let fetched = match &image {
        ImageSource::Registry(r) => {
            registry::Registry::new(r, &args.connection).and_then(|mut reg| {
                registry::BlobSource::manifest(&mut reg, r.manifest_ref(), args.max_manifest_size)
            })
        }
        ImageSource::Layout { dir, tag } => {
            let mut layout = registry::Layout::open(dir)?;
            registry::BlobSource::manifest(
                &mut layout,
                tag.as_deref().unwrap_or(""),
                args.max_manifest_size,
            )
        }
    }
    .map_err(|e| anyhow::anyhow!("image {text}: {}", crate::text::one_line(&e)))?;
    Ok(Some(crate::digest::sha256(&fetched.bytes)))
}

/// The verdict of `--signature-policy` on the image SOURCE whose top manifest is `digest`
/// now: `Ok` without a policy, or for a SOURCE that is not an image. The error is one line
/// naming the image and the reason.
pub fn check_signature_policy(source: &Path, args: &ImageOptions, digest: &str) -> Result<()> {
    let text = source.to_string_lossy();
    if is_local(source) || args.signature_policy.is_none() {
        return Ok(());
    }
    let Ok(image) = reference::parse_source(&text) else {
        return Ok(());
    };
    let check = signature::check_for(
        &image,
        &text,
        args.signature_policy.as_deref(),
        args.max_manifest_size,
    )?;
    let Some(check) = check else { return Ok(()) };
    match &image {
        ImageSource::Registry(r) => {
            let mut reg = registry::Registry::new(r, &args.connection)?;
            check.run(&mut reg, digest)
        }
        ImageSource::Layout { dir, .. } => check.run(&mut registry::Layout::open(dir)?, digest),
    }
    .map_err(|e| anyhow::anyhow!("image {text}: {}", crate::text::one_line(&e)))
}

fn pull_options(
    args: &ImageOptions,
    progress: &crate::progress::Reporter,
) -> Result<pull::PullOptions> {
    let platform = match &args.platform {
        Some(p) => manifest::parse_platform(p).map_err(|e| anyhow::anyhow!(e))?,
        None => manifest::host_platform(),
    };
    let cache = if args.no_image_cache {
        None
    } else {
        match args.image_cache.clone().or_else(cache::default_dir) {
            Some(dir) => Some(cache::BlobCache::open(&dir)?),
            None => None,
        }
    };
    Ok(pull::PullOptions {
        platform,
        cache,
        max_manifest: args.max_manifest_size,
        max_layer: args.max_layer_size,
        progress: progress.clone(),
        check: None,
    })
}

fn pull_one(
    image: &ImageSource,
    args: &ImageOptions,
    opts: &pull::PullOptions,
    staging: &Path,
) -> Result<pull::Pulled> {
    match image {
        ImageSource::Registry(r) => {
            let mut reg = registry::Registry::new(r, &args.connection)?;
            pull::pull(&mut reg, r.manifest_ref(), opts, staging)
        }
        ImageSource::Layout { dir, tag } => {
            let mut layout = registry::Layout::open(dir)?;
            // A local layout needs no cache.
            let local = pull::PullOptions {
                cache: None,
                ..opts.clone()
            };
            pull::pull(&mut layout, tag.as_deref().unwrap_or(""), &local, staging)
        }
    }
}
