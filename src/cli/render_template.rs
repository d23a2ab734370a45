//! `opreg render-template basic|semver FILE`: expand a catalog template into FBC, as
//! `opm alpha render-template` does ([`crate::authoring::render_template`]), and write the
//! result.

use crate::catalog::fbc::{self, RenderFormat};
use crate::image::opm::MigrateLevel;
use crate::template::Kind;
use std::io::Write;
use std::path::PathBuf;

// Help text: the doc comment of `Command::RenderTemplate` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 rendered; 1 the template or a bundle could not be read or rendered; 2 usage error (for example an unknown template kind)."
)]
pub struct Args {
    /// The template kind.
    #[arg(value_enum)]
    pub kind: Kind,
    /// The template file (YAML or JSON); `-` or none reads standard input, as opm does.
    #[arg(value_name = "FILE", default_value = "-")]
    pub file: PathBuf,
    #[arg(short = 'o', long, value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
    /// Read image references REPOSITORY:TAG from the bundle directory DIR/TAG instead of pulling them.
    #[arg(long, value_name = "DIR")]
    pub bundles_dir: Option<PathBuf>,
    /// The last of opm's migrations to run on the rendered bundles.
    #[arg(long, value_enum, default_value_t = MigrateLevel::None)]
    pub migrate_level: MigrateLevel,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

pub fn run(a: Args) -> i32 {
    let opts = crate::authoring::TemplateOptions {
        kind: a.kind,
        file: a.file,
        bundles_dir: a.bundles_dir,
        migrate_level: a.migrate_level,
        image: a.image,
    };
    let cat = match crate::authoring::render_template(&opts) {
        Ok(c) => c,
        Err(e) => return super::fail(e),
    };
    let written = super::output::write_out(|out| {
        let mut out = std::io::BufWriter::new(out);
        fbc::render(&cat, a.output_format, &mut out)?;
        out.flush()
    });
    match written {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            super::output::error(format_args!("writing output: {e}"));
            super::EXIT_FAILURE
        }
    }
}
