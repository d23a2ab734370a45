//! `opreg render`: write SOURCEs as FBC to stdout. Like `opm render`, it does not refuse an
//! invalid catalog: authors render a broken tree to fix it in FBC. Every problem validation
//! finds is printed as a warning; only a file that cannot be read or parsed stops it.

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
    let resolved = match crate::load::resolve(
        &a.sources,
        &a.image.options(),
        &super::progress::reporter(false),
    ) {
        Ok(r) => r,
        Err(e) => return super::Ended::Failed(e),
    };
    let migrate_level = if a.migrate {
        MigrateLevel::BundleObjectToCsvMetadata
    } else {
        a.migrate_level
    };
    // As opm does, each bundle image and bundle directory is rendered on its own, as one
    // olm.bundle; runs of other SOURCEs are read together as one catalog. Everything is then
    // written together, in opm's order.
    let lone = |i: usize| {
        resolved.images[i]
            .as_ref()
            .is_some_and(|img| matches!(img.kind, crate::image::kind::ImageKind::Bundle { .. }))
            || crate::catalog::manifests::is_bundle_dir(&resolved.paths[i])
    };
    let (mut catalogs, mut bundles) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < resolved.paths.len() {
        let bundle_image = lone(i);
        let mut j = i + 1;
        while !bundle_image && j < resolved.paths.len() && !lone(j) {
            j += 1;
        }
        let cat = match crate::load::as_read(&resolved, i..j) {
            Ok(read) => {
                report_problems(&read.problems);
                read.catalog
            }
            Err(e) => return super::Ended::Failed(e),
        };
        // Rendering writes what was read; the migration changes only how bundles are written.
        let mut cat = cat;
        if bundle_image {
            for p in cat.packages.values_mut() {
                for mut b in std::mem::take(&mut p.bundles).into_values() {
                    if let (Some(t), true) = (&a.alpha_image_ref_template, b.image.is_empty()) {
                        t.apply(&mut b);
                    }
                    bundles.push(b);
                }
            }
        }
        crate::image::opm::migrate(&mut cat, migrate_level);
        if !bundle_image {
            catalogs.push(cat);
        }
        i = j;
    }
    if migrate_level != MigrateLevel::None {
        bundles
            .iter_mut()
            .for_each(crate::image::opm::bundle_object_to_csv_metadata);
    }
    super::output::write_or_fail(|out| {
        fbc::render_all(
            &catalogs.iter().collect::<Vec<_>>(),
            &bundles.iter().collect::<Vec<_>>(),
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
