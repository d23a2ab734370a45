//! `opreg convert-template basic|substitutes [FILE]`: write a catalog template from an
//! existing FBC file, as `opm alpha convert-template` does ([`crate::template::convert`]).

use crate::catalog::fbc::RenderFormat;
use crate::template::Kind;
use std::path::PathBuf;

// Help text: the doc comment of `Command::ConvertTemplate` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg convert-template basic catalog/etcd/catalog.json > etcd-template.json\n  \
    opreg render catalog/ | opreg convert-template substitutes -o yaml\n\n\
    Exit codes: 0 written; 1 the FBC could not be read or parsed; 2 usage error.")]
pub struct Args {
    /// The kind of template to write.
    #[arg(value_name = "TYPE", value_parser = ["basic", "substitutes"])]
    pub kind: String,
    /// An FBC file (a JSON or YAML stream, as `opreg render` writes); `-` or none reads
    /// standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub file: PathBuf,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
}

pub fn run(a: Args) -> super::Ended {
    let Some(kind) = Kind::from_name(&a.kind) else {
        return super::Ended::Failed(crate::error::Error::Usage(format!(
            "unknown template type {:?}",
            a.kind
        )));
    };
    match crate::authoring::convert_template(kind, &a.file, a.output_format) {
        Ok(text) => super::output::write_or_fail(|out| out.write_all(text.as_bytes())),
        Err(e) => super::Ended::Failed(e),
    }
}
