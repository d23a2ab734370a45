//! Building catalog images without a daemon: the catalog is validated, rendered as FBC (one
//! file per package, opm's layout), and laid over a base image as reproducible layers, with the
//! opreg database pre-built from exactly those files when the base's server can read it.
//!
//! [`build`] runs the stages in order, each of which a caller can run alone: read and validate
//! the catalog ([`read_catalog`]), write `/configs` in opm's layout ([`write_configs`]), build
//! the cache ([`build_cache`], through [`crate::cache`] as `serve` builds it), and assemble the
//! layers over a base ([`assemble`]). The image is first written to a private OCI layout
//! ([`Staged`]); [`write_layouts`] then copies it to `oci:DIR[:TAG]` layouts, and
//! [`push_registries`] sends it to registries ([`crate::image::push`]).
//!
//! | module | owns |
//! |---|---|
//! | [`layer`] | reproducible tar+gzip layers, whiteouts |
//! | [`base`] | the base image: `--base`, or the running static binary |
//! | [`config`] | image config, manifest and index documents |
//! | [`run`] | `image build` in order: build, write, push, sign, the digest file |

pub mod base;
pub mod config;
pub mod layer;
pub mod run;

use crate::diag::Diagnostic;
use crate::error::Error;
use crate::image::copy::CopyOptions;
use crate::image::push::Pushed;
use crate::image::reference::{self, ImageSource, Reference};
use crate::oci::layout_writer::{LayoutWriter, Top};
use crate::oci::manifest::{self, Platform};
use layer::{Layer, LayerBuilder, Owner, ROOT};
use std::path::{Path, PathBuf};

/// The label naming the FBC directory of a catalog image.
pub const CONFIGS_LABEL: &str = crate::image::kind::CONFIGS_LABEL;

/// Where an image goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Layout { dir: PathBuf, tag: Option<String> },
    Registry(Reference),
}

impl Target {
    /// Parses `oci:DIR[:TAG]` or a registry reference.
    pub fn parse(s: &str) -> Result<Target, Error> {
        match reference::parse_source(s).map_err(|e| Error::Usage(e.to_string()))? {
            ImageSource::Layout { dir, tag } => Ok(Target::Layout { dir, tag }),
            ImageSource::Registry(r) if r.digest.is_some() => Err(Error::Usage(format!(
                "{s}: a target names a tag, not a digest"
            ))),
            ImageSource::Registry(r) => Ok(Target::Registry(r)),
        }
    }
}

/// `--label KEY=VALUE`; the key may not be empty.
pub fn parse_label(l: &str) -> Result<(String, String), Error> {
    match l.split_once('=') {
        Some(("", _)) => Err(Error::Usage(format!("--label {l}: the key is empty"))),
        Some((k, v)) => Ok((k.to_string(), v.to_string())),
        None => Err(Error::Usage(format!("--label {l}: expected KEY=VALUE"))),
    }
}

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub sources: Vec<PathBuf>,
    /// How to pull image SOURCEs and the base.
    pub image: crate::image::ImageOptions,
    /// `--base IMAGE`; `None` for the running binary.
    pub base: Option<String>,
    /// Platforms to keep from a multi-arch base (all when empty).
    pub platforms: Vec<Platform>,
    /// `--label K=V`, applied last.
    pub labels: Vec<(String, String)>,
    pub configs_path: String,
    pub cache_path: String,
    /// `SOURCE_DATE_EPOCH`: every timestamp in the image; the epoch when `None`.
    pub source_date_epoch: Option<u64>,
    pub progress: crate::progress::Reporter,
}

/// A built image, in a private OCI layout (removed on drop).
pub struct Staged {
    _dir: crate::atomic::Dir,
    /// The private layout that holds the image.
    pub layout: PathBuf,
    /// The image, as its layout holds it.
    pub image: crate::oci::image::Image,
    pub platforms: Vec<String>,
    /// True when the opreg database went in.
    pub with_cache: bool,
    /// Why it did not, for the output.
    pub note: Option<String>,
    /// What was found reading the catalog.
    pub warnings: Vec<Diagnostic>,
}

