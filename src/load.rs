//! Reading SOURCE arguments into a validated catalog, for every command that needs one:
//! images are pulled first ([`resolve`]), then the files are read and checked, and every
//! diagnostic is returned (nothing here prints).
//!
//! [`open`] is the one place that decides "is this an opreg database? then ask the store":
//! a built database is answered through narrow queries, anything else is loaded whole.

use crate::catalog::BundleSink;
use crate::diag::{Diagnostic, Rule};
use crate::error::{Error, Result};
use crate::image::{ImageOptions, Resolved};
use crate::model::Catalog;
use crate::progress::Reporter;
use crate::store::Store;
use crate::validate::ValidCatalog;
use std::path::{Path, PathBuf};

/// How SOURCEs are read.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Told when reading and validating begin and end.
    pub progress: crate::progress::Reporter,
    /// Accept a catalog with no packages (refused by default, as a likely mistake).
    pub allow_empty: bool,
    /// Files never read as catalog input (the database being written, for example).
    pub exclude: Vec<PathBuf>,
}

/// What reading and validating SOURCEs found.
pub struct Checked {
    /// The valid catalog, or the catalog as read when there are errors.
    pub result: std::result::Result<ValidCatalog, Catalog>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

/// A valid catalog and the warnings found reading it.
pub struct Loaded {
    pub catalog: ValidCatalog,
    pub warnings: Vec<Diagnostic>,
}

/// Pulls the image SOURCEs (a local path is kept as it is); the error is one line naming the
/// reference.
pub fn resolve(sources: &[PathBuf], image: &ImageOptions, progress: &Reporter) -> Result<Resolved> {
    crate::image::resolve(sources, image, progress)
        .map_err(|e| Error::failed(crate::text::one_line(&e)))
}

/// The error for a catalog without packages: an empty directory, a tree holding only a
/// template, or only metas of unknown schemas. It names no flag: a command that can accept an
/// empty catalog says how ([`is_no_packages`] finds it).
pub fn no_packages() -> Diagnostic {
    Diagnostic::error(
        Rule::Empty,
        "the catalog has no packages (an empty directory, only a template, or only unknown schemas?)",
    )
}

/// Whether `d` is [`no_packages`]'s error.
pub fn is_no_packages(d: &Diagnostic) -> bool {
    d.is_error() && d.rule == Rule::Empty && d.package.is_none() && d.channel.is_none()
}

/// Reads and validates the files of `images` (naming files unpacked from images by their
/// image), handing each bundle to `sink` as it is read. Without `allow_empty`, a catalog with
/// no packages is an error.
pub fn check(images: &Resolved, opts: &LoadOptions, sink: &mut BundleSink<'_>) -> Checked {
    check_paths(&images.paths, images, opts, sink)
}

/// [`check`] of some of `images`' paths.
pub fn check_paths(
    paths: &[PathBuf],
    images: &Resolved,
    opts: &LoadOptions,
    sink: &mut BundleSink<'_>,
) -> Checked {
    opts.progress.step("reading sources");
    let mut warnings = Vec::new();
    let (cat, mut errors) =
        crate::source::load_sources_excluding(paths, &opts.exclude, &mut warnings, &mut |b, d| {
            sink(images.finish_bundle(b), d)
        });
    opts.progress.step("validating");
    let result = match crate::validate::check(cat, &mut errors, &mut warnings) {
        Ok(cat) if cat.packages.is_empty() && !opts.allow_empty => {
            errors.push(no_packages());
            Err(cat.into_inner())
        }
        other => other,
    };
    // Files unpacked from images are named by the image they came from.
    images.locate(&mut errors);
    images.locate(&mut warnings);
    opts.progress.done();
    Checked {
        result,
        errors,
        warnings,
    }
}

/// [`check`], as a valid catalog or [`Error::Invalid`] with every problem.
pub fn valid(images: &Resolved, opts: &LoadOptions, sink: &mut BundleSink<'_>) -> Result<Loaded> {
    let c = check(images, opts, sink);
    match c.result {
        Ok(catalog) => Ok(Loaded {
            catalog,
            warnings: c.warnings,
        }),
        Err(_) => Err(Error::Invalid {
            errors: c.errors,
            warnings: c.warnings,
        }),
    }
}

/// Pulls (reporting downloads to `progress`) and loads SOURCEs into a valid catalog (empty
/// catalogs accepted), warnings returned.
pub fn sources(sources: &[PathBuf], image: &ImageOptions, progress: &Reporter) -> Result<Loaded> {
    let resolved = resolve(sources, image, progress)?;
    valid(
        &resolved,
        &LoadOptions {
            allow_empty: true,
            ..Default::default()
        },
        &mut |b, _| b,
    )
}

/// A catalog as read, valid or not (what `render` writes).
pub struct AsRead {
    pub catalog: Catalog,
    /// The warnings, then the validation errors (still of severity error).
    pub problems: Vec<Diagnostic>,
}

/// Reads `images`' paths in `range` into a catalog whether or not it is valid; only a file
/// that could not be read or parsed is an error ([`Error::Invalid`] with those files).
pub fn as_read(images: &Resolved, range: std::ops::Range<usize>) -> Result<AsRead> {
    let opts = LoadOptions {
        allow_empty: true,
        ..Default::default()
    };
    let c = check_paths(&images.paths[range], images, &opts, &mut |b, _| b);
    let unreadable: Vec<Diagnostic> = c
        .errors
        .iter()
        .filter(|d| d.rule == Rule::Parse)
        .cloned()
        .collect();
    if !unreadable.is_empty() {
        return Err(Error::invalid(unreadable));
    }
    let mut problems = c.warnings;
    problems.extend(c.errors);
    Ok(AsRead {
        catalog: match c.result {
            Ok(valid) => valid.into_inner(),
            Err(cat) => cat,
        },
        problems,
    })
}

/// One SOURCE opened for questions: a database built by `opreg ingest` is asked through the
/// store; anything else is read and validated into the model.
pub enum Opened {
    Store(Store),
    Catalog(Loaded),
}

/// Opens SOURCE as [`Opened`] (reporting downloads to `progress`).
pub fn open(source: &Path, image: &ImageOptions, progress: &Reporter) -> Result<Opened> {
    if matches!(
        crate::source::detect(source),
        Ok(crate::source::SourceKind::OpregDb)
    ) {
        return Ok(Opened::Store(Store::open_unverified(source)?));
    }
    Ok(Opened::Catalog(sources(
        std::slice::from_ref(&source.to_path_buf()),
        image,
        progress,
    )?))
}

/// Standard input saved to a file, for a SOURCE written `-`; removed when dropped.
pub struct Stdin {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Stdin {
    /// Names the saved file `standard input` in diagnostics.
    pub fn name(&self, diags: &mut [Diagnostic]) {
        let saved = self.path.display().to_string();
        for o in diags.iter_mut().filter_map(|d| d.origin.as_mut()) {
            if o.file == saved {
                o.file = "standard input".into();
            }
        }
    }
}

/// SOURCEs with a `-` replaced by a file holding standard input (read once, whole).
pub fn with_stdin(sources: &[PathBuf]) -> Result<(Vec<PathBuf>, Option<Stdin>)> {
    if !sources.iter().any(|s| s.as_os_str() == "-") {
        return Ok((sources.to_vec(), None));
    }
    let dir = tempfile::Builder::new().prefix("opreg-stdin-").tempdir()?;
    let path = dir.path().join("stdin");
    let mut file = std::fs::File::create(&path)?;
    std::io::copy(&mut std::io::stdin().lock(), &mut file)
        .map_err(|e| Error::failed(format!("cannot read standard input: {e}")))?;
    let sources = sources
        .iter()
        .map(|s| match s.as_os_str() == "-" {
            true => path.clone(),
            false => s.clone(),
        })
        .collect();
    Ok((sources, Some(Stdin { _dir: dir, path })))
}
