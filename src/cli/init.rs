//! `opreg init PACKAGE`: write an `olm.package` blob, as `opm init` does
//! ([`crate::authoring::init::init`]).

use crate::authoring::init::{init, InitOptions};
use crate::catalog::fbc::{self, RenderFormat};
use std::path::PathBuf;

// Help text: the doc comment of `Command::Init` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg init etcd --default-channel stable --icon etcd.svg --description README.md\n  \
    opreg init etcd -c stable -o yaml > catalog/etcd/package.yaml\n\n\
    Exit codes: 0 written; 1 the icon or description could not be read, or the icon is not an image; 2 usage error.")]
pub struct Args {
    /// The package name.
    #[arg(value_name = "PACKAGE")]
    pub package: String,
    /// The channel that subscriptions default to when they name none.
    #[arg(short = 'c', long, default_value = "", value_name = "CHANNEL")]
    pub default_channel: String,
    /// The package's icon (an image file; its type is detected from its bytes).
    #[arg(short = 'i', long, value_name = "FILE")]
    pub icon: Option<PathBuf>,
    /// The package's description (for example the operator's README.md).
    #[arg(short = 'd', long, value_name = "FILE")]
    pub description: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
}

pub fn run(a: Args) -> super::Ended {
    let opts = InitOptions {
        package: a.package,
        default_channel: a.default_channel,
        icon: a.icon,
        description: a.description,
    };
    match init(&opts) {
        Ok(cat) => super::output::write_or_fail(|out| fbc::render(&cat, a.output_format, out)),
        Err(e) => super::Ended::Failed(e),
    }
}
