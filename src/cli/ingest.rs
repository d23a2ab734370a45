//! `opreg ingest`: validate SOURCEs, then write the store atomically ([`crate::ingest`]).

use std::path::PathBuf;

// Help text: the doc comment of `Command::Ingest` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Catalog sources: FBC directories or files, package-manifest or bundle directories,
    /// legacy SQLite indexes, opreg databases, or image references (`registry/repo:tag`,
    /// `oci:DIR:TAG`). Several sources combine into one catalog.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// The database to write (a regular file; a symbolic link's target is replaced).
    #[arg(short, long, value_name = "FILE.db")]
    pub output: PathBuf,
    /// Print nothing but errors (no progress, no warnings).
    #[arg(short, long)]
    pub quiet: bool,
    /// Write a catalog with no packages (refused by default, as a likely mistake).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

pub fn run(a: Args) -> super::Ended {
    let progress = super::progress::reporter(a.quiet);
    let opts = crate::ingest::BuildOptions {
        progress: progress.clone(),
        allow_empty: a.allow_empty,
        digest: None,
    };
    let built = crate::store::check_output(&a.output)
        .map_err(crate::error::Error::from)
        .and_then(|_| crate::load::resolve(&a.sources, &a.image.options(), &progress))
        .and_then(|resolved| crate::ingest::ingest(&resolved, &a.output, &opts));
    match built {
        Ok(b) => {
            super::warnings(&b.warnings, a.quiet);
            if !a.quiet {
                let cat = &b.catalog;
                super::output::status(format_args!(
                    "wrote {}: {} packages, {} bundles, {} channel entries",
                    a.output.display(),
                    cat.packages.len(),
                    cat.bundle_count(),
                    cat.entry_count()
                ));
            }
            super::Ended::Done
        }
        Err(mut e) => {
            if let crate::error::Error::Invalid { errors, .. } = &mut e {
                super::offer_allow_empty(errors);
            }
            match a.quiet {
                true => super::Ended::Failed(quiet_errors(e)),
                false => super::Ended::Failed(e),
            }
        }
    }
}

/// `--quiet` keeps the errors and drops the warnings.
fn quiet_errors(e: crate::error::Error) -> crate::error::Error {
    match e {
        crate::error::Error::Invalid { errors, .. } => crate::error::Error::invalid(errors),
        other => other,
    }
}