impl Staged {
    /// The staged image's layout, as a copy reads it.
    pub fn source(&self) -> ImageSource {
        ImageSource::Layout {
            dir: self.layout.clone(),
            tag: None,
        }
    }
}

/// Validates the catalog, then builds the image into a private layout: the stages below, in
/// order ([`read_catalog`], [`write_configs`], [`build_cache`], [`assemble`]).
pub fn build(opts: &BuildOptions) -> Result<Staged, Error> {
    absolute(&opts.configs_path, "--configs-path")?;
    absolute(&opts.cache_path, "--cache-path")?;
    if opts.base.is_none() {
        base::default_base_usable(&opts.platforms)?;
    }
    let (catalog, warnings) = read_catalog(opts)?;
    build_catalog(catalog, warnings, opts)
}

/// [`build`] of a catalog already read and validated (`opts.sources` is not read): the mirror
/// rebuilds filtered catalogs with it.
pub fn build_catalog(
    catalog: crate::model::Catalog,
    warnings: Vec<Diagnostic>,
    opts: &BuildOptions,
) -> Result<Staged, Error> {
    let mtime = opts.source_date_epoch.unwrap_or(0);
    let configs_path = absolute(&opts.configs_path, "--configs-path")?;
    let cache_path = absolute(&opts.cache_path, "--cache-path")?;
    // Known to the interrupt handler, which removes it if the process ends at once.
    let staging = crate::atomic::Dir::create_in(&std::env::temp_dir(), "opreg-image-build-")?;
    let work = staging.path().join("work");
    std::fs::create_dir_all(&work)?;
    let out = LayoutWriter::create(&staging.path().join("layout"))?;
    let mut base = match &opts.base {
        Some(b) => base::open(
            b,
            &opts.image.connection,
            &opts.platforms,
            opts.image.max_manifest_size,
            opts.image.signature_policy.as_deref(),
        )?,
        None => base::default_base(&opts.platforms, mtime, &work)?,
    };

    // The catalog's files, as render writes them.
    let configs_dir = work.join("configs");
    write_configs(catalog, &configs_dir)?;
    let with_cache = base.reads_our_cache();
    let note = (!with_cache).then(|| {
        format!(
            "the base {} is not opreg {} with database schema {}: no pre-built cache goes in, and the image runs `serve {configs_path}` (it builds its cache at start-up)",
            base.name,
            env!("CARGO_PKG_VERSION"),
            crate::store::schema_version()
        )
    });
    let lower = base.images.iter().any(|i| !i.layers.is_empty());
    let mut configs_layer = LayerBuilder::new(mtime);
    configs_layer.parents(&configs_path);
    configs_layer.dir(&configs_path, 0o755, ROOT);
    if lower {
        configs_layer.opaque(&configs_path);
    }
    configs_layer.tree(&configs_dir, &configs_path, ROOT, 0o755, 0o644)?;
    let configs_layer = configs_layer.write(&work)?;
    let db = match with_cache {
        true => Some(build_cache(&configs_dir, &work.join("cache"))?),
        false => None,
    };
    let cache_layer = cache_layer(db.as_deref(), &cache_path, lower, mtime, &work)?;

    let mut cmd = vec!["serve".to_string(), configs_path.clone()];
    if with_cache {
        cmd.push(format!("--cache-dir={cache_path}"));
    }
    let labels = labels(opts, &configs_path, &base);
    let settings = config::Settings {
        labels: &labels,
        entrypoint: vec!["/bin/opm".into()],
        cmd,
        mtime,
    };
    let top = assemble(&mut base, [&configs_layer, &cache_layer], &settings, &out)?;
    out.tag(&top, None)?;
    let _ = std::fs::remove_dir_all(&work);
    let layout = out.dir().to_path_buf();
    let image = crate::oci::image::read(
        &mut crate::oci::layout_reader::Layout::open(&layout)?,
        "",
        opts.image.max_manifest_size,
    )?;
    Ok(Staged {
        _dir: staging,
        layout,
        image,
        platforms: base.images.iter().map(|i| i.platform.to_string()).collect(),
        with_cache,
        note,
        warnings,
    })
}

