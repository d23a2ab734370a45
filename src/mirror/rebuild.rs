//! The filtered catalog's image, rebuilt with the image builder's stages: by default on the
//! source catalog's own image (pinned, every platform it had, or those the entry's `platforms`
//! name), with `/configs` replaced by the filtered files and the source's cache whited out, so
//! that nothing stale is served. On a base that is not this opreg (opm's), the command becomes
//! `serve /configs`: opm checks a cache's integrity whenever `--cache-dir` is given, and would
//! refuse the whited-out one. `--catalog-base` names another base (opreg's image gets a fresh
//! cache). The same filtered catalog on the same base gives the same digest.

use super::plan::PlannedCatalog;
use crate::error::Error;
use crate::image::reference;
use crate::imagebuild::{self, BuildOptions, Target};
use crate::oci::manifest::Platform;
use crate::progress::Progress;
use crate::registry::Connection;

/// How to rebuild.
#[derive(Clone, Debug)]
pub struct RebuildOptions {
    /// How to pull the base (the source side).
    pub image: crate::image::ImageOptions,
    /// `--catalog-base IMAGE`, in place of the source catalog's image.
    pub catalog_base: Option<String>,
    pub chunk_size: u64,
}

/// A rebuilt catalog, where it went.
#[derive(Clone, Debug)]
pub struct Rebuilt {
    pub destination: String,
    pub digest: String,
    pub platforms: Vec<String>,
    /// True when an opreg cache went in (an opreg base of this version).
    pub with_cache: bool,
}

/// The cache directory opm's catalog images serve from (`opm generate dockerfile`'s).
const CACHE_PATH: &str = "/tmp/cache";

/// Builds `c`'s filtered catalog into an image (in a private layout, removed afterwards).
pub fn build(c: &PlannedCatalog, opts: &RebuildOptions) -> Result<imagebuild::Staged, Error> {
    let build = BuildOptions {
        sources: Vec::new(),
        image: opts.image.clone(),
        base: Some(
            opts.catalog_base
                .clone()
                .unwrap_or_else(|| c.pinned.clone()),
        ),
        platforms: c
            .entry
            .platforms
            .iter()
            .map(|p| Platform {
                os: p.os.clone(),
                architecture: p.architecture.clone(),
                variant: None,
            })
            .collect(),
        labels: Vec::new(),
        configs_path: c.configs_path.clone(),
        cache_path: CACHE_PATH.into(),
        source_date_epoch: None,
        progress: Default::default(),
    };
    imagebuild::build_catalog(c.catalog.clone(), Vec::new(), &build).map_err(|e| {
        Error::failed(format!(
            "rebuilding the catalog {}: {}",
            c.pinned,
            e.detail()
        ))
    })
}

/// Builds `c`'s image and pushes it to its destination, reached through `dest`.
pub fn rebuild(
    c: &PlannedCatalog,
    opts: &RebuildOptions,
    dest: &Connection,
    progress: &dyn Progress,
) -> Result<Rebuilt, Error> {
    let staged = build(c, opts)?;
    let to = reference::parse(&c.destination).map_err(|e| Error::Usage(e.to_string()))?;
    let mut push = crate::image::push::options();
    push.chunk_size = opts.chunk_size;
    let digest = staged.image.digest();
    let pushed = crate::image::push::push(&staged.layout, digest, &to, dest, &push, progress)
        .map_err(Error::failed)?;
    Ok(Rebuilt {
        destination: c.destination.clone(),
        digest: pushed.digest,
        platforms: staged.platforms.clone(),
        with_cache: staged.with_cache,
    })
}

/// Builds `c`'s image into the OCI layout `dir`, under `name`.
pub fn rebuild_to_layout(
    c: &PlannedCatalog,
    opts: &RebuildOptions,
    dir: &std::path::Path,
    name: &str,
) -> Result<Rebuilt, Error> {
    let staged = build(c, opts)?;
    imagebuild::write_layouts(
        &staged,
        &[Target::Layout {
            dir: dir.to_path_buf(),
            tag: Some(name.to_string()),
        }],
    )?;
    Ok(Rebuilt {
        destination: format!("oci:{}:{name}", dir.display()),
        digest: staged.image.digest().to_string(),
        platforms: staged.platforms.clone(),
        with_cache: staged.with_cache,
    })
}
