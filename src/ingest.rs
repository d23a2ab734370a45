//! The one build path: SOURCEs read, validated and written into a new database, streaming.
//! `opreg ingest`, `serve`'s start-up build, every reload and `image build` all go through
//! [`build`].
//!
//! Three threads share the work:
//! - the caller's parses and validates, handing each bundle to the writer as soon as it is read
//!   and keeping only a light copy ([`crate::validate::bundle_rules_then_lighten`]), so memory
//!   stays far below the size of the catalog;
//! - the writer puts the bundles' rows into the new database as they arrive;
//! - a third hashes the sources for the database's `source_digest` (unless it is known).
//!
//! Once the catalog is known to be valid, the rest is written and the file moved into place.
//! On any error, or when `cancel` is raised, the temporary file is deleted and the output is
//! untouched. The output and its temporary file are never read as input.

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::image::Resolved;
use crate::load::LoadOptions;
use crate::model::Bundle;
use crate::store;
use crate::validate::ValidCatalog;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// How [`build`] runs.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Told how reading, validating and writing go.
    pub progress: crate::progress::Reporter,
    /// Accept a catalog with no packages.
    pub allow_empty: bool,
    /// The sources' digest, when the caller computed it already (serve's cache check).
    pub digest: Option<String>,
}

/// What was written.
pub struct Built {
    /// The catalog, its bundles lightened (no manifests, no property values beyond what
    /// validation and counting need).
    pub catalog: ValidCatalog,
    /// Problems that did not stop the build.
    pub warnings: Vec<Diagnostic>,
}

/// `opreg ingest`: refuses an output that cannot take a database before any work, then
/// [`build`]s, stopping cleanly on SIGINT or SIGTERM ([`crate::interrupt`]).
pub fn ingest(resolved: &Resolved, output: &Path, opts: &BuildOptions) -> Result<Built> {
    store::check_output(output)?;
    let interrupt = crate::interrupt::Interrupt::catch();
    build(resolved, output, opts, &interrupt.flag())
}

/// Reads, validates and stores the files of `resolved` into `output`, atomically. Bundles from
/// bundle images are finished as `opm render` does, and the images' digests are recorded in the
/// catalog info (`images`).
pub fn build(
    resolved: &Resolved,
    output: &Path,
    opts: &BuildOptions,
    cancel: &AtomicBool,
) -> Result<Built> {
    let sources = &resolved.paths[..];
    crate::memory::for_ingest();
    let started = std::time::Instant::now();
    let builder = store::Builder::create(output)?;
    let exclude: Vec<PathBuf> = vec![output.to_path_buf(), builder.temp_path().to_path_buf()];
    let load = LoadOptions {
        progress: opts.progress.clone(),
        allow_empty: opts.allow_empty,
        exclude: exclude.clone(),
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<Bundle>(64);
    let (checked, written, digest) = std::thread::scope(|s| {
        let digest = s.spawn(|| match &opts.digest {
            Some(d) => Ok(d.clone()),
            None => crate::source::digest(sources, &exclude, cancel),
        });
        let writer = s.spawn(move || -> anyhow::Result<store::Builder> {
            let mut builder = builder;
            for b in rx {
                builder.add_bundle(&b)?;
            }
            builder.analyze_bundle_tables()?;
            Ok(builder)
        });
        let mut tx = Some(tx);
        let mut sink = |b: Bundle, diags: &mut Vec<Diagnostic>| {
            let light = crate::validate::bundle_rules_then_lighten(&b, diags);
            if cancel.load(Ordering::Relaxed) {
                // Closing the channel stops the writer; the rest is only read.
                tx = None;
            }
            if let Some(tx) = &tx {
                // If the writer has stopped, its error is reported below.
                let _ = tx.send(b);
            }
            light
        };
        let checked = crate::load::check(resolved, &load, &mut sink);
        // The last sender: the writer finishes once it is gone.
        drop(tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the database writer failed")));
        let digest = digest
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("computing the source digest failed")));
        (checked, written, digest)
    });
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "sources read, bundles stored, catalog validated"
    );
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    let catalog = match checked.result {
        Ok(c) => c,
        Err(_) => {
            return Err(Error::Invalid {
                errors: checked.errors,
                warnings: checked.warnings,
            })
        }
    };
    let builder = written?;
    let digest = digest.map_err(|e| Error::failed(format!("cannot read sources: {e}")))?;
    if let Some(images) = resolved.catalog_info() {
        builder.set_info("images", &images)?;
    }
    with_bar(catalog.packages.len() as u64, &opts.progress, |tick| {
        builder.finish(&catalog, &digest, tick)
    })?;
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "database written and moved into place"
    );
    Ok(Built {
        catalog,
        warnings: checked.warnings,
    })
}

/// Runs `f` with a callback that reports the packages written as a "writing" task.
fn with_bar<R>(
    total: u64,
    progress: &crate::progress::Reporter,
    f: impl FnOnce(&mut dyn FnMut(u64, u64)) -> R,
) -> R {
    progress.task("writing", total, crate::progress::Unit::Items("packages"));
    let r = f(&mut |done: u64, _total: u64| progress.position(done));
    progress.done();
    r
}
