//! `opreg render`: write SOURCEs as FBC to stdout.

use crate::catalog::fbc::{self, RenderFormat};
use std::io::Write;
use std::path::PathBuf;

/// Write the catalog read from SOURCEs as a file-based catalog on stdout.
///
/// The output is stable: rendering it, ingesting it and rendering again gives the same bytes.
/// JSON output is one object per line; YAML output is a `---`-separated stream.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    #[arg(short = 'o', long, value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
}

pub fn run(a: Args) -> i32 {
    let cat = match super::load_valid(&a.sources, false, false) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match fbc::render(&cat, a.output_format, &mut out).and_then(|_| out.flush()) {
        Ok(()) => super::EXIT_OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => super::EXIT_OK,
        Err(e) => {
            eprintln!("error: writing output: {e}");
            super::EXIT_FAILURE
        }
    }
}
