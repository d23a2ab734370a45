//! `opreg render-template [TYPE] [FILE]`: expand a catalog template into FBC, as
//! `opm alpha render-template` does ([`crate::authoring::render_template`]), and write the
//! result. Without TYPE, the kind is the one the file's `schema` names; one argument is a
//! TYPE when it is a kind's name (the template is then read from standard input), else FILE,
//! as opm reads it.

use crate::catalog::fbc::{self, RenderFormat};
use crate::image::opm::MigrateLevel;
use crate::template::Kind;
use std::path::PathBuf;

// Help text: the doc comment of `Command::RenderTemplate` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg render-template semver catalog-templates/semver.yaml\n  \
    opreg render-template catalog-templates/basic.yaml    # the kind from the file's schema\n  \
    opreg render-template < template.yaml                 # from standard input\n  \
    opreg render-template semver t.yaml -o mermaid        # the channels as a Mermaid graph\n\n\
    Exit codes: 0 rendered; 1 the template or a bundle could not be read or rendered, its schema names no known kind, or (-o mermaid) a bundle has no readable version; 2 usage error (for example an unknown TYPE before a FILE).")]
pub struct Args {
    /// The template kind (basic, semver or substitutes), or, alone, the template FILE. Without
    /// a kind, the kind is the one the template's `schema` names (olm.template.basic,
    /// olm.semver, olm.template.substitutes). A lone argument that is a kind's name is the kind,
    /// and the template is read from standard input (write `./basic` for a file of that name).
    #[arg(value_name = "TYPE")]
    pub first: Option<String>,
    /// The template file (YAML or JSON); `-` or none reads standard input, as opm does.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// json or yaml: the rendered catalog as FBC. mermaid: its channels as opm's Mermaid graph
    /// (every package; skipped and deprecated bundles marked).
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Json)]
    pub output_format: Output,
    /// Read image references REPOSITORY:TAG from the bundle directory DIR/TAG instead of pulling them.
    #[arg(long, value_name = "DIR")]
    pub bundles_dir: Option<PathBuf>,
    /// The last of opm's migrations to run on the rendered bundles.
    #[arg(long, value_enum, default_value_t = MigrateLevel::None)]
    pub migrate_level: MigrateLevel,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

/// What `-o` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Json,
    Yaml,
    Mermaid,
}

/// The kind and the file from the one or two positional arguments, as opm reads them.
fn kind_and_file(
    first: Option<String>,
    file: Option<PathBuf>,
) -> Result<(Option<Kind>, PathBuf), crate::error::Error> {
    let stdin = || PathBuf::from("-");
    match (first, file) {
        (None, _) => Ok((None, stdin())),
        (Some(one), None) => Ok(match Kind::from_name(&one) {
            Some(k) => (Some(k), stdin()),
            None => (None, PathBuf::from(one)),
        }),
        (Some(kind), Some(file)) => match Kind::from_name(&kind) {
            Some(k) => Ok((Some(k), file)),
            None => Err(crate::error::Error::Usage(format!(
                "invalid template type {}, must be one of: {}",
                crate::text::go_quote(&kind),
                Kind::ALL.map(Kind::name).join(", ")
            ))),
        },
    }
}

pub fn run(a: Args) -> super::Ended {
    let (kind, file) = match kind_and_file(a.first, a.file) {
        Ok(kf) => kf,
        Err(e) => return super::Ended::Failed(e),
    };
    let opts = crate::authoring::TemplateOptions {
        kind,
        file,
        bundles_dir: a.bundles_dir,
        migrate_level: a.migrate_level,
        image: a.image.options(),
    };
    let cat = match crate::authoring::render_template(&opts) {
        Ok(c) => c,
        Err(e) => return super::Ended::Failed(e),
    };
    let format = match a.output_format {
        Output::Json => RenderFormat::Json,
        Output::Yaml => RenderFormat::Yaml,
        Output::Mermaid => return mermaid(crate::draw::opm_channels(&cat)),
    };
    super::output::write_or_fail(|out| fbc::render(&cat, format, out))
}

/// The channels as opm's Mermaid graph; its warnings first, as opm writes them.
fn mermaid(drawn: Result<crate::draw::Drawing, crate::draw::DrawError>) -> super::Ended {
    let drawing = match drawn {
        Ok(d) => d,
        Err(e) => {
            return super::Ended::Failed(crate::error::Error::failed(format!(
                "drawing the channels: {e}"
            )))
        }
    };
    for n in &drawing.notes {
        match n {
            crate::draw::Note::Warning(w) => super::output::warning(w),
            crate::draw::Note::Status(s) => super::output::status(s),
        }
    }
    super::output::write_or_fail(|out| out.write_all(drawing.text.as_bytes()))
}
