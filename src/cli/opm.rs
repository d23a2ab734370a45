//! `opm` compatibility: under the name `opm` (the container image links `/bin/opm` to opreg,
//! as catalog images built for opm run it), the binary takes `opm serve <dir>` with opm's flags
//! and refuses every other opm subcommand with a usage error.

use crate::error::Error;
use std::path::PathBuf;

/// The `opm` entry point: `opm serve <dir> [--cache-dir] [--cache-only] [--cache-enforce-integrity] [-p] [-t]`.
pub fn run_opm_compat(args: &[std::ffi::OsString]) -> super::Ended {
    use std::ffi::OsString;
    #[derive(clap::Parser, Debug)]
    #[command(
        name = "opm",
        about = "opreg's opm-compatible entry point: only `opm serve` is available"
    )]
    struct Opm {
        #[command(subcommand)]
        cmd: OpmCmd,
    }
    #[derive(clap::Subcommand, Debug)]
    #[allow(clippy::large_enum_variant)] // parsed once at start-up
    enum OpmCmd {
        /// Serve a file-based catalog (opreg implementation).
        Serve {
            #[command(flatten)]
            args: Box<super::serve::Args>,
            /// More SOURCEs: refused, as opm takes exactly one.
            #[arg(hide = true, value_name = "EXTRA")]
            extra: Vec<PathBuf>,
        },
        #[command(external_subcommand)]
        Other(Vec<OsString>),
    }
    let mut argv = vec![std::ffi::OsString::from("opm")];
    argv.extend(args.iter().cloned());
    match <Opm as clap::Parser>::try_parse_from(argv) {
        Ok(Opm {
            cmd: OpmCmd::Serve {
                mut args, extra, ..
            },
        }) => {
            // As opm's `serve <source_path>`: exactly one argument, in cobra's words.
            let n = usize::from(args.source.is_some()) + extra.len();
            if n != 1 {
                return Error::Usage(format!("accepts 1 arg(s), received {n}")).into();
            }
            // opm serves an empty catalog.
            args.allow_empty = true;
            super::init_logging(super::LogFormat::Text, args.debug);
            super::serve::run(*args)
        }
        Ok(Opm {
            cmd: OpmCmd::Other(rest),
        }) => {
            let name = rest
                .first()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            Error::Usage(format!("`opm {name}` is not available: this image runs opreg, which implements only `opm serve`")).into()
        }
        Err(e) => super::Ended::Parse(e),
    }
}
