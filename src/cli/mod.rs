//! The command line: one file per subcommand, sharing source loading and diagnostics output.
//!
//! Exit codes are stable: 0 success, 1 an invalid catalog or a failure at run time, 2 a usage
//! error (unknown flag, missing argument), 130 interrupted; `diff` adds 3 (a SOURCE could not be
//! read). Each command's `run` returns an [`Ended`], and [`exit_code`] alone turns it into a
//! code (clap's own parse errors, `opm`'s and grpc_health_probe's dialects and a panic included);
//! `tests/exit_codes.rs` checks that no other place decides one.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the clap definition, logging, dispatch, [`exit_code`] |
//! | [`output`] | every line printed, stdout and stderr, following `--log-format` |
//! | [`progress`] | a copy's progress drawn on stderr |
//! | [`values`] | library enums as flag values (`ValueEnum`) |
//! | [`connection_args`] | the connection flags, plain, `--src-` and `--dest-`, and their merge |
//! | [`image_args`] | the image flags every image-reading command shares |
//! | [`ingest`], [`validate`], [`list`], [`upgrade`], [`diff`], [`graph`] | the catalog commands |
//! | [`validate_images`] | `validate --images`: its flags, findings and summary |
//! | [`render`], [`render_template`], [`convert_template`], [`init`], [`migrate`] | the authoring commands |
//! | [`serve`], [`health_probe`], [`opm`] | serving, the health probe, `opm` compatibility |
//! | [`image`], [`sign`], [`generate`], [`mirror`], [`mirror_delete`] | images: build, push, sign, Dockerfile, mirror, mirror delete |
//! | [`completions`] | shell completions and man pages |

pub mod completions;
pub mod connection_args;
pub mod convert_template;
pub mod diff;
pub mod generate;
pub mod graph;
pub mod health_probe;
pub mod image;
pub mod image_args;
pub mod ingest;
pub mod init;
pub mod list;
pub mod migrate;
pub mod mirror;
pub mod mirror_delete;
pub mod opm;
pub mod output;
pub mod progress;
pub mod render;
pub mod render_template;
pub mod serve;
pub mod sign;
pub mod upgrade;
pub mod validate;
pub mod validate_images;
mod values;

use clap::{Parser, Subcommand, ValueEnum};
pub use image_args::ImageArgs;
use std::io::IsTerminal;

/// Exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
/// Stopped by SIGINT or SIGTERM (128 + SIGINT, as a shell reports it).
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Parser, Debug)]
#[command(
    name = "opreg",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("OPREG_GIT_COMMIT"), ")"),
    about = "Operator catalog registry: ingest, validate, store and serve OLM catalogs",
    long_about = "opreg reads operator catalogs (file-based catalogs, bundle directories, package-manifest \
directories, legacy SQLite indexes), validates their upgrade graphs, stores them in SQLite with every \
update edge materialized, and serves the gRPC API OLM speaks (api.Registry), as a drop-in for `opm serve`.\n\n\
Run `opreg serve` with no arguments to serve an embedded demo catalog on port 50051.",
    after_help = "Exit codes: 0 success; 1 invalid catalog or runtime failure; 2 usage error; 130 interrupted. \
`diff` exits 3 when a SOURCE could not be read, `health-probe` uses grpc_health_probe's codes: see each command's --help."
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

