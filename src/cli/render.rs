//! `opreg render`: write SOURCEs as FBC to stdout. Like `opm render`, it does not refuse an
//! invalid catalog: authors render a broken tree to fix it in FBC. Every problem validation
//! finds is printed as a warning; only a file that cannot be read or parsed stops it. The work
//! is [`crate::authoring::render`]'s.

use crate::authoring::render::{render, RenderOptions};
use crate::catalog::fbc::{self, RenderFormat};
use crate::image::opm::MigrateLevel;
use std::path::PathBuf;

// Help text: the doc comment of `Command::Render` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Output format of the streamed FBC objects.
    #[arg(short = 'o', long = "output", visible_alias = "output-format", value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
    /// The last of opm's migrations to run on the rendered bundles.
    #[arg(long, value_enum, default_value_t = MigrateLevel::None, conflicts_with = "migrate")]
    pub migrate_level: MigrateLevel,
    /// Run every migration opm knows (the same as `--migrate-level bundle-object-to-csv-metadata`).
    #[arg(long)]
    pub migrate: bool,
    /// Name the image of bundles read from bundle directories with this Go template
    /// ({{.Package}}, {{.Name}}, {{.Version}}).
    #[arg(long, value_name = "TEMPLATE")]
    pub alpha_image_ref_template: Option<crate::image::opm::ImageRefTemplate>,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

pub fn run(a: Args) -> super::Ended {
    let opts = RenderOptions {
        sources: a.sources,
        migrate_level: if a.migrate {
            MigrateLevel::BundleObjectToCsvMetadata
        } else {
            a.migrate_level
        },
        image_ref_template: a.alpha_image_ref_template,
        image: a.image.options(),
        progress: super::progress::reporter(false),
    };
    let rendered = match render(&opts, &mut report_problems) {
        Ok(r) => r,
        Err(e) => return e.into(),
    };
    super::output::write_or_fail(|out| {
        fbc::render_all(
            &rendered.catalogs.iter().collect::<Vec<_>>(),
            &rendered.bundles.iter().collect::<Vec<_>>(),
            a.output_format,
            out,
        )
    })
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