/// Stage one: reads the SOURCEs and validates them; the catalog and its warnings, or every
/// problem found.
pub fn read_catalog(
    opts: &BuildOptions,
) -> Result<(crate::model::Catalog, Vec<Diagnostic>), Error> {
    let resolved = crate::image::resolve(&opts.sources, &opts.image, &opts.progress)
        .map_err(|e| Error::failed(crate::text::one_line(&e)))?;
    let load = crate::load::LoadOptions {
        progress: opts.progress.clone(),
        ..Default::default()
    };
    let checked = crate::load::check(&resolved, &load, &mut |b, _| b);
    match checked.result {
        Ok(c) => Ok((c.into_inner(), checked.warnings)),
        Err(_) => Err(Error::Invalid {
            errors: checked.errors,
            warnings: checked.warnings,
        }),
    }
}

/// Stage three: builds the opreg database of a `/configs` directory ([`write_configs`]) into
/// `cache_dir`, through [`crate::cache`] as `serve` builds it; returns the database's path.
pub fn build_cache(configs_dir: &Path, cache_dir: &Path) -> Result<PathBuf, Error> {
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let prepare = crate::cache::Prepare {
        cache_dir,
        enforce: false,
        image: &Default::default(),
        render: None,
        allow_empty: false,
        cancel: &cancel,
    };
    crate::cache::prepare(Some(configs_dir), &prepare)
        .map_err(|e| Error::failed(format!("cannot build the cache: {}", e.detail())))?;
    Ok(cache_dir.join(crate::cache::CACHE_DB))
}

/// The cache layer: the database `db` at `cache_path`, owned by USER 1001; without one, a
/// whiteout of `cache_path`, so that no base's cache is served with another catalog.
fn cache_layer(
    db: Option<&Path>,
    cache_path: &str,
    lower: bool,
    mtime: u64,
    work: &Path,
) -> Result<Layer, Error> {
    let mut cache_layer = LayerBuilder::new(mtime);
    cache_layer.parents(cache_path);
    if let Some(db) = db {
        const CACHE_OWNER: Owner = Owner { uid: 1001, gid: 0 };
        cache_layer.dir(cache_path, 0o775, CACHE_OWNER);
        if lower {
            cache_layer.opaque(cache_path);
        }
        let name = crate::cache::CACHE_DB;
        cache_layer.file(&format!("{cache_path}/{name}"), 0o644, CACHE_OWNER, db);
    } else {
        cache_layer.whiteout(cache_path);
    }
    Ok(cache_layer.write(work)?)
}

/// The image's labels: the configs label, the creation time, the base, then `--label`s.
fn labels(opts: &BuildOptions, configs_path: &str, base: &base::Base) -> Vec<(String, String)> {
    let mut labels = vec![(CONFIGS_LABEL.to_string(), configs_path.to_string())];
    if let Some(e) = opts.source_date_epoch {
        labels.push((
            "org.opencontainers.image.created".into(),
            crate::text::rfc3339(e),
        ));
    }
    if let Some(d) = &base.digest {
        // A layout's path names nothing outside this machine (and would make the digest
        // depend on where the build ran): only a registry base is named.
        if !base.name.starts_with("oci:") {
            labels.push((
                "org.opencontainers.image.base.name".into(),
                base.name.clone(),
            ));
        }
        labels.push(("org.opencontainers.image.base.digest".into(), d.clone()));
    }
    labels.extend(opts.labels.iter().cloned());
    labels
}