/// Each subcommand's arguments are added only when that subcommand is parsed or its help is
/// shown (`defer`): building all twelve at start-up touched about 0.3 MB of code pages that a
/// server then kept resident. So each command's help text sits here, on its variant, where
/// `opreg --help` reads it without building the subcommand.
#[derive(Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Validate SOURCEs and write them to a SQLite catalog database.
    ///
    /// The write is atomic: the database is built in a temporary file beside FILE.db, synced, and
    /// renamed into place. On any error nothing is written and an existing FILE.db is untouched.
    ///
    /// Exit codes: 0 written; 1 invalid catalog, or a SOURCE or FILE.db could not be read or
    /// written; 2 usage error; 130 interrupted (nothing written).
    Ingest(ingest::Args),
    /// Check SOURCEs against the catalog rules and report every problem. Writes nothing.
    ///
    /// With -o json or -o yaml the report is one document on stdout: `valid`, the `packages`,
    /// `bundles` and `entries` counted (when valid), and `diagnostics`, each with `severity`
    /// (error or warning), `rule` (the stable id), `file`, `document`, `package`, `channel`,
    /// `bundle` (null when not applicable), `message` and `help` (null when there is none).
    ///
    /// With --images, once the catalog rules pass, every distinct image the bundles name is
    /// looked up at its registry (through --image-mirrors first, as a cluster pulls): rules
    /// image-missing (404), image-unreachable (denied, TLS or network), image-unpinned (a
    /// warning; an error with --require-digests), image-registry-not-allowed,
    /// image-platform-missing (a related image lacks a platform the CSV's
    /// operatorframework.io/arch.* and os.* labels declare; linux/amd64 by default) and
    /// bundle-image-multi-arch (a warning). Image findings join `diagnostics` with `image` and
    /// `location`; `images` holds the counts. Found images by digest are remembered in the
    /// image cache, and a rerun confirms tags read in the last 24 hours by their repository's
    /// tag list (--no-cache asks again).
    ///
    /// Exit codes: 0 valid (warnings may be printed), 1 invalid or an image error (or any
    /// warning, with --warnings-as-errors), or a SOURCE or --changed-from BASE could not be
    /// read; 2 usage error (an unusable --image-mirrors file too); 130 interrupted.
    Validate(validate::Args),
    /// Write the catalog read from SOURCEs as a file-based catalog on stdout.
    ///
    /// The output is stable: rendering it, ingesting it and rendering again gives the same bytes.
    /// JSON output is one object per line; YAML output is a `---`-separated stream. A SOURCE may be
    /// an image reference: a catalog or index image is rendered whole, a bundle image as the one
    /// `olm.bundle` that `opm render` writes for it.
    ///
    /// The catalog is not required to be valid: every validation problem is printed on stderr as
    /// a warning and the catalog is rendered as read (exit 0). A file that cannot be read or
    /// parsed is an error (exit 1).
    ///
    /// Exit codes: 0 rendered (valid or not); 1 a SOURCE could not be read, pulled or parsed,
    /// or the output could not be written; 2 usage error; 130 interrupted.
    Render(render::Args),
    /// Render a catalog template (basic, semver or substitutes) as a file-based catalog on stdout.
    ///
    /// `basic` reads a `schema: olm.template.basic` file: its `entries` are FBC, and each
    /// `olm.bundle` entry that has only an `image` is replaced by the bundle that image holds.
    /// `semver` reads a `schema: olm.semver` file: the bundles listed under `candidate`, `fast` and
    /// `stable` become channels named like `stable-v1` (with `generateMajorChannels: true`) and
    /// `stable-v1.2` (`generateMinorChannels: true`, the default), linked with replaces and skips
    /// within each major version; the default channel is the most stable, newest one.
    /// `substitutes` reads a `schema: olm.template.substitutes` file: a valid FBC (`entries`) and
    /// `substitutions`, each a bundle reference (`name`) that takes the place of a bundle (`base`)
    /// in every channel's update graph. Without a kind, the file's `schema` names it.
    ///
    /// A bundle reference is a bundle image (pulled), or a local bundle directory (a path, taken
    /// relative to the template's directory when it exists there). With `--bundles-dir DIR`, an
    /// image reference `REPOSITORY:TAG` is read from the bundle directory `DIR/TAG` instead of being
    /// pulled (the layout of community-operators, where each bundle image is tagged with its
    /// version directory); a reference pinned by digest cannot be mapped and is an error.
    ///
    /// The output is not validated: run `opreg validate` on it. A template that cannot be read or
    /// rendered is a one-line error naming the file (exit 1).
    ///
    /// `-o mermaid` writes the rendered catalog's channels as a Mermaid graph instead, the one
    /// `opm alpha render-template -o mermaid` writes, byte for byte.
    RenderTemplate(render_template::Args),
    /// Write an `olm.package` blob for PACKAGE on stdout, as `opm init` does.
    ///
    /// The blob names the package and its default channel; with --icon, the file's bytes become
    /// the icon (base64), with the media type detected from them (SVG, PNG, JPEG, GIF and the
    /// other image types opm knows; anything else is refused); with --description, the file's
    /// text becomes the description. The output is byte for byte what `opm init` writes.
    Init(init::Args),
    /// Write a catalog template (basic or substitutes) from an existing FBC file on stdout, as
    /// `opm alpha convert-template` does.
    ///
    /// Every object of the FBC becomes an entry of the template, in the order read, with its
    /// keys sorted. `basic` keeps only the schema and image of each bundle (rendering the
    /// template reads the bundle from its image again); `substitutes` keeps every entry whole
    /// and adds an empty list of substitutions. Render the result with `opreg render-template`.
    ConvertTemplate(convert_template::Args),
    /// Write a catalog to OUTDIR through opm's migrations, one directory per package, as
    /// `opm migrate` does.
    ///
    /// SOURCE is a file-based catalog directory or a catalog image (not a bundle). Each
    /// package is written to OUTDIR/PACKAGE/catalog.json (or catalog.yaml with -o yaml), and
    /// metas that name no package to OUTDIR/catalog.json, with the bytes `opreg render` writes.
    /// OUTDIR must be missing or empty; the tree is written beside it and renamed into place,
    /// so a failed run leaves nothing. Validation problems are printed as warnings; the catalog
    /// is written as read.
    Migrate(migrate::Args),
    /// Serve a catalog over the operator-registry gRPC API (a drop-in for `opm serve`).
    ///
    /// Services: api.Registry, api.ExperimentalRegistry, opreg.v1.Upgrades, grpc.health.v1.Health
    /// and server reflection (v1 and v1alpha). The server listens on [::]:PORT (IPv4 and IPv6),
    /// reports NOT_SERVING until the catalog is loaded, and stops gracefully on SIGTERM/SIGINT.
    ///
    /// Exit codes: 0 stopped by SIGTERM/SIGINT (or --cache-only done); 1 invalid catalog or a
    /// failure at start-up (the reason is also written to --termination-log); 2 usage error.
    Serve(serve::Args),
    /// Resolve upgrades from an installed bundle under classic OLM, OLM v1 or semver rules.
    ///
    /// Prints the next bundle (name, version, channel, and the edge that allows the step), the
    /// whole path hop by hop until no further upgrade exists, and every other bundle considered
    /// at the last resolution with the reason it was not taken (reason codes: not-in-channel,
    /// outside-range, not-a-successor, blocked-by-policy, skipped-off-chain, farther-from-head,
    /// deprecated, lower-version, major-change, has-dependencies, already-on-path).
    ///
    /// Rules: classic resolves in one channel (--channel or the default channel) and takes the
    /// successor closest to the head. v1 considers the listed channels (all when none), the
    /// --version constraint (Masterminds syntax) and --policy, keeps the installed version as a
    /// candidate, and takes non-deprecated first, then the highest version. semver is v1 with
    /// successors `^V, != V` instead of catalog edges.
    ///
    /// A hop to a lower version (an older bundle's skipRange covers the installed one: the graph
    /// loops) is marked DOWNGRADE, and `"downgrade": true` in JSON.
    ///
    /// JSON output (--output json) has the stable keys `next` (null or a step), `path` (steps),
    /// `rejected` ({name, version, reason, detail}), plus `installed`, `semantics`, `package` and
    /// `error` (the error OLM v1 would report, or null).
    ///
    /// Exit codes: 0 resolution ran (also when there is no upgrade or OLM would report an error);
    /// 1 unknown package or channel, bad FROM, invalid catalog or range; 2 usage error;
    /// 130 interrupted.
    Upgrade(upgrade::Args),
    /// Draw a package's update graph (Mermaid for GitHub, DOT for graphviz).
    ///
    /// Nodes are bundles, one subgraph per channel, the default channel first. Edges point in
    /// upgrade direction, from the installed (older) bundle to the one that can replace it:
    /// replaces (solid), skips (dashed). Each skipRange is one bracket node labelled with the range
    /// and how many bundles it covers, with one dotted edge to the bundle that declares it. The
    /// channel head is marked "head", the default channel "(default)", deprecated bundles
    /// "deprecated", and names that are skip targets but not bundles (synthetic) are drawn dashed.
    /// A legend explains the marks. With --from, the upgrade paths from that bundle are
    /// highlighted: classic OLM in red, OLM v1 in blue (both: purple). Mermaid output longer than
    /// GitHub's 50,000-character limit gets a warning on stderr (narrow it with --channel or
    /// --since, or use -f dot).
    ///
    /// Exit codes: 0 drawn; 1 unreadable or invalid SOURCE, unknown package, channel or --from;
    /// 2 usage error; 130 interrupted.
    Graph(graph::Args),
    /// List the packages, channels or channel entries of a catalog.
    ///
    /// Works on every SOURCE kind: a file-based catalog, a package-manifest tree, bundle
    /// directories, an operator-registry SQLite index, an image, or a database built by `opreg
    /// ingest` (read with narrow queries, without loading the catalog). Versions sort as versions
    /// (6.1.2 before 6.1.10).
    ///
    /// Exit codes: 0 listed; 1 unreadable or invalid SOURCE, or no such PACKAGE; 2 usage error;
    /// 130 interrupted.
    List(list::Args),
    /// Compare two catalogs; fail when an upgrade would strand an installed version.
    ///
    /// Reports packages, channels and channel entries added and removed, default channels and
    /// channel heads that changed, update edges added and removed (by kind, in upgrade direction:
    /// from the installed bundle to the one that can replace it), and skipRanges in NEW that cover
    /// a newer version of their channel (downgrade hops) and were not in OLD.
    ///
    /// Stranding is the gate: every bundle of every channel of OLD is a version a subscriber may
    /// be running. In NEW it must still reach the head of its channel (under --semantics), unless
    /// it is that head. It need not be in NEW: an installed version upgrades through any bundle
    /// that replaces it, skips it, or whose skipRange covers its version. A removed channel or
    /// package strands every version in it. Reasons: no-upgrade, path-ends-before-head,
    /// channel-removed, package-removed, unresolvable.
    ///
    /// --fail-on-removal is the stricter gate for fragments against a target index: it also
    /// fails when NEW removes a channel or a channel entry of OLD, except in channels matching
    /// --allow-removal. With --fragment only the packages NEW has are compared.
    ///
    /// JSON (--output json): {"semantics", "stranded":[{"package","channel","bundle","version",
    /// "reason","detail"}], "heads":[{"package","channel","old","new"}],
    /// "defaultChannels":[{"package","old","new"}], "packages":{"added","removed"},
    /// "channels":{"added":[{"package","name"}],"removed"}, "bundles":{"added":[{"package",
    /// "channel","name"}],"removed"}, "edges":{"added":[{"package","channel","from","to","kind"}],
    /// "removed"}, "newDowngrades":[{"package","channel","bundle","version","skipRange","covers",
    /// "coversVersion"}], "removals":[{"package","channel","bundle","removed","allowed"}]}
    /// (removed: package, channel or entry; bundle only for an entry).
    ///
    /// Exit codes: 0 nothing stranded (and, with --fail-on-removal, nothing removed outside
    /// allowed channels); 1 something stranded or removed; 2 usage error (a bad --allow-removal
    /// pattern too); 3 a SOURCE could not be read or is invalid (the comparison did not run);
    /// 130 interrupted.
    Diff(diff::Args),
    /// Print a shell completion script for opreg.
    ///
    /// Install, for example: bash: `opreg completions bash > ~/.local/share/bash-completion/completions/opreg`;
    /// zsh: `opreg completions zsh > "${fpath[1]}/_opreg"`; fish:
    /// `opreg completions fish > ~/.config/fish/completions/opreg.fish`.
    ///
    /// Exit codes: 0 written; 1 the output could not be written; 2 usage error; 130 interrupted.
    Completions(completions::Args),
    /// Print opreg's man page (roff) on stdout.
    ///
    /// Install, for example: `opreg man > ~/.local/share/man/man1/opreg.1`, then `man opreg`.
    ///
    /// Exit codes: 0 written; 1 a page could not be written; 2 usage error (an unknown
    /// subcommand); 130 interrupted.
    Man(completions::ManArgs),
    /// Check a gRPC server's health, as grpc_health_probe does.
    ///
    /// Exit codes: 0 SERVING, 1 bad arguments, 2 connection failure, 3 RPC failure, 4 not SERVING.
    HealthProbe(health_probe::Args),
    /// Build, push, sign and verify catalog images, without a daemon.
    Image(image::Args),
    /// Generate artifacts for file-based catalogs (a Dockerfile, as opm does).
    Generate(generate::Args),
    /// Copy filtered catalogs and every image they name into a disconnected registry.
    ///
    /// Reads oc-mirror v2's ImageSetConfiguration (the operator part, additionalImages and
    /// blockedImages). Each catalog is pinned to the digest its reference names at the start,
    /// filtered with oc-mirror's semantics, completed with the bundles its kept bundles require
    /// (unless skipDependencies), and validated: an invalid result copies nothing. Then every
    /// image (bundles, related images, additional images, less blocked ones) is copied whole, by
    /// digest, with its signature tags; the filtered catalog is rebuilt on its source image and
    /// pushed last. A rerun copies only what is missing.
    ///
    /// For a cluster with no link at all: `--config FILE file://DIR` mirrors into DIR (an OCI
    /// layout with the plan; archives of at most archiveSize GB with --since), and
    /// `--from file://DIR docker://REGISTRY` unpacks and pushes it on the other side.
    ///
    /// Exit codes: 0 everything copied; 1 a failure (every one is listed; with --keep-going
    /// the run carries on past failed images); 2 a usage error or an invalid configuration;
    /// 130 interrupted.
    Mirror(mirror::Args),
}

