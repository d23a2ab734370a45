//! `opreg graph`: draw a package's update graph ([`crate::draw`]).

use crate::draw::{draw, Format, Note, Options, MERMAID_LIMIT};
use std::path::PathBuf;

// Help text: the doc comment of `Command::Graph` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg graph manifests/etcd --package etcd --channel alpha\n  \
    opreg graph catalog.db -p etcd -f dot --from etcdoperator.v0.6.1 | dot -Tsvg > etcd.svg")]
pub struct Args {
    /// Catalog sources: a built opreg database, or anything `opreg ingest` accepts.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Package to draw.
    #[arg(short, long)]
    pub package: String,
    /// Draw only this channel (all channels when absent).
    #[arg(short, long)]
    pub channel: Option<String>,
    /// Leave out bundles whose version is below VERSION, and their edges (opm's
    /// --minimum-edge).
    #[arg(long, value_name = "VERSION")]
    pub since: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Mermaid)]
    pub format: Format,
    /// Highlight the classic and OLM v1 upgrade paths from this bundle (a bundle name, a version
    /// of the package, or NAME@VERSION).
    #[arg(long, value_name = "VERSION")]
    pub from: Option<String>,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

pub fn run(a: Args) -> super::Ended {
    let loaded = match crate::load::sources(&a.sources, &a.image.options(), &Default::default()) {
        Ok(l) => l,
        Err(e) => return super::Ended::Failed(e),
    };
    super::warnings(&loaded.warnings, false);
    let cat = loaded.catalog;
    let opts = Options {
        channel: a.channel.as_deref(),
        since: a.since.as_deref(),
        from: a.from.as_deref(),
    };
    match draw(&cat, &a.package, a.format, &opts) {
        Ok(drawing) => {
            for n in &drawing.notes {
                match n {
                    Note::Warning(w) => super::output::warning(w),
                    Note::Status(s) => super::output::status(s),
                }
            }
            let text = drawing.text;
            if a.format == Format::Mermaid && text.chars().count() > MERMAID_LIMIT {
                super::output::warning(format_args!(
                    "the Mermaid text is {} characters, above GitHub's {MERMAID_LIMIT}-character limit for a diagram; narrow it with --channel or --since, or use -f dot",
                    text.chars().count()
                ));
            }
            match super::output::out(&text) {
                Ok(()) => super::Ended::Done,
                Err(e) => crate::error::Error::failed(format_args!("writing output: {e}")).into(),
            }
        }
        Err(e) => crate::error::Error::failed(e).into(),
    }
}
