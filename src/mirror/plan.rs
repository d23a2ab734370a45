//! The plan of a mirror, made before anything is copied: each catalog pinned to the digest its
//! reference names now, read, filtered, its dependencies added and the result validated; then
//! every image to copy with its name at the destination.
//!
//! Everything after the pin uses the digest, so a tag that moves during the run changes nothing.

use super::config::{ImageSetConfiguration, Operator};
use super::deps::{self, Added};
use super::filter;
use super::images::{self, Wanted};
use crate::error::Error;
use crate::image::reference::{self, ImageSource};
use crate::model::Catalog;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// How the plan reads its sources.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// How to pull the catalogs (the source side's connection, cache and limits).
    pub image: crate::image::ImageOptions,
    /// `REGISTRY[/PREFIX]` the images go to; empty for a mirror to disk, where each image is
    /// named by its source and each catalog by its target path and tag ([`image_destination`]).
    pub destination: String,
    /// `--max-nested-paths` (0: no folding).
    pub max_nested_paths: usize,
}

/// One catalog of the configuration, filtered.
#[derive(Debug)]
pub struct PlannedCatalog {
    /// The operator entry.
    pub entry: Operator,
    /// `REGISTRY/REPOSITORY@DIGEST`: the catalog as pinned at the start.
    pub pinned: String,
    pub digest: String,
    /// Where the rebuilt catalog goes, by tag.
    pub destination: String,
    /// Where the source image keeps its FBC (its configs label), `/configs` when it says none.
    pub configs_path: String,
    /// The filtered catalog, dependencies included.
    pub catalog: Catalog,
    /// Bundles in the source catalog, and kept.
    pub bundles_in_source: usize,
    pub kept: BTreeMap<String, BTreeSet<String>>,
    /// Bundles added for dependencies, each with the requirement that brought it.
    pub added: Vec<Added>,
    /// Why each kept bundle is kept ([`filter::Why`]).
    pub why: filter::Why,
    /// The filter's and the resolver's notes.
    pub warnings: Vec<String>,
}

/// One image to copy.
#[derive(Clone, Debug)]
pub struct PlannedImage {
    pub wanted: Wanted,
    /// The destination as the catalog or configuration wrote the source (tag or digest).
    pub destination: String,
}

/// The whole plan.
#[derive(Debug, Default)]
pub struct Plan {
    pub catalogs: Vec<PlannedCatalog>,
    pub images: Vec<PlannedImage>,
    /// Images a `blockedImages` pattern left out.
    pub blocked: Vec<String>,
}

/// What a catalog's plan says to the user as soon as it is made: where its tag pointed, and
/// what the filter kept.
pub fn pinned_line(c: &PlannedCatalog) -> String {
    let kept: usize = c.kept.values().map(|b| b.len()).sum();
    format!(
        "catalog {} pinned to {}: {kept} of {} bundles kept, {} added for dependencies",
        c.entry.catalog,
        c.digest,
        c.bundles_in_source,
        c.added.len()
    )
}

/// Why a catalog's bundles are kept, one line a package: how many for each kind of reason
/// (`package etcd: 3 kept: 1 head of a channel, 2 within a version range`).
pub fn why_lines(c: &PlannedCatalog) -> Vec<String> {
    c.why
        .iter()
        .map(|(pkg, bundles)| {
            let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
            for reasons in bundles.values() {
                let kinds_of: BTreeSet<&str> = reasons.iter().map(filter::Reason::kind).collect();
                for k in kinds_of {
                    *kinds.entry(k).or_default() += 1;
                }
            }
            let parts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            format!(
                "package {pkg}: {} kept: {}",
                bundles.len(),
                parts.join(", ")
            )
        })
        .collect()
}

/// The tag an image named only by digest gets at the destination, so that garbage collection
/// keeps it: `mirror-sha256-<hex>` (not `sha256-<hex>`, the OCI referrers fallback tag).
pub fn digest_tag(digest: &str) -> String {
    format!("mirror-{}", crate::digest::tag_form(digest))
}

/// Makes the plan: pins, reads and filters each catalog, adds dependencies, validates, and lists
/// the images. Any error names the catalog.
pub fn plan(cfg: &ImageSetConfiguration, opts: &PlanOptions) -> Result<Plan, Error> {
    let mut out = Plan::default();
    for op in &cfg.mirror.operators {
        out.catalogs.push(plan_catalog(op, opts)?);
    }
    let catalogs: Vec<&Catalog> = out.catalogs.iter().map(|c| &c.catalog).collect();
    let (wanted, blocked) = images::wanted(&catalogs, cfg);
    out.blocked = blocked;
    let mut at: std::collections::HashMap<String, usize> = Default::default();
    for w in wanted {
        let destination = image_destination(&w, &opts.destination, opts.max_nested_paths)?;
        // Two entries that land on one name (a mirror to disk names each image by its source)
        // are one copy.
        match at.get(&destination) {
            Some(&i) => out.images[i].wanted.origins.extend(w.origins),
            None => {
                at.insert(destination.clone(), out.images.len());
                out.images.push(PlannedImage {
                    wanted: w,
                    destination,
                })
            }
        }
    }
    Ok(out)
}