/// Runs the CLI on `argv`; returns the process exit code.
pub fn run(argv: Vec<std::ffi::OsString>) -> i32 {
    exit_code(ended(argv))
}

/// Runs the CLI on `argv`; how it ended.
fn ended(argv: Vec<std::ffi::OsString>) -> Ended {
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
    // `opreg health-probe -addr=:50051`: grpc_health_probe's single-dash flags under either name.
    if argv.get(1).is_some_and(|a| a == "health-probe") && argv[2..].iter().any(is_go_flag) {
        return health_probe::run_go_style(&argv[2..]);
    }
    match Cli::try_parse_from(argv) {
        Ok(cli) => dispatch(cli),
        Err(e) => Ended::Parse(e),
    }
}

/// A Go-style long flag (`-addr=:1`, `-rpc-timeout`): one dash, then a word.
fn is_go_flag(arg: &std::ffi::OsString) -> bool {
    let a = arg.to_string_lossy();
    a.len() > 2
        && a.starts_with('-')
        && !a.starts_with("--")
        && a.as_bytes()[2].is_ascii_alphabetic()
}

pub fn dispatch(cli: Cli) -> Ended {
    let debug = matches!(&cli.command, Command::Serve(a) if a.debug);
    init_logging(cli.log_format, debug);
    if let Some(left) = left_when_interrupted(&cli.command) {
        let said = format!("interrupted; {left}");
        let quick = output::error_text(&said).map(|line| (line + "\n", EXIT_INTERRUPTED));
        crate::interrupt::exit_on_signal(
            move || {
                output::error(said);
                EXIT_INTERRUPTED
            },
            quick,
        );
    }
    match cli.command {
        Command::Ingest(a) => ingest::run(a),
        Command::Validate(a) => validate::run(a),
        Command::Render(a) => render::run(a),
        Command::RenderTemplate(a) => render_template::run(a),
        Command::Init(a) => init::run(a),
        Command::ConvertTemplate(a) => convert_template::run(a),
        Command::Migrate(a) => migrate::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Upgrade(a) => upgrade::run(a),
        Command::Graph(a) => graph::run(a),
        Command::List(a) => list::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => completions::run_man(a),
        Command::HealthProbe(a) => health_probe::run(a),
        Command::Image(a) => image::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Mirror(a) => mirror::run(a),
    }
}