/// Stage four: the catalog's layers over each of the base's images, written to `out` (the
/// base's blobs, then ours, then configs and manifests); returns the top descriptor to tag.
pub fn assemble(
    base: &mut base::Base,
    ours: [&Layer; 2],
    settings: &config::Settings<'_>,
    out: &LayoutWriter,
) -> Result<Top, Error> {
    let [configs_layer, cache_layer] = ours;
    if let Some(own) = base.own_layer.take() {
        out.adopt(&own.path, &own.digest)?;
    }
    for l in ours {
        out.adopt(&l.path, &l.digest)?;
    }
    let mut entries = Vec::new();
    for img in &base.images {
        let mut layers = Vec::new();
        for d in &img.layers {
            if let Some(src) = base.source.as_mut() {
                out.copy_from(src.as_mut(), &d.digest, d.size)
                    .map_err(|e| Error::failed(format!("base image {}: {e:#}", base.name)))?;
            }
            layers.push(config::layer_descriptor(&d.media_type, &d.digest, d.size));
        }
        for l in ours {
            layers.push(config::layer_descriptor(
                layer::MEDIA_TYPE,
                &l.digest,
                l.size,
            ));
        }
        let cfg = config::catalog_config(
            &img.config,
            &[(configs_layer, "catalog"), (cache_layer, "cache")],
            settings,
        );
        let cfg_bytes = serde_json::to_vec(&cfg).map_err(anyhow::Error::from)?;
        let cfg_digest = out.put(&cfg_bytes)?;
        let m = config::manifest(&cfg_digest, cfg_bytes.len() as u64, layers);
        let m_bytes = serde_json::to_vec(&m).map_err(anyhow::Error::from)?;
        let m_digest = out.put(&m_bytes)?;
        entries.push(manifest::Descriptor {
            digest: m_digest,
            media_type: manifest::OCI_MANIFEST.into(),
            platform: Some(img.platform.clone()),
            size: m_bytes.len() as u64,
            ..Default::default()
        });
    }
    Ok(if base.index {
        let i = serde_json::to_vec(&config::index(entries)).map_err(anyhow::Error::from)?;
        let d = out.put(&i)?;
        Top {
            media_type: manifest::OCI_INDEX.into(),
            digest: d,
            size: i.len() as u64,
        }
    } else {
        let d = &entries[0];
        Top {
            media_type: manifest::OCI_MANIFEST.into(),
            digest: d.digest.clone(),
            size: d.size,
        }
    })
}

/// An absolute path inside the image, without a trailing slash.
fn absolute(p: &str, flag: &str) -> Result<String, Error> {
    let c = crate::image::layers::normalize(p.trim_start_matches('/'))
        .map_err(|why| Error::Usage(format!("{flag} {p}: {why}")))?;
    if c.is_empty() || !p.starts_with('/') {
        return Err(Error::Usage(format!(
            "{flag} {p}: an absolute path inside the image, such as /configs"
        )));
    }
    Ok(format!("/{}", c.join("/")))
}

/// Writes the catalog as opm lays out an FBC directory: `PACKAGE/catalog.json` per package,
/// and the metas that belong to no package in `catalog.json` at the root.
pub fn write_configs(catalog: crate::model::Catalog, dir: &Path) -> Result<(), Error> {
    use crate::catalog::fbc::{render, RenderFormat};
    use crate::model::Catalog;
    std::fs::create_dir_all(dir)?;
    let mut others = catalog.others;
    for (name, pkg) in catalog.packages {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(Error::failed(format!(
                "invalid package name {name:?}: must be a single local path element"
            )));
        }
        let (mine, rest): (Vec<_>, Vec<_>) = others.into_iter().partition(|m| m.package == name);
        others = rest;
        let one = Catalog {
            packages: [(name.clone(), pkg)].into_iter().collect(),
            others: mine,
        };
        let pdir = dir.join(&name);
        std::fs::create_dir_all(&pdir)?;
        write_file(&pdir.join("catalog.json"), &one, render)?;
    }
    if !others.is_empty() {
        let root = Catalog {
            packages: Default::default(),
            others,
        };
        write_file(&dir.join("catalog.json"), &root, render)?;
    }
    fn write_file(
        path: &Path,
        cat: &crate::model::Catalog,
        render: fn(
            &crate::model::Catalog,
            RenderFormat,
            &mut dyn std::io::Write,
        ) -> std::io::Result<()>,
    ) -> Result<(), Error> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
        render(cat, RenderFormat::Json, &mut f)?;
        std::io::Write::flush(&mut f)?;
        Ok(())
    }
    Ok(())
}

