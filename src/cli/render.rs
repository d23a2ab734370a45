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
    let resolved = match crate::cli::resolve_or_exit(&a.sources, &a.image, false) {
        Ok(r) => r,
        Err(code) => return code,
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
        let cat = match load_any(&resolved, i..j) {
            Ok(c) => c,
            Err(code) => return code,
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

/// Reads SOURCEs `range` into a catalog whether or not it is valid, printing its problems as
/// warnings; a file that could not be parsed is an error (the exit code).
fn load_any(
    resolved: &crate::image::Resolved,
    range: std::ops::Range<usize>,
) -> Result<crate::model::Catalog, i32> {
    use crate::diag::{Rule, Severity};
    let c = super::load::load_checked(
        &resolved.paths[range],
        resolved,
        false,
        true,
        &mut |b, _| resolved.finish_bundle(b),
    );
    let unreadable: Vec<_> = c.errors.iter().filter(|d| d.rule == Rule::Parse).collect();
    if !unreadable.is_empty() {
        unreadable.iter().for_each(|d| super::output::diagnostic(d));
        super::output::status(format_args!(
            "{} file(s) could not be parsed; nothing rendered",
            unreadable.len()
        ));
        return Err(super::EXIT_FAILURE);
    }
    c.warnings.iter().for_each(super::output::diagnostic);
    for e in &c.errors {
        super::output::diagnostic(&crate::diag::Diagnostic {
            severity: Severity::Warning,
            ..e.clone()
        });
    }
    if !c.errors.is_empty() {
        super::output::warning(format_args!(
            "rendered an invalid catalog ({} problem(s) above); `opreg validate` must pass before it can be served",
            c.errors.len()
        ));
    }
    Ok(match c.result {
        Ok(valid) => valid.into_inner(),
        Err(cat) => cat,
    })
}