/// What a command leaves when SIGINT or SIGTERM ends it (exit 130, after this line), for the
/// commands that end at the signal; `serve` shuts down gracefully and `ingest` stops at its
/// next step, each in its own way, and `health-probe` is over in a moment.
fn left_when_interrupted(c: &Command) -> Option<&'static str> {
    match c {
        Command::Serve(_) | Command::Ingest(_) | Command::HealthProbe(_) => None,
        Command::Mirror(m) if m.action.is_some() => Some(
            "every image deleted so far is recorded in the workspace, and the same command \
             finishes the job",
        ),
        Command::Mirror(_) => Some(
            "every image completed so far is recorded in the workspace, nothing half-written \
             was left, and the same command goes on from there",
        ),
        Command::Image(_) => Some(
            "nothing half-written was left; a push puts its tag last, so an interrupted push \
             tags nothing",
        ),
        _ => Some("nothing was written"),
    }
}

pub fn init_logging(format: LogFormat, debug: bool) {
    use tracing_subscriber::EnvFilter;
    let mut filter = EnvFilter::try_from_env("OPREG_LOG")
        .unwrap_or_else(|_| EnvFilter::new(if debug { "opreg=debug,info" } else { "info" }));
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
        .with_writer(crate::log_sink::Sink)
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

/// How a command ended. [`exit_code`] is the one place an ending becomes an exit code.
#[derive(Debug)]
pub enum Ended {
    /// Success: 0.
    Done,
    /// A failure the command has reported in full already (an invalid catalog `validate` or
    /// `serve` printed, versions `diff` found stranded): 1.
    Reported,
    /// A failure [`report`] prints: 1, 2 for a usage error, 130 when interrupted.
    Failed(crate::error::Error),
    /// `diff`: OLD or NEW could not be read or is invalid, so the comparison did not run: 3
    /// (2 for a usage error, 130 when interrupted).
    Unreadable(crate::error::Error),
    /// clap could not parse the arguments, or was asked for --help or --version: clap prints
    /// it; 2 for a usage error, 0 for help and version.
    Parse(clap::Error),
    /// `health-probe`: the probe's outcome, printed already, as grpc_health_probe's code: 0
    /// SERVING, 1 a bad address, 2 no connection, 3 the RPC failed, 4 not SERVING.
    Probe(crate::probe::Outcome),
    /// `health-probe` in grpc_health_probe's dialect: bad flags or `-help`, printed already: 1.
    ProbeArgs,
    /// A panic, reported by the panic hook already: 1.
    Panicked,
}

impl From<crate::error::Error> for Ended {
    fn from(e: crate::error::Error) -> Self {
        Ended::Failed(e)
    }
}

/// `diff`'s exit code when OLD or NEW cannot be read or is invalid: apart from 1, so that a
/// CI gate can tell "something is stranded" from "the comparison did not run".
pub const EXIT_UNREADABLE: i32 = 3;

// grpc_health_probe's exit codes.
const EXIT_PROBE_ARGS: i32 = 1;
const EXIT_PROBE_CONNECT: i32 = 2;
const EXIT_PROBE_RPC: i32 = 3;
const EXIT_PROBE_UNHEALTHY: i32 = 4;

/// The exit code of a command that ended so, after reporting its error: the one place endings
/// become exit codes.
pub fn exit_code(ended: Ended) -> i32 {
    use crate::error::Error;
    use crate::probe::Outcome;
    match ended {
        Ended::Done => EXIT_OK,
        Ended::Reported | Ended::Panicked => EXIT_FAILURE,
        Ended::Parse(e) => {
            let _ = e.print();
            if e.use_stderr() {
                EXIT_USAGE
            } else {
                EXIT_OK
            }
        }
        Ended::Probe(o) => match o {
            Outcome::Serving => EXIT_OK,
            Outcome::BadAddress(_) => EXIT_PROBE_ARGS,
            Outcome::NoConnection(_) => EXIT_PROBE_CONNECT,
            Outcome::RpcFailed(_) => EXIT_PROBE_RPC,
            Outcome::Unhealthy(_) => EXIT_PROBE_UNHEALTHY,
        },
        Ended::ProbeArgs => EXIT_PROBE_ARGS,
        Ended::Failed(e) | Ended::Unreadable(e) if matches!(e, Error::Usage(_)) => {
            report(&e);
            EXIT_USAGE
        }
        Ended::Failed(Error::Interrupted) | Ended::Unreadable(Error::Interrupted) => {
            report(&Error::Interrupted);
            EXIT_INTERRUPTED
        }
        Ended::Failed(e) => {
            report(&e);
            EXIT_FAILURE
        }
        Ended::Unreadable(e) => {
            report(&e);
            EXIT_UNREADABLE
        }
    }
}

/// Prints a failure: an invalid catalog's warnings and every error, then a count; anything
/// else as one line.
pub fn report(e: &crate::error::Error) {
    use crate::error::Error;
    match e {
        Error::Invalid { errors, warnings } => {
            warnings.iter().for_each(output::diagnostic);
            errors.iter().for_each(output::diagnostic);
            output::failure_summary(format_args!(
                "{} error(s): the catalog is invalid",
                errors.len()
            ));
        }
        Error::Usage(msg) => output::error(msg),
        Error::Interrupted => output::error("interrupted; nothing was written"),
        e @ Error::Failed(_) => output::error(e.detail()),
    }
}

/// For a command with `--allow-empty`: the error that a catalog has no packages says how to
/// accept one.
pub fn offer_allow_empty(errors: &mut [crate::diag::Diagnostic]) {
    for d in errors.iter_mut().filter(|d| crate::load::is_no_packages(d)) {
        d.help = Some("pass --allow-empty to accept an empty catalog".into());
    }
}

/// Prints the warnings of a command that succeeded (unless `quiet`).
pub fn warnings(w: &[crate::diag::Diagnostic], quiet: bool) {
    if !quiet {
        w.iter().for_each(output::diagnostic);
    }
}
