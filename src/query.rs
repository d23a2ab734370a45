//! The questions commands ask of SOURCEs, as library functions: `list`'s rows, `upgrade`'s
//! resolution and `validate`'s verdict. Each decides, in one place, whether a built database
//! is asked through the store or the catalog is loaded, and what a warning means.

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::graph::resolve::{self, Resolution, UpgradeGraph};
use crate::image::ImageOptions;
use crate::inventory::Rows;
use crate::load::Opened;
use crate::progress::Reporter;
use std::path::{Path, PathBuf};

/// What `list` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listing {
    Packages,
    Channels,
    Bundles,
}

/// `opreg list`: the rows of `what` in `source` (of `package` only, when given; an unknown
/// package is an error with the nearest names). A built database is read through narrow
/// queries; anything else is loaded.
pub fn list(
    source: &Path,
    what: Listing,
    package: Option<&str>,
    image: &ImageOptions,
) -> Result<Rows> {
    let missing = |p: &str, names: Vec<String>| {
        let near = crate::text::nearest(p, names.iter().map(String::as_str), 3);
        Error::failed(format_args!(
            "{} has no package {p:?}{}",
            source.display(),
            crate::text::did_you_mean(&near)
        ))
    };
    match crate::load::open(source, image, &Reporter::none())? {
        Opened::Store(store) => {
            if let Some(p) = package {
                if !store.has_package(p)? {
                    let names = store.list_package_rows(None)?;
                    return Err(missing(p, names.into_iter().map(|r| r.name).collect()));
                }
            }
            let mut rows = Rows::default();
            match what {
                Listing::Packages => rows.packages = store.list_package_rows(package)?,
                Listing::Channels => rows.channels = store.list_channel_rows(package)?,
                Listing::Bundles => rows.bundles = store.list_bundle_rows(package)?,
            }
            Ok(rows)
        }
        Opened::Catalog(loaded) => {
            let cat = &loaded.catalog;
            if let Some(p) = package {
                if !cat.packages.contains_key(p) {
                    return Err(missing(p, cat.packages.keys().cloned().collect()));
                }
            }
            Ok(crate::inventory::rows_of(cat, package))
        }
    }
}

/// Where `upgrade` asks.
#[derive(Clone, Debug)]
pub enum Catalogs {
    /// The embedded demo catalog.
    Demo,
    /// SOURCEs; one built database is asked through the store.
    Sources(Vec<PathBuf>),
}

/// `opreg upgrade`: the resolution of `req` and, under classic rules, a note on the channel
/// it ran in. A request that makes no sense for its rules is [`Error::Usage`].
pub fn upgrade(
    catalogs: &Catalogs,
    req: &resolve::Request,
    image: &ImageOptions,
) -> Result<(Resolution, Option<String>)> {
    let ask = |g: &dyn UpgradeGraph| {
        let res = resolve::resolve(g, req)?;
        let note = resolve::channel_note(g, req, &res)?;
        Ok((res, note))
    };
    let sources = match catalogs {
        Catalogs::Demo => {
            let cat = crate::demo::catalog().map_err(|d| Error::invalid(d.0))?;
            return ask(&*cat).map_err(resolve_error);
        }
        Catalogs::Sources(s) => s,
    };
    // A built database is asked through narrow queries, as `opreg list` does: SQLite refuses
    // a damaged page when it reads one; a check of every page first (a server's start-up
    // check) took three quarters of the time on the community catalog.
    if let [one] = sources.as_slice() {
        return match crate::load::open(one, image, &Reporter::none())? {
            Opened::Store(store) => ask(&store),
            Opened::Catalog(loaded) => ask(&*loaded.catalog),
        }
        .map_err(resolve_error);
    }
    let loaded = crate::load::sources(sources, image, &Reporter::none())?;
    ask(&*loaded.catalog).map_err(resolve_error)
}

