//! The harness's command line: `run`'s arguments and the subcommands (see main.rs).

use super::DEFAULT_SEED;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "harness", about = "opreg benchmark harness")]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Run the benchmark suite and write the report (Markdown).
    Run(RunArgs),
    /// Write a synthetic FBC catalog (one JSON document per line).
    Gen {
        /// Scale: 64 packages per unit (fractions allowed).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// One unary load point against `opreg serve DB` (for profiling: `--perf FILE` runs the
    /// server under `perf record -g`).
    Probe {
        db: PathBuf,
        #[arg(long, default_value = "GetBundleThatReplaces")]
        rpc: String,
        #[arg(long, default_value_t = 64)]
        callers: usize,
        #[arg(long, default_value_t = 3.0)]
        duration: f64,
        #[arg(long)]
        threads: Option<usize>,
        #[arg(long)]
        perf: Option<PathBuf>,
    },
    /// Only the bundle RPCs against the same-bytes floor, on `opreg serve DB` (for iterating on
    /// the serving path; the suite runs the same measurement).
    Floor {
        db: PathBuf,
        #[arg(long, default_value_t = 3.0)]
        duration: f64,
        #[arg(long)]
        work: PathBuf,
    },
    /// Only the ingest from a registry (image.rs): local and warm ingests of CATALOG by each
    /// BIN in turn, for iterating by hand.
    Image {
        catalog: PathBuf,
        #[arg(long = "bin", value_name = "BIN", required = true)]
        bins: Vec<PathBuf>,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[arg(long)]
        work: PathBuf,
    },
    /// Rewrite REPORT's "Known gaps" section from its own target tables (what `run` does at the
    /// end), in place: for a report whose tables were changed or whose generator changed.
    Gaps { report: PathBuf },
    /// Internal: the file server `/api/v1/all` is compared with (run as a child process).
    #[command(hide = true)]
    FileServer { file: PathBuf, port: u16 },
    /// Only the OLM fan-out and memory-under-load rows on CATALOG (and growth with --growth),
    /// printed as Markdown (see olm_rows.rs).
    Rows {
        catalog: PathBuf,
        #[arg(long, default_value_t = 1_000_000)]
        requests: usize,
        /// Growth scales (e.g. 16,64); none by default.
        #[arg(long, value_delimiter = ',')]
        growth: Vec<f64>,
        #[arg(long)]
        work: PathBuf,
    },
    /// Only the catalogd HTTP API section (`/all` against the file server and the curl peer,
    /// /metas, GraphQL) and the build peaks (serving a built database with the HTTP port
    /// included) on CATALOG, printed as Markdown (`scripts/bench.sh --catalogd`).
    Catalogd {
        catalog: PathBuf,
        /// Seconds per reqwest load.
        #[arg(long, default_value_t = 3.0)]
        duration: f64,
        /// Rounds of the curl comparison and of the build peaks.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[arg(long)]
        work: PathBuf,
    },
    /// `serve REF`'s time to SERVING on CATALOG as a signed image in a registry on loopback,
    /// without and with `--signature-policy`, printed as Markdown (`scripts/bench.sh --signing`).
    Signing {
        catalog: PathBuf,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        #[arg(long)]
        work: PathBuf,
    },
    /// `opreg mirror`'s plan of a 20-package configuration over CATALOG as an image in a
    /// registry on loopback, cold and warm, next to `opreg validate` of the image, printed as
    /// Markdown (`scripts/bench.sh --filter`).
    Filter {
        catalog: PathBuf,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        #[arg(long)]
        work: PathBuf,
    },
    /// `opreg validate --images` at the community catalog's scale, against stand-in images in
    /// a registry on loopback, printed as Markdown (`scripts/bench.sh --images`; see
    /// image_checks.rs).
    ImageChecks {
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        #[arg(long)]
        work: PathBuf,
    },
    /// `opreg mirror delete` against stand-in images in registries on loopback: phase 2 on 200
    /// images, and phase 1 over the workspace of a 20-package mirror of CATALOG (the community
    /// catalog), printed as Markdown (`scripts/bench.sh --delete`; see mirror_delete.rs).
    Delete {
        catalog: PathBuf,
        /// Rounds of phase 2 (each mirrors again first).
        #[arg(long, default_value_t = 3)]
        delete_rounds: usize,
        /// Runs of phase 1.
        #[arg(long, default_value_t = 5)]
        generate_rounds: usize,
        #[arg(long)]
        work: PathBuf,
    },
    /// Only the side-by-side section against a baseline build on CATALOG, printed as Markdown
    /// (see baseline.rs).
    Baseline {
        catalog: PathBuf,
        /// The baseline build's binary.
        #[arg(long, value_name = "BIN")]
        bin: PathBuf,
        #[arg(long, default_value = "baseline")]
        label: String,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[arg(long)]
        work: PathBuf,
    },
    /// Internal: the serde_json parse floor on FILE (run as a child process).
    #[command(hide = true)]
    FloorParse { file: PathBuf },
    /// Internal: the same-bytes floor server for the bundle RPCs (see floor.rs).
    #[command(hide = true)]
    FloorServe {
        answers: PathBuf,
        #[arg(long)]
        port: u16,
    },
}

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// Tiny sizes and short load phases (CI): tiny synthetic catalog, no corpus unless given.
    #[arg(long)]
    pub smoke: bool,
    /// Write the report here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Directory with community-operators.fbc.json and certified-operators.fbc.json.
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Extra catalogs (any source `opreg ingest` accepts as a single file).
    #[arg(long = "catalog", value_name = "FILE")]
    pub catalogs: Vec<PathBuf>,
    /// Synthetic scales [default: 1,4,16; smoke: 0.05].
    #[arg(long, value_delimiter = ',')]
    pub scales: Vec<f64>,
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Seconds of measurement per unary load point [default: 3; smoke: 0.3].
    #[arg(long)]
    pub duration: Option<f64>,
    /// Starts measured per catalog [default: 7; smoke: 2].
    #[arg(long)]
    pub starts: Option<usize>,
    /// Working directory for generated catalogs and databases.
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// The command line to print in the report.
    #[arg(long, default_value = "scripts/bench.sh")]
    pub command: String,
    /// An older build of opreg to measure side by side with this one on the primary catalog
    /// (see baseline.rs).
    #[arg(long, value_name = "BIN")]
    pub baseline: Option<PathBuf>,
    /// What the report calls the baseline build (e.g. its commit).
    #[arg(long, value_name = "LABEL", default_value = "baseline")]
    pub baseline_label: String,
    /// A build between the baseline and this one (a commit whose change is to be told
    /// apart), compared with the baseline the same way, in a section of its own.
    #[arg(long, value_name = "BIN", requires = "baseline")]
    pub step: Option<PathBuf>,
    /// What the report calls the --step build (its commit).
    #[arg(long, value_name = "LABEL", default_value = "step")]
    pub step_label: String,
}
