//! `opreg generate dockerfile`: opm's command of the same name, with opreg's image as the
//! default base; the text is [`crate::image::dockerfile`]'s.

use super::output;
use crate::image::dockerfile::{self, DockerfileOptions, DEFAULT_IMAGE};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: GenerateCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum GenerateCommand {
    /// Write DIR.Dockerfile beside an FBC directory DIR, as `opm generate dockerfile` does.
    ///
    /// The Dockerfile pre-builds the cache in a builder stage and copies /configs and
    /// /tmp/cache into the base. An existing DIR.Dockerfile is never replaced. A `scratch` base
    /// gets no Entrypoint (binary-less catalogs); the builder cannot be `scratch`. DIR may be `.`
    /// or `..`: the Dockerfile goes beside the directory they name. Label keys and values are
    /// quoted; an empty key, or a control character in a label or an image, is refused.
    ///
    /// Exit codes: 0 written; 1 DIR.Dockerfile exists or cannot be written, or a label or an
    /// image is refused; 2 usage error.
    Dockerfile(DockerfileArgs),
}

#[derive(clap::Args, Debug)]
pub struct DockerfileArgs {
    /// The file-based catalog's root directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Image base to use to build the catalog.
    #[arg(short = 'i', long, default_value = DEFAULT_IMAGE, value_name = "IMAGE")]
    pub base_image: String,
    /// Image to use as a build stage.
    #[arg(short = 'b', long, default_value = DEFAULT_IMAGE, value_name = "IMAGE")]
    pub builder_image: String,
    /// Extra labels, KEY=VALUE (comma-separated or repeated; the last value of a key wins).
    #[arg(short = 'l', long, value_delimiter = ',', value_name = "KEY=VALUE")]
    pub extra_labels: Vec<String>,
}

pub fn run(a: Args) -> super::Ended {
    let GenerateCommand::Dockerfile(d) = a.command;
    let opts = DockerfileOptions {
        dir: d.dir,
        base_image: d.base_image,
        builder_image: d.builder_image,
        extra_labels: d.extra_labels,
    };
    match dockerfile::generate(&opts) {
        Ok(path) => {
            output::status(format_args!("wrote {}", path.display()));
            super::Ended::Done
        }
        Err(e) => crate::error::Error::failed(e).into(),
    }
}
