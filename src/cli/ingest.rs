//! `opreg ingest`: validate SOURCEs, then write the store atomically.

use std::path::PathBuf;

/// Validate SOURCEs and write them to a SQLite catalog database.
///
/// The write is atomic: the database is built in a temporary file beside FILE.db, synced, and
/// renamed into place. On any error nothing is written and an existing FILE.db is untouched.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Catalog sources: FBC directories or files, package-manifest or bundle directories,
    /// legacy SQLite indexes, or opreg databases. Several sources combine into one catalog.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// The database to write.
    #[arg(short, long, value_name = "FILE.db")]
    pub output: PathBuf,
    /// Print nothing but errors (no progress, no warnings).
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(a: Args) -> i32 {
    let progress = super::show_progress(a.quiet);
    let cat = match super::load_valid(&a.sources, progress, a.quiet) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let digest = match super::source_digest(&a.sources) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot read sources: {e}");
            return super::EXIT_FAILURE;
        }
    };
    match write(&cat, &a.output, &digest, progress) {
        Ok(()) => {
            if !a.quiet {
                eprintln!(
                    "wrote {}: {} packages, {} bundles, {} channel entries",
                    a.output.display(),
                    cat.packages.len(),
                    cat.bundle_count(),
                    cat.entry_count()
                );
            }
            super::EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            super::EXIT_FAILURE
        }
    }
}

/// Writes with a progress bar when `progress` is set.
pub fn write(
    cat: &crate::model::Catalog,
    output: &std::path::Path,
    digest: &str,
    progress: bool,
) -> anyhow::Result<()> {
    let bar = progress.then(|| {
        let pb = indicatif::ProgressBar::new(cat.packages.len() as u64);
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
    let r = crate::store::write_catalog(cat, output, digest, &mut tick);
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    r
}
