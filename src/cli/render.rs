//! `opreg render`: write SOURCEs as FBC to stdout. Like `opm render`, it does not refuse an
//! invalid catalog: authors render a broken tree to fix it in FBC. Every problem validation
//! finds is printed as a warning; only a file that cannot be read or parsed stops it.

use crate::catalog::fbc::{self, RenderFormat};
use crate::image::opm::MigrateLevel;
use std::io::Write;
use std::path::PathBuf;

// Help text: the doc comment of `Command::Render` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    #[arg(short = 'o', long, value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
    /// The last of opm's migrations to run on the rendered bundles.
    #[arg(long, value_enum, default_value_t = MigrateLevel::None)]
    pub migrate_level: MigrateLevel,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

pub fn run(a: Args) -> i32 {
    let resolved = match crate::load::resolve(&a.sources, &a.image, false) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // As opm does, each bundle image is rendered on its own, as one olm.bundle; runs of other
    // SOURCEs are read together as one catalog. Output follows the order of SOURCEs.
    let mut i = 0;
    while i < resolved.paths.len() {
        let bundle_image = resolved.images[i]
            .as_ref()
            .is_some_and(|img| matches!(img.kind, crate::image::kind::ImageKind::Bundle { .. }));
        let mut j = i + 1;
        while !bundle_image
            && j < resolved.paths.len()
            && !resolved.images[j]
                .as_ref()
                .is_some_and(|img| matches!(img.kind, crate::image::kind::ImageKind::Bundle { .. }))
        {
            j += 1;
        }
        let cat = match crate::load::as_read(&resolved, i..j) {
            Ok(read) => {
                report_problems(&read.problems);
                read.catalog
            }
            Err(e) => return super::fail(e),
        };
        // Rendering writes what was read; the migration changes only how bundles are written.
        let mut cat = cat;
        crate::image::opm::migrate(&mut cat, a.migrate_level);
        let written = if bundle_image {
            cat.packages
                .values()
                .flat_map(|p| p.bundles.values())
                .try_for_each(|b| fbc::render_bundle(b, a.output_format, &mut out))
        } else {
            fbc::render(&cat, a.output_format, &mut out)
        };
        if let Err(e) = written.and_then(|_| out.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return super::EXIT_OK;
            }
            super::output::error(format_args!("writing output: {e}"));
            return super::EXIT_FAILURE;
        }
        i = j;
    }
    super::EXIT_OK
}

/// Every problem of a catalog rendered anyway, as a warning, and a note that it is invalid.
fn report_problems(problems: &[crate::diag::Diagnostic]) {
    use crate::diag::Severity;
    let mut invalid = 0;
    for d in problems {
        if d.severity == Severity::Error {
            invalid += 1;
        }
        super::output::diagnostic(&crate::diag::Diagnostic {
            severity: Severity::Warning,
            ..d.clone()
        });
    }
    if invalid > 0 {
        super::output::warning(format_args!(
            "rendered an invalid catalog ({invalid} problem(s) above); `opreg validate` must pass before it can be served"
        ));
    }
}