/// Copies the staged image into every `oci:` target (blobs first, `index.json` last);
/// returns the targets written.
pub fn write_layouts(staged: &Staged, targets: &[Target]) -> Result<Vec<String>, Error> {
    let mut written = Vec::new();
    for t in targets {
        let Target::Layout { dir, tag } = t else {
            continue;
        };
        let to = ImageSource::Layout {
            dir: dir.clone(),
            tag: tag.clone(),
        };
        crate::image::copy::copy_digest(
            &staged.source(),
            staged.image.digest(),
            &to,
            &crate::registry::Connections::default(),
            &CopyOptions::default(),
            &crate::progress::Silent,
        )
        .map_err(|e| Error::failed(format!("oci:{}: {e:#}", dir.display())))?;
        written.push(match tag {
            Some(t) => format!("oci:{}:{t}", dir.display()),
            None => format!("oci:{}", dir.display()),
        });
    }
    Ok(written)
}

/// Pushes the staged image to every registry target through `dest` (which may trust other
/// certificates than the sources' connection, `opts.image`), in order; stops at the first that
/// fails. Blobs of a `--base` on the same registry are mounted from its repository.
pub fn push_registries(
    staged: &Staged,
    targets: &[Target],
    opts: &BuildOptions,
    dest: &crate::registry::Connection,
    chunk_size: u64,
    progress: &dyn crate::progress::Progress,
) -> Result<Vec<(Reference, Pushed)>, Error> {
    let base = opts
        .base
        .as_deref()
        .and_then(|b| match reference::parse_source(b) {
            Ok(ImageSource::Registry(r)) => Some(r),
            _ => None,
        });
    let mut pushed = Vec::new();
    for t in targets {
        let Target::Registry(r) = t else { continue };
        let mut push = crate::image::push::options();
        push.chunk_size = chunk_size;
        push.mount_from = base
            .as_ref()
            .filter(|b| b.registry == r.registry)
            .map(|b| b.repository.clone());
        let digest = staged.image.digest();
        let done = crate::image::push::push(&staged.layout, digest, r, dest, &push, progress)
            .map_err(Error::failed)?;
        pushed.push((r.clone(), done));
    }
    Ok(pushed)
}

/// `opreg image push`: the image `source` names (`oci:DIR[:TAG]`) pushed to the registry
/// reference `target`, blobs above `chunk_size` bytes in chunks, reporting to `progress`.
pub fn push_layout(
    source: &str,
    target: &str,
    args: &crate::image::ImageOptions,
    chunk_size: u64,
    progress: &dyn crate::progress::Progress,
) -> Result<(Reference, Pushed), Error> {
    let (dir, tag) = match Target::parse(source)? {
        Target::Layout { dir, tag } => (dir, tag),
        Target::Registry(_) => {
            return Err(Error::Usage(format!(
                "{source}: the image to push is an OCI layout, oci:DIR[:TAG]"
            )))
        }
    };
    let to = match Target::parse(target)? {
        Target::Registry(r) => r,
        Target::Layout { .. } => {
            return Err(Error::Usage(format!(
                "{target}: push to a registry reference (copy layouts with `skopeo copy`)"
            )))
        }
    };
    let img = crate::oci::layout_reader::Layout::open(&dir)
        .and_then(|mut l| {
            crate::oci::image::read(&mut l, tag.as_deref().unwrap_or(""), args.max_manifest_size)
        })
        .map_err(|e| Error::failed(format!("{source}: {e:#}")))?;
    let mut push = crate::image::push::options();
    push.chunk_size = chunk_size;
    let pushed =
        crate::image::push::push(&dir, img.digest(), &to, &args.connection, &push, progress)
            .map_err(Error::failed)?;
    Ok((to, pushed))
}
