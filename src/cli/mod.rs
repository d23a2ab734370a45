//! The command line: one file per subcommand, sharing source loading and diagnostics output.
//!
//! Exit codes are stable: 0 success, 1 an invalid catalog or a failure at run time, 2 a usage
//! error (unknown flag, missing argument). `validate` documents its own meaning of 1.

pub mod completions;
pub mod diff;
pub mod graph;
pub mod health_probe;
pub mod ingest;
pub mod list;
pub mod load;
pub mod log_sink;
pub mod opm;
pub mod output;
pub mod poll;
pub mod reload;
pub mod render;
pub mod render_template;
pub mod serve;
pub mod upgrade;
pub mod validate;

use crate::validate::ValidCatalog;
use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "opreg",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("OPREG_GIT_COMMIT"), ")"),
    about = "Operator catalog registry: ingest, validate, store and serve OLM catalogs",
    long_about = "opreg reads operator catalogs (file-based catalogs, bundle directories, package-manifest \
directories, legacy SQLite indexes), validates their upgrade graphs, stores them in SQLite with every \
update edge materialized, and serves the gRPC API OLM speaks (api.Registry), as a drop-in for `opm serve`.\n\n\
Run `opreg serve` with no arguments to serve an embedded demo catalog on port 50051.",
    after_help = "Exit codes: 0 success; 1 invalid catalog or runtime failure; 2 usage error."
)]
pub struct Cli {
    /// Log format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Ingest(ingest::Args),
    Validate(validate::Args),
    Render(render::Args),
    RenderTemplate(render_template::Args),
    Serve(serve::Args),
    Upgrade(upgrade::Args),
    Graph(graph::Args),
    List(list::Args),
    Diff(diff::Args),
    Completions(completions::Args),
    Man(completions::ManArgs),
    HealthProbe(health_probe::Args),
}

/// Runs the CLI on `argv`; returns the process exit code.
pub fn run(argv: Vec<std::ffi::OsString>) -> i32 {
    let program = argv
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    // Installed under the names OLM and catalog images use, the binary speaks their dialects.
    if program == "grpc_health_probe" {
        return health_probe::run_go_style(&argv[1..]);
    }
    if program == "opm" {
        return opm::run_opm_compat(&argv[1..]);
    }
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    dispatch(cli)
}

pub fn dispatch(cli: Cli) -> i32 {
    let debug = matches!(&cli.command, Command::Serve(a) if a.debug);
    init_logging(cli.log_format, debug);
    match cli.command {
        Command::Ingest(a) => ingest::run(a),
        Command::Validate(a) => validate::run(a),
        Command::Render(a) => render::run(a),
        Command::RenderTemplate(a) => render_template::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Upgrade(a) => upgrade::run(a),
        Command::Graph(a) => graph::run(a),
        Command::List(a) => list::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => completions::run_man(a),
        Command::HealthProbe(a) => health_probe::run(a),
    }
}

pub fn init_logging(format: LogFormat, debug: bool) {
    use tracing_subscriber::EnvFilter;
    let mut filter = EnvFilter::try_from_env("OPREG_LOG").unwrap_or_else(|_| {
        EnvFilter::new(if debug {
            "opreg=debug,info,rusqlite_migration=warn"
        } else {
            "info,rusqlite_migration=warn"
        })
    });
    // The registry client's HTTP stack dumps headers and bodies at debug and trace level
    // (Authorization headers, token answers): capped whatever OPREG_LOG asks, so no level of
    // logging ever shows a credential.
    for quiet in ["ureq=info", "ureq_proto=info", "rustls=info"] {
        if let Ok(d) = quiet.parse() {
            filter = filter.add_directive(d);
        }
    }
    // Colours only on a terminal: a pod's log or a CI log gets plain text.
    output::set_json(format == LogFormat::Json);
    // A closed stderr must not turn into a panic (tracing reports its own write errors with
    // eprintln!, which panics).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(log_sink::Sink)
        .log_internal_errors(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// True when progress should be drawn: stderr is a terminal and the user did not ask for quiet.
pub fn show_progress(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// Reads and validates SOURCEs, printing every diagnostic to stderr. `Err` carries the exit code.
pub fn load_valid(sources: &[PathBuf], progress: bool, quiet: bool) -> Result<ValidCatalog, i32> {
    load_valid_with(
        sources,
        &crate::image::Resolved::default(),
        progress,
        quiet,
        &mut |b, _| b,
    )
}

/// [`load_valid`], handing each bundle to `sink` as it is read and naming files unpacked from
/// `images` by their image ([`crate::source::load_sources_with`]). An empty catalog is
/// accepted here; commands that refuse one unless `--allow-empty` use
/// [`load::load_valid_opts`].
pub fn load_valid_with(
    sources: &[PathBuf],
    images: &crate::image::Resolved,
    progress: bool,
    quiet: bool,
    sink: &mut crate::catalog::BundleSink<'_>,
) -> Result<ValidCatalog, i32> {
    load::load_valid_opts(sources, images, progress, quiet, true, sink)
}

/// A digest of SOURCEs' contents: paths, sizes and bytes of every file, plus this opreg's
/// version and schema, so a cache built by another opreg or from other content never matches.
pub fn source_digest(sources: &[PathBuf]) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(crate::store::schema_version().to_le_bytes());
    for src in sources {
        let mut files: Vec<PathBuf> = walkdir::WalkDir::new(src)
            .follow_links(true)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .collect();
        files.sort();
        for f in files {
            let rel = f.strip_prefix(src).unwrap_or(&f);
            h.update(rel.to_string_lossy().as_bytes());
            h.update([0]);
            // Streamed: a catalog file is never held in memory whole.
            let mut file = std::fs::File::open(&f)?;
            h.update(file.metadata()?.len().to_le_bytes());
            std::io::copy(&mut file, &mut h)?;
        }
    }
    Ok(format!("sha256:{:x}", h.finalize()))
}

/// [`crate::image::resolve`] for the CLI: prints the one-line error and returns the exit code on failure.
pub fn resolve_or_exit(
    sources: &[PathBuf],
    args: &crate::image::ImageArgs,
    quiet: bool,
) -> Result<crate::image::Resolved, i32> {
    crate::image::resolve(sources, args, show_progress(quiet)).map_err(|e| {
        output::error(crate::image::one_line(&e));
        EXIT_FAILURE
    })
}