fn plan_catalog(op: &Operator, opts: &PlanOptions) -> Result<PlannedCatalog, Error> {
    let fail = |why: String| Error::failed(format!("catalog {}: {why}", op.catalog));
    let source = catalog_source(&op.catalog)?;
    let spec = source_text(&source);
    let digest = crate::image::current_digest(&PathBuf::from(&spec), &opts.image)
        .map_err(|e| Error::failed(crate::text::one_line(&e)))?
        .ok_or_else(|| fail("not an image reference".into()))?;
    // A registry's tag may move: everything after this uses the digest. A layout is local.
    let pinned = match &source {
        ImageSource::Registry(r) => format!("{}/{}@{digest}", r.registry, r.repository),
        ImageSource::Layout { .. } => spec,
    };
    let resolved =
        crate::load::resolve(&[PathBuf::from(&pinned)], &opts.image, &Default::default())?;
    let configs_path = match resolved.images.first().and_then(|i| i.as_ref()) {
        Some(i) => match &i.kind {
            crate::image::kind::ImageKind::Catalog { configs } => configs.clone(),
            other => {
                return Err(fail(format!(
                    "a {} image, not a file-based catalog image",
                    other.name()
                )))
            }
        },
        None => "/configs".to_string(),
    };
    let checked = crate::load::check(&resolved, &Default::default(), &mut |b, _| b);
    // The source need not be valid everywhere: only what the filter keeps must be (and is
    // checked below). A source that could not be read at all is an error.
    let mut source_notes = Vec::new();
    let whole = match checked.result {
        Ok(c) => c.into_inner(),
        Err(c) if !c.packages.is_empty() => {
            source_notes.push(format!(
                "the source catalog has {} errors (first: {}); only the filtered catalog is required to be valid",
                checked.errors.len(),
                checked.errors.first().map(crate::error::diagnostic_line).unwrap_or_default()
            ));
            c
        }
        Err(_) => {
            let first = checked.errors.first().map(crate::error::diagnostic_line);
            return Err(fail(format!(
                "the source catalog cannot be read ({} errors; first: {})",
                checked.errors.len(),
                first.unwrap_or_default()
            )));
        }
    };
    let mut filtered = filter::filter(&whole, op).map_err(|e| fail(e.to_string()))?;
    let mut added = Vec::new();
    if !op.skip_dependencies {
        let r = deps::resolve(&whole, &mut filtered);
        added = r.added;
        filtered.warnings.extend(r.warnings);
    }
    let repaired = super::heads::repair(&whole, &mut filtered);
    filtered.warnings.extend(repaired);
    filtered.warnings.extend(source_notes);
    let problems: Vec<String> = crate::validate::validate(&filtered.catalog)
        .iter()
        .filter(|d| d.is_error())
        .map(crate::error::diagnostic_line)
        .collect();
    if !problems.is_empty() {
        return Err(fail(format!(
            "the filtered catalog is invalid, nothing was copied: {}",
            problems.join("; ")
        )));
    }
    Ok(PlannedCatalog {
        destination: catalog_destination(op, &digest, &opts.destination, opts.max_nested_paths)?,
        entry: op.clone(),
        pinned,
        digest,
        configs_path,
        bundles_in_source: whole.packages.values().map(|p| p.bundles.len()).sum(),
        catalog: filtered.catalog,
        kept: filtered.kept,
        why: filtered.why,
        added,
        warnings: filtered.warnings,
    })
}

/// A catalog of the configuration: a registry reference, or an OCI layout as oc-mirror writes
/// it (`oci:///abs/dir`, `oci://rel/dir`) or as opreg does (`oci:DIR[:TAG]`).
pub fn catalog_source(catalog: &str) -> Result<ImageSource, Error> {
    let spec = match catalog.strip_prefix("oci://") {
        Some(dir) => format!("oci:{dir}"),
        None => catalog.to_string(),
    };
    reference::parse_source(&spec).map_err(|e| Error::Usage(format!("catalog {catalog:?}: {e}")))
}

/// An image source as `load` and the image builder read it.
fn source_text(s: &ImageSource) -> String {
    match s {
        ImageSource::Registry(r) => r.given.clone(),
        ImageSource::Layout { dir, tag: None } => format!("oci:{}", dir.display()),
        ImageSource::Layout { dir, tag: Some(t) } => format!("oci:{}:{t}", dir.display()),
    }
}

/// Where an image goes ([`images::destination`]); with no destination (a mirror to disk), its
/// source reference, its name in the layout.
pub fn image_destination(w: &Wanted, dest: &str, max_nested: usize) -> Result<String, Error> {
    if dest.is_empty() {
        return Ok(w.source.clone());
    }
    images::destination(w, dest, max_nested).map_err(|e| Error::Usage(e.to_string()))
}

/// `DEST/<targetCatalog, else the source path>:<targetTag, else the source tag>`; a catalog
/// named by digest alone gets [`digest_tag`]; one in an OCI layout, as oc-mirror names it, the
/// directory's last component and `latest` (or the layout tag it names). With no destination
/// (a mirror to disk), the rebuilt catalog's name in the layout: `<path>:<tag>`.
pub fn catalog_destination(
    op: &Operator,
    digest: &str,
    dest: &str,
    max_nested: usize,
) -> Result<String, Error> {
    let (registry, repository, tag) = match catalog_source(&op.catalog)? {
        ImageSource::Registry(r) => {
            let tag = r.tag.unwrap_or_else(|| digest_tag(digest));
            (r.registry, r.repository, tag)
        }
        ImageSource::Layout { dir, tag } => {
            let base = dir
                .file_name()
                .map(|n| n.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            (
                String::from("localhost"),
                base,
                tag.unwrap_or_else(|| "latest".into()),
            )
        }
    };
    let path = match op.target_catalog.trim_matches('/') {
        "" => repository,
        t => t.to_string(),
    };
    let tag = match op.target_tag.as_str() {
        "" => tag,
        t => t.to_string(),
    };
    if dest.is_empty() {
        return Ok(format!("{path}:{tag}"));
    }
    let w = Wanted {
        source: format!("{registry}/{path}:{tag}"),
        target_repo: Some(path),
        target_tag: Some(tag),
        origins: Vec::new(),
    };
    images::destination(&w, dest, max_nested).map_err(|e| Error::Usage(e.to_string()))
}
