//! `opreg migrate SOURCE OUTDIR`: write a catalog through opm's migrations, one directory per
//! package, as `opm migrate` does ([`crate::authoring::migrate::migrate`]).

use crate::authoring::migrate::{migrate, MigrateOptions};
use crate::catalog::fbc::RenderFormat;
use crate::image::opm::MigrateLevel;
use std::path::PathBuf;

// Help text: the doc comment of `Command::Migrate` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg migrate quay.io/operatorhubio/catalog:latest catalog/ --migrate-level bundle-object-to-csv-metadata\n  \
    opreg migrate old-catalog/ new-catalog/ -o yaml\n\n\
    Exit codes: 0 written; 1 OUTDIR is not empty, SOURCE is a bundle, or the catalog could not be read or written; 2 usage error.")]
pub struct Args {
    /// The catalog: a file-based catalog directory or a catalog image.
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
    /// The directory to write; it must be missing or empty.
    #[arg(value_name = "OUTDIR")]
    pub out_dir: PathBuf,
    /// Output format of each package's file (catalog.json or catalog.yaml).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
    /// The last of opm's migrations to run.
    #[arg(long, value_enum, default_value_t = MigrateLevel::None)]
    pub migrate_level: MigrateLevel,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

pub fn run(a: Args) -> super::Ended {
    let opts = MigrateOptions {
        source: a.source,
        out_dir: a.out_dir,
        migrate_level: a.migrate_level,
        format: a.output_format,
        image: a.image.options(),
    };
    match migrate(&opts) {
        Ok(problems) => {
            problems.iter().for_each(super::output::diagnostic);
            super::output::status(format_args!(
                "wrote the file-based catalog to {}",
                opts.out_dir.display()
            ));
            super::Ended::Done
        }
        Err(e) => super::Ended::Failed(e),
    }
}