/// A resolution error as the application's: a usage error stays one.
pub fn resolve_error(e: resolve::ResolveError) -> Error {
    match e {
        resolve::ResolveError::Usage(msg) => Error::Usage(msg),
        other => Error::failed(other),
    }
}

/// How `validate` checks.
#[derive(Clone, Debug, Default)]
pub struct ValidateOptions {
    /// SOURCEs; `-` is a catalog file read from standard input.
    pub sources: Vec<PathBuf>,
    /// Also lint upgrade graphs that classic OLM and OLM v1 resolve differently.
    pub upgrades: bool,
    /// Any warning makes the catalog refused.
    pub warnings_as_errors: bool,
    pub allow_empty: bool,
    pub image: ImageOptions,
    /// Told of downloads.
    pub progress: Reporter,
    /// Told when reading and validating begin and end.
    pub checking: Reporter,
    /// After the catalog rules pass, check every image it names ([`crate::imagecheck`]).
    pub images: Option<ImageChecks>,
}

/// `validate --images`: how to check images, and against which base.
#[derive(Clone, Debug, Default)]
pub struct ImageChecks {
    pub options: crate::imagecheck::Options,
    /// Only images of bundles new or changed since this SOURCE.
    pub changed_from: Option<PathBuf>,
}

/// What `validate` found.
#[derive(Debug)]
pub struct Validated {
    /// Valid, and (with `warnings_as_errors`) without warnings.
    pub valid: bool,
    /// Packages, bundles and channel entries, when the catalog is valid (warnings aside).
    pub counts: Option<(usize, usize, usize)>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// The image checks, when asked for and the catalog rules passed.
    pub images: Option<crate::imagecheck::Report>,
}

/// The image checks of a valid catalog; a base that cannot be read is an error.
fn check_images(
    cat: &crate::model::Catalog,
    checks: &ImageChecks,
    opts: &ValidateOptions,
) -> Result<crate::imagecheck::Report> {
    let base = match &checks.changed_from {
        Some(b) => Some(
            crate::load::sources(std::slice::from_ref(b), &opts.image, &opts.progress)?.catalog,
        ),
        None => None,
    };
    Ok(crate::imagecheck::check(
        cat,
        base.as_deref(),
        &checks.options,
        &opts.checking,
    ))
}

/// `opreg validate`: every problem of the SOURCEs, and the verdict. Only a SOURCE that cannot
/// be found or pulled is an error.
pub fn validate(opts: &ValidateOptions) -> Result<Validated> {
    let stdin = crate::load::with_stdin(&opts.sources).map_err(|e| Error::failed(e.detail()))?;
    let resolved = crate::load::resolve(&stdin.0, &opts.image, &opts.progress)?;
    let load = crate::load::LoadOptions {
        progress: opts.checking.clone(),
        allow_empty: opts.allow_empty,
        ..Default::default()
    };
    let mut c = crate::load::check(&resolved, &load, &mut |b, _| b);
    if let Some(stdin) = &stdin.1 {
        stdin.name(&mut c.errors);
        stdin.name(&mut c.warnings);
    }
    if let (Ok(cat), true) = (&c.result, opts.upgrades) {
        c.warnings.extend(crate::validate::upgrade_lint::lint(cat));
    }
    let images = match (&c.result, &opts.images) {
        (Ok(cat), Some(checks)) => Some(check_images(cat, checks, opts)?),
        _ => None,
    };
    let (image_errors, image_warnings) = images
        .as_ref()
        .map_or((0, 0), |r| (r.errors(), r.warnings()));
    let warned = !c.warnings.is_empty() || image_warnings > 0;
    Ok(Validated {
        valid: c.result.is_ok() && image_errors == 0 && (!warned || !opts.warnings_as_errors),
        images,
        counts: c
            .result
            .as_ref()
            .ok()
            .map(|cat| (cat.packages.len(), cat.bundle_count(), cat.entry_count())),
        errors: c.errors,
        warnings: c.warnings,
    })
}
