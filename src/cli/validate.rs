//! `opreg validate`: the ingest checks, writing nothing.

use std::path::PathBuf;

/// Check SOURCEs against the catalog rules and report every problem. Writes nothing.
///
/// Exit codes: 0 valid (warnings may be printed), 1 invalid, 2 usage error.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Also lint upgrade graphs that classic OLM and OLM v1 resolve differently (warnings).
    #[arg(long)]
    pub upgrades: bool,
    /// Print only errors.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

pub fn run(a: Args) -> i32 {
    let resolved = match crate::image::resolve_or_exit(&a.sources, &a.image, a.quiet) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let progress = super::show_progress(a.quiet);
    match super::load_valid_with(&resolved.paths, progress, a.quiet, &mut |b, _| {
        resolved.finish_bundle(b)
    }) {
        Ok(cat) => {
            if a.upgrades && !a.quiet {
                for w in crate::validate::upgrade_lint::lint(&cat) {
                    super::output::diagnostic(&w);
                }
            }
            if !a.quiet {
                super::output::status(format_args!(
                    "valid: {} packages, {} bundles, {} channel entries",
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
