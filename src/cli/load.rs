//! Reading and validating SOURCEs for the commands, and reporting what was found: every
//! diagnostic, the empty-catalog check (`--allow-empty`), and the progress spinner.

use super::output;
use crate::catalog::BundleSink;
use crate::diag::{Diagnostic, Rule};
use crate::model::Catalog;
use crate::validate::ValidCatalog;
use std::path::PathBuf;

/// What reading and validating SOURCEs found.
pub struct Checked {
    /// The valid catalog, or the catalog as read when there are errors.
    pub result: Result<ValidCatalog, Catalog>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

/// The error for a catalog without packages: an empty directory, a tree holding only a
/// template, or only metas of unknown schemas.
pub fn no_packages() -> Diagnostic {
    Diagnostic::error(
        Rule::Empty,
        "the catalog has no packages (an empty directory, only a template, or only unknown schemas?); pass --allow-empty to accept an empty catalog",
    )
}

/// Reads and validates SOURCEs (naming files unpacked from `images` by their image), printing
/// nothing. Without `allow_empty`, a catalog with no
/// packages is an error.
pub fn load_checked(
    sources: &[PathBuf],
    images: &crate::image::Resolved,
    progress: bool,
    allow_empty: bool,
    sink: &mut BundleSink<'_>,
) -> Checked {
    let spinner = progress.then(|| {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message("reading sources");
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        pb
    });
    let mut warnings = Vec::new();
    let (cat, mut errors) = crate::source::load_sources_with(sources, &mut warnings, sink);
    if let Some(pb) = &spinner {
        pb.set_message("validating");
    }
    let result = match crate::validate::check(cat, &mut errors, &mut warnings) {
        Ok(cat) if cat.packages.is_empty() && !allow_empty => {
            errors.push(no_packages());
            Err(cat.into_inner())
        }
        other => other,
    };
    // Files unpacked from images are named by the image they came from.
    images.locate(&mut errors);
    images.locate(&mut warnings);
    if let Some(pb) = spinner {
        pb.finish_and_clear();
    }
    Checked {
        result,
        errors,
        warnings,
    }
}

/// [`load_checked`], printing every warning (unless `quiet`) and every error on stderr, then a
/// count of the errors. `Err` carries the exit code.
pub fn load_valid_opts(
    sources: &[PathBuf],
    images: &crate::image::Resolved,
    progress: bool,
    quiet: bool,
    allow_empty: bool,
    sink: &mut BundleSink<'_>,
) -> Result<ValidCatalog, i32> {
    let c = load_checked(sources, images, progress, allow_empty, sink);
    if !quiet {
        c.warnings.iter().for_each(output::diagnostic);
    }
    match c.result {
        Ok(cat) => Ok(cat),
        Err(_) => {
            c.errors.iter().for_each(output::diagnostic);
            output::status(format_args!(
                "{} error(s): the catalog is invalid",
                c.errors.len()
            ));
            Err(super::EXIT_FAILURE)
        }
    }
}
