//! `opreg ingest`: validate SOURCEs, then write the store atomically.

use crate::diag::Diagnostic;
use crate::model::Bundle;
use crate::store;
use std::path::{Path, PathBuf};

// Help text: the doc comment of `Command::Ingest` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Catalog sources: FBC directories or files, package-manifest or bundle directories,
    /// legacy SQLite indexes, opreg databases, or image references (`registry/repo:tag`,
    /// `oci:DIR:TAG`). Several sources combine into one catalog.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// The database to write.
    #[arg(short, long, value_name = "FILE.db")]
    pub output: PathBuf,
    /// Print nothing but errors (no progress, no warnings).
    #[arg(short, long)]
    pub quiet: bool,
    /// Write a catalog with no packages (refused by default, as a likely mistake).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

pub fn run(a: Args) -> i32 {
    if let Err(e) = store::check_output(&a.output) {
        super::output::error(e);
        return super::EXIT_FAILURE;
    }
    let progress = super::show_progress(a.quiet);
    let resolved = match crate::cli::resolve_or_exit(&a.sources, &a.image, a.quiet) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match ingest_resolved(&resolved, &a.output, progress, a.quiet, a.allow_empty) {
        Ok(cat) => {
            if !a.quiet {
                super::output::status(format_args!(
                    "wrote {}: {} packages, {} bundles, {} channel entries",
                    a.output.display(),
                    cat.packages.len(),
                    cat.bundle_count(),
                    cat.entry_count()
                ));
            }
            super::EXIT_OK
        }
        Err(code) => code,
    }
}

/// Reads, validates and stores SOURCEs in one streaming pass, on three threads:
/// - this one parses and validates, handing each bundle to the writer as soon as it is read
///   and keeping only a light copy ([`crate::validate::bundle_rules_then_lighten`]), so memory stays far below the size
///   of the catalog;
/// - the writer puts the bundles' rows into the new database as they arrive;
/// - a third hashes the sources for the database's `source_digest`.
///
/// Once the catalog is known to be valid, the rest is written and the file moved into place.
/// On any error the temp file is deleted and `output` is untouched. Errors are printed here;
/// the result is the exit code.
pub fn ingest(
    sources: &[PathBuf],
    output: &Path,
    progress: bool,
    quiet: bool,
) -> Result<crate::validate::ValidCatalog, i32> {
    ingest_resolved(
        &crate::image::Resolved::local(sources),
        output,
        progress,
        quiet,
        true,
    )
}

/// [`ingest`] of SOURCEs some of which were images: bundles from bundle images are finished as
/// `opm render` does, and the images' digests are recorded in the catalog info (`images`).
pub fn ingest_resolved(
    resolved: &crate::image::Resolved,
    output: &Path,
    progress: bool,
    quiet: bool,
    allow_empty: bool,
) -> Result<crate::validate::ValidCatalog, i32> {
    let sources = &resolved.paths[..];
    let fail = |e: anyhow::Error| {
        super::output::error(format_args!("{e:#}"));
        super::EXIT_FAILURE
    };
    crate::memory::for_ingest();
    let started = std::time::Instant::now();
    let builder = store::Builder::create(output).map_err(fail)?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Bundle>(64);
    let (loaded, written, digest) = std::thread::scope(|s| {
        let digest = s.spawn(|| super::source_digest(sources));
        let writer = s.spawn(move || -> anyhow::Result<store::Builder> {
            let mut builder = builder;
            for b in rx {
                builder.add_bundle(&b)?;
            }
            builder.analyze_bundle_tables()?;
            Ok(builder)
        });
        let mut sink = |b: Bundle, diags: &mut Vec<Diagnostic>| {
            let b = resolved.finish_bundle(b);
            let light = crate::validate::bundle_rules_then_lighten(&b, diags);
            // If the writer has stopped, its error is reported below.
            let _ = tx.send(b);
            light
        };
        let loaded = super::load::load_valid_opts(
            sources,
            resolved,
            progress,
            quiet,
            allow_empty,
            &mut sink,
        );
        drop(tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the database writer failed")));
        let digest = digest
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("computing the source digest failed")));
        (loaded, written, digest)
    });
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "sources read, bundles stored, catalog validated"
    );
    let cat = loaded?;
    let builder = written.map_err(fail)?;
    let digest = digest.map_err(|e| fail(anyhow::anyhow!("cannot read sources: {e}")))?;
    if let Some(images) = resolved.catalog_info() {
        builder.set_info("images", &images).map_err(fail)?;
    }
    with_bar(cat.packages.len() as u64, progress, |tick| {
        builder.finish(&cat, &digest, tick)
    })
    .map_err(fail)?;
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "database written and moved into place"
    );
    Ok(cat)
}

/// Runs `f` with a progress callback that drives a "writing" bar when `progress` is set.
fn with_bar<R>(total: u64, progress: bool, f: impl FnOnce(&mut dyn FnMut(u64, u64)) -> R) -> R {
    let bar = progress.then(|| {
        let pb = indicatif::ProgressBar::new(total);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "writing {bar:30} {pos}/{len} packages [{elapsed}]",
            )
            .expect("static template"),
        );
        pb
    });
    let mut tick = |done: u64, _total: u64| {
        if let Some(pb) = &bar {
            pb.set_position(done);
        }
    };
    let r = f(&mut tick);
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    r
}
