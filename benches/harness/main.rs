//! opreg's benchmark harness (issue 7). `scripts/bench.sh` runs it and writes BENCHMARKS.md.
//!
//! For each catalog (the largest real ones in `../shared/testdata/corpus`, and synthetic ones
//! at scales 1×, 4× and 16× from the deterministic generator in `synth.rs`) it measures, in
//! child processes of its own:
//!
//! * `opreg ingest`: wall time and peak RSS (wait4), next to the floor: parsing the same input
//!   with serde_json alone (read the file, decode every document into a `Value`, drop it), run
//!   as a child process too;
//! * `opreg serve DB`: spawn → health SERVING (median of several starts), idle RSS, time to
//!   stream the whole ListBundles to a tonic client that decodes every message, RSS during it;
//! * unary throughput and p50/p99 latency of GetPackage and GetBundleThatReplaces at 1 and 64
//!   concurrent callers, next to the floor: an empty unary RPC (Health/Check) on the same
//!   server process, same runtime and thread configuration, same client;
//! * `opreg upgrade DB` on the package with the most bundles, from the tail of its default
//!   channel (process start to exit);
//! * `opreg diff DB SOURCE` (the built database against the catalog it was built from: every
//!   version of every channel resolved for stranding), wall time and peak RSS;
//! * for the largest real catalog, the same unary load at 64 callers with 1 and 2 worker
//!   threads (`opreg serve --threads N`), its ingest from a registry (`image.rs`), and
//!   catalogd's `/api/v1/all` at 10 clients against a file server, and the time from a file
//!   change to the new content served (`http.rs`).
//!
//! Subcommands: `run` (the suite; `--smoke` for a seconds-long run on tiny inputs), `gen` (write
//! a synthetic catalog), `floor-parse` (internal: the parse floor, run as a child).

mod corpus;
mod fanout;
mod floor;
mod growth;
mod http;
mod image;
mod load;
mod memload;
mod olm_rows;
mod procs;
mod synth;

use clap::{Parser, Subcommand};
use load::{Keys, LoadStats, Rpc};
use procs::{ChildStats, Server};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const DEFAULT_SEED: u64 = 20_240_601;

#[derive(Parser)]
#[command(name = "harness", about = "opreg benchmark harness")]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
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
struct RunArgs {
    /// Tiny sizes and short load phases (CI): tiny synthetic catalog, no corpus unless given.
    #[arg(long)]
    smoke: bool,
    /// Write the report here instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Directory with community-operators.fbc.json and certified-operators.fbc.json.
    #[arg(long, value_name = "DIR")]
    corpus: Option<PathBuf>,
    /// Extra catalogs (any source `opreg ingest` accepts as a single file).
    #[arg(long = "catalog", value_name = "FILE")]
    catalogs: Vec<PathBuf>,
    /// Synthetic scales [default: 1,4,16; smoke: 0.05].
    #[arg(long, value_delimiter = ',')]
    scales: Vec<f64>,
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Seconds of measurement per unary load point [default: 3; smoke: 0.3].
    #[arg(long)]
    duration: Option<f64>,
    /// Starts measured per catalog [default: 7; smoke: 2].
    #[arg(long)]
    starts: Option<usize>,
    /// Working directory for generated catalogs and databases.
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// The command line to print in the report.
    #[arg(long, default_value = "scripts/bench.sh")]
    command: String,
}

fn main() {
    // `cargo bench` appends --bench.
    let argv: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let cli = Cli::parse_from(argv);
    match cli.cmd {
        Some(Cmd::Gen {
            scale,
            seed,
            output,
        }) => {
            let f = std::fs::File::create(&output).expect("create output");
            let mut w = std::io::BufWriter::new(f);
            synth::write_catalog(&mut w, seed, synth::packages_at(scale)).expect("write");
            std::io::Write::flush(&mut w).expect("flush");
        }
        Some(Cmd::FloorParse { file }) => floor_parse(&file),
        Some(Cmd::FloorServe { answers, port }) => floor::serve(&answers, port),
        Some(Cmd::FileServer { file, port }) => http::file_server(&file, port),
        Some(Cmd::Probe {
            db,
            rpc,
            callers,
            duration,
            threads,
            perf,
        }) => probe(&db, &rpc, callers, duration, threads, perf.as_deref()),
        Some(Cmd::Run(a)) => run(a),
        Some(Cmd::Rows {
            catalog,
            requests,
            growth,
            work,
        }) => {
            let _ = std::fs::create_dir_all(&work);
            let plan = olm_rows::Plan {
                requests,
                growth,
                // The plot of a partial run stays in the work directory.
                svg_in_docs: false,
                ..olm_rows::Plan::new(false, DEFAULT_SEED)
            };
            let mut report = String::new();
            let bin = PathBuf::from(env!("CARGO_BIN_EXE_opreg"));
            let name = catalog.file_name().unwrap_or_default().to_string_lossy();
            // The corpus catalogs need their few broken icons replaced (corpus.rs).
            let catalog = corpus::repaired_copy(&catalog, &work.join("corpus")).expect("copy");
            olm_rows::append(&mut report, &bin, &work, &name, Some(&catalog), &plan);
            print!("{report}");
        }
        None => {
            eprintln!("harness: no subcommand; see --help. Use scripts/bench.sh for the suite.");
        }
    }
}

/// The ingest floor: read the file and decode every JSON document, building nothing else.
fn floor_parse(file: &Path) {
    let bytes = std::fs::read(file).expect("read");
    let mut n = 0usize;
    for v in serde_json::Deserializer::from_slice(&bytes).into_iter::<serde_json::Value>() {
        let v = v.expect("valid JSON");
        std::hint::black_box(&v);
        n += 1;
    }
    assert!(n > 0, "no documents");
    println!("{n}");
}

fn probe(
    db: &Path,
    rpc: &str,
    callers: usize,
    duration: f64,
    threads: Option<usize>,
    perf: Option<&Path>,
) {
    let rpc = match rpc {
        "Empty" | "empty" => Rpc::Empty,
        "GetPackage" => Rpc::GetPackage,
        "GetBundleThatReplaces" => Rpc::GetBundleThatReplaces,
        "GetBundle" => Rpc::GetBundle,
        "GetBundleForChannel" => Rpc::GetBundleForChannel,
        "GetDefaultBundleThatProvides" => Rpc::GetDefaultBundleThatProvides,
        other => panic!("unknown RPC {other}: Empty, GetPackage, GetBundle, GetBundleForChannel, GetBundleThatReplaces or GetDefaultBundleThatProvides"),
    };
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_opreg"));
    let log = std::env::temp_dir().join("opreg-probe.log");
    let mut s = match perf {
        Some(out) => Server::spawn_wrapped(
            &[
                "perf",
                "record",
                "--call-graph",
                "dwarf,32768",
                "-F",
                "499",
                "-o",
                &out.to_string_lossy(),
                "--",
            ],
            &bin,
            db,
            threads,
            &log,
        ),
        None => Server::spawn(&bin, db, threads, &log),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("client runtime");
    let t = rt
        .block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
        .unwrap_or_else(|e| panic!("{e}"));
    s.wait_log("integrity check passed", Duration::from_secs(120));
    eprintln!(
        "SERVING after {t:.1?}; server pid {}; RSS {:.1} MB",
        s.pid(),
        mb(s.rss_kb())
    );
    let keys = Arc::new(read_keys(db));
    let st = rt.block_on(load::unary(
        &s,
        rpc,
        callers,
        keys,
        Duration::from_millis(300),
        Duration::from_secs_f64(duration),
    ));
    eprintln!(
        "{} x{callers}: {:.0}/s p50 {:.3} ms p99 {:.3} ms server CPU {:.0} µs/call client CPU {:.0} µs/call; RSS after {:.1} MB (peak {:.1} MB)",
        rpc.label(),
        st.rps,
        st.p50_us / 1e3,
        st.p99_us / 1e3,
        st.server_cpu_us,
        st.client_cpu_us,
        mb(s.rss_kb()),
        mb(s.hwm_kb())
    );
    if let Some(secs) = std::env::var("HARNESS_IDLE_AFTER")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_secs(secs));
        eprintln!("RSS {secs} s after the load: {:.1} MB", mb(s.rss_kb()));
    }
    if std::env::var_os("HARNESS_SMAPS").is_some() {
        eprintln!(
            "{}",
            std::fs::read_to_string(format!("/proc/{}/smaps_rollup", s.pid())).unwrap_or_default()
        );
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!("grep -E '^[0-9a-f]+-|^Rss' /proc/{}/smaps | paste - - | sort -k3 -n -r -t: | head -15", s.pid()))
            .status();
    }
    s.interrupt();
}

struct Input {
    name: String,
    path: PathBuf,
    /// For synthetic catalogs: scale, packages, sha256 of the file.
    synth: Option<(f64, usize, String)>,
    /// The largest real catalog: gets the worker-thread comparison.
    primary: bool,
}

#[derive(Default)]
struct Row {
    name: String,
    source_mb: f64,
    db_mb: f64,
    synth: Option<(f64, usize, String)>,
    packages: usize,
    floor: ChildStats,
    ingest: ChildStats,
    starts_ms: Vec<f64>,
    verify_ms: Option<f64>,
    idle_kb: u64,
    idle_after_kb: u64,
    hwm_kb: u64,
    list: Option<load::ListStats>,
    unary: Vec<(Rpc, usize, LoadStats)>,
    threads: Vec<(usize, Rpc, LoadStats)>,
    upgrade: Option<Upgrade>,
    diff: Option<ChildStats>,
    primary: bool,
}

struct Upgrade {
    package: String,
    bundles: i64,
    channel: String,
    from: String,
    hops: usize,
    classic_ms: f64,
    v1_ms: f64,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn file_mb(p: &Path) -> f64 {
    std::fs::metadata(p)
        .map(|m| m.len() as f64 / 1e6)
        .unwrap_or(0.0)
}

fn sha256_file(p: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(p).expect("open");
    std::io::copy(&mut f, &mut h).expect("hash");
    format!("{:x}", h.finalize())
}

fn run(mut a: RunArgs) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_opreg"));
    let me = std::env::current_exe().expect("current exe");
    let work = a
        .work
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench"));
    std::fs::create_dir_all(&work).expect("work dir");
    if a.scales.is_empty() {
        a.scales = if a.smoke {
            vec![0.05]
        } else {
            vec![1.0, 4.0, 16.0]
        };
    }
    let dur = Duration::from_secs_f64(a.duration.unwrap_or(if a.smoke { 0.3 } else { 3.0 }));
    let warmup = Duration::from_secs_f64(if a.smoke { 0.1 } else { 0.5 });
    let starts = a.starts.unwrap_or(if a.smoke { 2 } else { 7 }).max(1);

    let corpus = a.corpus.clone().or_else(|| {
        (!a.smoke)
            .then(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata/corpus"))
    });
    let mut inputs = Vec::new();
    if let Some(dir) = &corpus {
        for (i, f) in [
            "community-operators.fbc.json",
            "certified-operators.fbc.json",
        ]
        .iter()
        .enumerate()
        {
            let p = dir.join(f);
            if p.is_file() {
                // The converted catalogs hold a few icons upstream rejects; measure a copy
                // with only those replaced (see corpus.rs).
                let p = corpus::repaired_copy(&p, &work.join("corpus"))
                    .expect("writing the repaired corpus copy");
                inputs.push(Input {
                    name: f.to_string(),
                    path: p,
                    synth: None,
                    primary: i == 0,
                });
            } else {
                eprintln!("harness: {} not found; skipped", p.display());
            }
        }
    }
    for p in &a.catalogs {
        inputs.push(Input {
            name: p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            path: p.clone(),
            synth: None,
            primary: false,
        });
    }
    if !inputs.iter().any(|i| i.primary) {
        if let Some(first) = inputs.first_mut() {
            first.primary = true;
        }
    }
    for &s in &a.scales {
        let packages = synth::packages_at(s);
        let path = work.join(format!("synth-{s}x-seed{}.fbc.json", a.seed));
        let t = Instant::now();
        let f = std::fs::File::create(&path).expect("create synthetic catalog");
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        synth::write_catalog(&mut w, a.seed, packages).expect("write synthetic catalog");
        std::io::Write::flush(&mut w).expect("flush");
        drop(w);
        eprintln!(
            "harness: generated {} ({:.1} MB, {packages} packages) in {:.1?}",
            path.display(),
            file_mb(&path),
            t.elapsed()
        );
        inputs.push(Input {
            name: format!("synthetic {s}×"),
            synth: Some((s, packages, sha256_file(&path))),
            path,
            primary: false,
        });
    }
    assert!(!inputs.is_empty(), "no catalogs to measure");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("client runtime");

    let mut rows = Vec::new();
    let mut bundle_floor = None;
    for (idx, input) in inputs.iter().enumerate() {
        eprintln!("harness: == {} ==", input.name);
        let db = work.join(format!("catalog-{idx}.db"));
        let _ = std::fs::remove_file(&db);
        let errf = work.join("child.stderr");
        let mut row = Row {
            name: input.name.clone(),
            source_mb: file_mb(&input.path),
            synth: input.synth.clone(),
            primary: input.primary,
            ..Default::default()
        };
        // The floor, then ingest, each in a child process.
        let floors: Vec<ChildStats> = (0..if a.smoke { 1 } else { 3 })
            .map(|_| {
                procs::run_child(Command::new(&me).arg("floor-parse").arg(&input.path), &errf)
                    .unwrap_or_else(|e| panic!("parse floor: {e}"))
            })
            .collect();
        row.floor = *floors.iter().min_by_key(|s| s.wall).expect("one floor run");
        row.ingest = procs::run_child(
            Command::new(&bin)
                .arg("ingest")
                .arg(&input.path)
                .arg("-o")
                .arg(&db)
                .arg("-q"),
            &errf,
        )
        .unwrap_or_else(|e| panic!("ingest {}: {e}", input.name));
        row.db_mb = file_mb(&db);
        eprintln!(
            "harness: floor {:.2?} / ingest {:.2?}",
            row.floor.wall, row.ingest.wall
        );
        let keys = Arc::new(read_keys(&db));
        row.packages = keys.packages.len();
        let log = work.join("serve.log");

        // Start-up: median of several starts.
        for _ in 0..starts {
            let mut s = Server::spawn(&bin, &db, None, &log);
            let t = rt
                .block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
                .unwrap_or_else(|e| panic!("{e}"));
            row.starts_ms.push(t.as_secs_f64() * 1e3);
        }
        // One server for the rest, with the default thread count.
        let mut s = Server::spawn(&bin, &db, None, &log);
        rt.block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
            .unwrap_or_else(|e| panic!("{e}"));
        if s.wait_log("integrity check passed", Duration::from_secs(120)) {
            row.verify_ms = parse_elapsed(&s.log_text(), "integrity check passed");
        }
        std::thread::sleep(Duration::from_millis(if a.smoke { 100 } else { 500 }));
        row.idle_kb = s.rss_kb();
        row.list = Some(rt.block_on(load::list_bundles(&s)));
        row.hwm_kb = s.hwm_kb();
        // The floor runs before and after the RPCs; the better run counts.
        for rpc in SEQUENCE {
            if rpc == Rpc::GetBundleThatReplaces && keys.replaced.is_empty() {
                continue;
            }
            for callers in [1, 64] {
                let st = rt.block_on(load::unary(&s, rpc, callers, keys.clone(), warmup, dur));
                eprintln!(
                    "harness: {} ×{callers}: {:.0}/s p50 {:.0}µs p99 {:.0}µs",
                    rpc.label(),
                    st.rps,
                    st.p50_us,
                    st.p99_us
                );
                keep_best(&mut row.unary, (rpc, callers, st));
            }
        }
        if input.primary {
            eprintln!("harness: bundle RPCs against the same-bytes floor");
            bundle_floor = Some((
                input.name.clone(),
                floor::measure(&rt, &s, &keys, &work, warmup, dur),
            ));
        }
        std::thread::sleep(Duration::from_millis(if a.smoke { 100 } else { 500 }));
        row.idle_after_kb = s.rss_kb();
        drop(s);

        if input.primary {
            for threads in [1, 2] {
                let mut s = Server::spawn(&bin, &db, Some(threads), &log);
                rt.block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
                    .unwrap_or_else(|e| panic!("{e}"));
                s.wait_log("integrity check passed", Duration::from_secs(120));
                let mut runs = Vec::new();
                for rpc in SEQUENCE {
                    if rpc == Rpc::GetBundleThatReplaces && keys.replaced.is_empty() {
                        continue;
                    }
                    let st = rt.block_on(load::unary(&s, rpc, 64, keys.clone(), warmup, dur));
                    keep_best(&mut runs, (rpc, threads, st));
                }
                row.threads
                    .extend(runs.into_iter().map(|(r, t, st)| (t, r, st)));
            }
        }
        row.upgrade = measure_upgrade(&bin, &db, &errf, if a.smoke { 1 } else { 5 });
        row.diff = procs::run_child(
            Command::new(&bin)
                .arg("diff")
                .arg(&db)
                .arg(&input.path)
                .args(["-o", "json"]),
            &errf,
        )
        .map_err(|e| eprintln!("harness: diff: {e}"))
        .ok();
        rows.push(row);
        if !a.smoke {
            let _ = std::fs::remove_file(&db);
        }
    }

    let mut report = render(&a, &rows, dur, warmup, starts);
    if let Some((name, res)) = &bundle_floor {
        floor::section(&mut report, name, res);
    }
    // The primary catalog again, this time from a registry.
    if let Some(primary) = inputs.iter().find(|i| i.primary) {
        eprintln!("harness: == {} from a registry ==", primary.name);
        let row = image::measure(&bin, &primary.path, &work);
        if let Err(e) = &row {
            eprintln!("harness: registry ingest not measured: {e}");
        }
        image::section(&mut report, &primary.name, &row);
        eprintln!("harness: == {}: catalogd HTTP API ==", primary.name);
        let row = http::measure(&bin, &primary.path, &work, dur);
        if let Err(e) = &row {
            eprintln!("harness: HTTP API not measured: {e}");
        }
        http::section(&mut report, &primary.name, &row);
    }
    // Issue 17's rows: OLM fan-out and memory under load on the primary catalog, and growth.
    let primary = inputs.iter().find(|i| i.primary);
    olm_rows::append(
        &mut report,
        &bin,
        &work,
        primary.map_or("", |p| p.name.as_str()),
        primary.map(|p| p.path.as_path()),
        &olm_rows::Plan::new(a.smoke, a.seed),
    );
    match &a.out {
        Some(p) => std::fs::write(p, report).expect("write report"),
        None => print!("{report}"),
    }
}

/// Drops ANSI colour sequences (`ESC [ ... m`), which the server's text log may contain.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The order of the unary runs: the empty-RPC floor first and last.
const SEQUENCE: [Rpc; 4] = [
    Rpc::Empty,
    Rpc::GetPackage,
    Rpc::GetBundleThatReplaces,
    Rpc::Empty,
];

/// Adds a run, or replaces an earlier run of the same RPC and key if this one is faster.
fn keep_best(runs: &mut Vec<(Rpc, usize, LoadStats)>, run: (Rpc, usize, LoadStats)) {
    match runs.iter_mut().find(|r| r.0 == run.0 && r.1 == run.1) {
        Some(old) if old.2.rps < run.2.rps => *old = run,
        Some(_) => {}
        None => runs.push(run),
    }
}

/// `elapsed_ms=N` from the log line containing `needle`.
fn parse_elapsed(log: &str, needle: &str) -> Option<f64> {
    let log = strip_ansi(log);
    let line = log.lines().find(|l| l.contains(needle))?;
    let at = line.find("elapsed_ms")?;
    let digits: String = line[at..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

fn read_keys(db: &Path) -> Keys {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open db");
    let packages: Vec<String> = c
        .prepare("SELECT name FROM package ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let all: Vec<(String, String, String)> = c
        .prepare(
            "SELECT DISTINCT package, channel, to_bundle FROM edge
             WHERE kind IN ('replaces', 'skips') AND synthetic = 0
             ORDER BY package, channel, to_bundle",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // A deterministic spread of at most 4096 keys.
    let step = all.len().div_ceil(4096).max(1);
    let replaced = all.into_iter().step_by(step).collect();
    let mut keys = Keys {
        packages,
        replaced,
        entries: Vec::new(),
        channels: Vec::new(),
        gvks: Vec::new(),
    };
    floor::read_bundle_keys(&c, &mut keys);
    keys
}

fn measure_upgrade(bin: &Path, db: &Path, errf: &Path, runs: usize) -> Option<Upgrade> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .ok()?;
    let (package, bundles): (String, i64) = c
        .query_row(
            "SELECT package, COUNT(*) FROM bundle GROUP BY package ORDER BY 2 DESC, 1 LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok()?;
    let channel: String = c
        .query_row(
            "SELECT default_channel FROM package WHERE name = ?1",
            [&package],
            |r| r.get(0),
        )
        .ok()?;
    let from: String = c
        .query_row(
            "SELECT bundle FROM channel_entry WHERE package = ?1 AND channel = ?2
             ORDER BY position DESC, bundle LIMIT 1",
            [&package, &channel],
            |r| r.get(0),
        )
        .ok()?;
    let time = |semantics: &str| -> f64 {
        let v: Vec<f64> = (0..runs)
            .map(|_| {
                procs::run_child(
                    Command::new(bin).arg("upgrade").arg(db).args([
                        "-p",
                        &package,
                        "--from",
                        &from,
                        "--semantics",
                        semantics,
                        "-o",
                        "json",
                    ]),
                    errf,
                )
                .unwrap_or_else(|e| panic!("upgrade: {e}"))
                .wall
                .as_secs_f64()
                    * 1e3
            })
            .collect();
        median(&v)
    };
    let out = Command::new(bin)
        .arg("upgrade")
        .arg(db)
        .args(["-p", &package, "--from", &from, "-o", "json"])
        .output()
        .ok()?;
    let hops = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v.get("path").and_then(|p| p.as_array()).map(|p| p.len()))
        .unwrap_or(0);
    Some(Upgrade {
        classic_ms: time("classic"),
        v1_ms: time("v1"),
        package,
        bundles,
        channel,
        from,
        hops,
    })
}

fn machine() -> Vec<(String, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let mem_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("PRETTY_NAME="))
        .map(|l| {
            l.trim_start_matches("PRETTY_NAME=")
                .trim_matches('"')
                .to_string()
        })
        .unwrap_or_default();
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    vec![
        ("CPU".into(), model),
        ("cores".into(), cores.to_string()),
        (
            "RAM".into(),
            format!("{:.1} GiB", mem_kb as f64 / 1024.0 / 1024.0),
        ),
        ("kernel".into(), kernel),
        ("OS".into(), os),
        ("rustc".into(), rustc),
    ]
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn find(row: &Row, rpc: Rpc, callers: usize) -> Option<&LoadStats> {
    row.unary
        .iter()
        .find(|(r, c, _)| *r == rpc && *c == callers)
        .map(|(_, _, s)| s)
}

fn render(a: &RunArgs, rows: &[Row], dur: Duration, warmup: Duration, starts: usize) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "# Benchmarks\n");
    let _ = writeln!(
        w,
        "Generated by `{}` on {}{}. Every figure below comes from one run of that command on this machine; \
         nothing is edited by hand.\n",
        a.command,
        today(),
        if a.smoke { " (**smoke run: tiny inputs, short phases; not for comparison**)" } else { "" }
    );
    let _ = writeln!(w, "## Machine\n\n| | |\n|---|---|");
    for (k, v) in machine() {
        let _ = writeln!(w, "| {k} | {v} |");
    }
    let _ = writeln!(
        w,
        "\nRelease profile. Client and server run on the same machine and share its cores.\n"
    );

    // Targets, on the primary (largest real) catalog and over every catalog for the unary ones.
    let primary = rows.iter().find(|r| r.primary).or(rows.first());
    if let Some(p) = primary {
        let _ = writeln!(w, "## Targets\n\nMeasured on **{}** (the largest real catalog) unless a row says otherwise.\n", p.name);
        let _ = writeln!(w, "| target | limit | measured | met |\n|---|---|---|---|");
        let mut target = |what: &str, limit: &str, measured: String, ok: bool| {
            let _ = writeln!(
                w,
                "| {what} | {limit} | {measured} | {} |",
                if ok { "yes" } else { "**no**" }
            );
        };
        let start = median(&p.starts_ms);
        target(
            "start → health SERVING (built DB)",
            "≤ 100 ms",
            format!("{start:.0} ms (median of {starts})"),
            start <= 100.0,
        );
        target(
            "idle RSS while serving",
            "≤ 25 MB",
            format!("{:.1} MB", mb(p.idle_kb)),
            mb(p.idle_kb) <= 25.0,
        );
        if let Some(l) = &p.list {
            target(
                "full ListBundles, every message decoded",
                "≤ 1.5 s",
                format!("{:.2} s ({} messages)", l.secs, l.msgs),
                l.secs <= 1.5,
            );
        }
        for rpc in [Rpc::GetPackage, Rpc::GetBundleThatReplaces] {
            if let (Some(s), Some(f)) = (find(p, rpc, 64), find(p, Rpc::Empty, 64)) {
                let r = s.rps / f.rps;
                target(
                    &format!("{} throughput at 64 callers / empty-RPC floor", rpc.label()),
                    "≥ 0.6×",
                    format!("{:.0}/s vs {:.0}/s = {r:.2}×", s.rps, f.rps),
                    r >= 0.6,
                );
                target(
                    &format!("{} p99 at 64 callers", rpc.label()),
                    "≤ 5 ms",
                    format!("{:.2} ms", s.p99_us / 1e3),
                    s.p99_us <= 5000.0,
                );
            }
        }
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "## Catalogs\n");
    let _ = writeln!(w, "| catalog | source MB | packages | bundles (ListBundles messages) | built DB MB | synthetic: scale, packages, sha256 |\n|---|---|---|---|---|---|");
    for r in rows {
        let syn = r
            .synth
            .as_ref()
            .map(|(s, p, h)| format!("{s}×, {p}, `{}…`", &h[..16]))
            .unwrap_or_else(|| "real".into());
        let _ = writeln!(
            w,
            "| {} | {:.1} | {} | {} | {:.1} | {syn} |",
            r.name,
            r.source_mb,
            r.packages,
            r.list.as_ref().map(|l| l.msgs).unwrap_or(0),
            r.db_mb
        );
    }

    let _ = writeln!(w, "\n## Ingest\n\nFloor: a child process that reads the file and decodes every JSON document into a `serde_json::Value` with nothing else built (best of 3). Ingest: `opreg ingest FILE -o DB -q`, one run. Wall time is from spawn to exit; peak RSS is the child's `ru_maxrss` (wait4).\n");
    let _ = writeln!(w, "| catalog | floor (s) | floor peak RSS (MB) | ingest (s) | × floor | ingest peak RSS (MB) | × floor | ingest CPU (s) |\n|---|---|---|---|---|---|---|---|");
    for r in rows {
        let (fw, iw) = (r.floor.wall.as_secs_f64(), r.ingest.wall.as_secs_f64());
        let _ = writeln!(
            w,
            "| {} | {fw:.2} | {:.0} | {iw:.2} | {:.1}× | {:.0} | {:.1}× | {:.2} |",
            r.name,
            mb(r.floor.maxrss_kb),
            iw / fw,
            mb(r.ingest.maxrss_kb),
            r.ingest.maxrss_kb as f64 / r.floor.maxrss_kb.max(1) as f64,
            r.ingest.cpu.as_secs_f64()
        );
    }

    let _ = writeln!(w, "\n## Serving: start-up, memory, ListBundles\n\nstart → SERVING: from spawning `opreg serve DB` to the first health `SERVING` answer (polled every millisecond), median of {starts} starts (min–max). Integrity check done: when the full SQLite page check, which runs after SERVING, passed (ms after loading began, from the server's log). Idle RSS: 0.5 s after SERVING; after load: after every unary run below. ListBundles: one tonic client on a fresh connection decodes every message; RSS sampled every 128 messages; peak = VmHWM at the end.\n");
    let _ = writeln!(w, "| catalog | start → SERVING (ms) | integrity check done (ms) | idle RSS (MB) | ListBundles (s) | messages/s | MB streamed | RSS during ListBundles (MB) | peak RSS (MB) | idle RSS after load (MB) |\n|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let (lo, hi) = r
            .starts_ms
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let l = r.list.as_ref();
        let _ = writeln!(
            w,
            "| {} | {:.0} ({lo:.0}–{hi:.0}) | {} | {:.1} | {:.2} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} |",
            r.name,
            median(&r.starts_ms),
            r.verify_ms.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into()),
            mb(r.idle_kb),
            l.map(|l| l.secs).unwrap_or(0.0),
            l.map(|l| l.msgs as f64 / l.secs).unwrap_or(0.0),
            l.map(|l| l.bytes as f64 / 1e6).unwrap_or(0.0),
            mb(l.map(|l| l.rss_peak_kb).unwrap_or(0)),
            mb(r.hwm_kb),
            mb(r.idle_after_kb)
        );
    }

    let _ = writeln!(
        w,
        "\n## Unary RPCs\n\nClosed loop: N callers each send one call at a time for {:.1} s after a {:.1} s warm-up, over ⌈N/8⌉ HTTP/2 connections (1 for 1 caller, 8 for 64). The client is a tonic client on a 1-worker tokio runtime in the harness process. Floor: an empty unary RPC (`grpc.health.v1.Health/Check`, answered from memory) on the **same server process** with the same runtime, thread count, connections and client, measured in the same run, once before and once after the RPCs (the faster run counts). Keys: every package name; GetBundleThatReplaces: (package, channel, bundle) triples with a replacing bundle in that channel (up to 4096, spread over the catalog). Server CPU per call from /proc/PID/stat; the client's from getrusage. The server runs with the default worker threads (= cores).\n",
        dur.as_secs_f64(),
        warmup.as_secs_f64()
    );
    let _ = writeln!(w, "| catalog | RPC | callers | calls/s | × floor | p50 (ms) | p99 (ms) | server CPU µs/call | client CPU µs/call |\n|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        for (rpc, callers, s) in &r.unary {
            let floor = find(r, Rpc::Empty, *callers)
                .map(|f| s.rps / f.rps)
                .unwrap_or(0.0);
            let _ = writeln!(
                w,
                "| {} | {} | {callers} | {:.0} | {floor:.2}× | {:.3} | {:.3} | {:.0} | {:.0} |",
                r.name,
                rpc.label(),
                s.rps,
                s.p50_us / 1e3,
                s.p99_us / 1e3,
                s.server_cpu_us,
                s.client_cpu_us
            );
        }
    }

    if let Some(p) = rows.iter().find(|r| !r.threads.is_empty()) {
        let _ = writeln!(w, "\n## Worker threads\n\n`opreg serve --threads N` (or `OPREG_THREADS`), 64 callers, **{}**. The client's one thread shares the same {} cores, so with 2 server threads the server and the client compete for CPU.\n", p.name, machine()[1].1);
        let _ = writeln!(w, "| RPC | threads | calls/s | × floor (same threads) | p50 (ms) | p99 (ms) | server CPU µs/call |\n|---|---|---|---|---|---|---|");
        for (t, rpc, s) in &p.threads {
            let floor = p
                .threads
                .iter()
                .find(|(t2, r2, _)| t2 == t && *r2 == Rpc::Empty)
                .map(|(_, _, f)| s.rps / f.rps)
                .unwrap_or(0.0);
            let _ = writeln!(
                w,
                "| {} | {t} | {:.0} | {floor:.2}× | {:.3} | {:.3} | {:.0} |",
                rpc.label(),
                s.rps,
                s.p50_us / 1e3,
                s.p99_us / 1e3,
                s.server_cpu_us
            );
        }
    }

    let _ = writeln!(w, "\n## opreg upgrade\n\n`opreg upgrade DB -p PACKAGE --from TAIL --semantics S -o json` on the package with the most bundles, from the entry farthest from the head of its default channel: process start to exit (includes opening and checking the database), median of 5.\n");
    let _ = writeln!(w, "| catalog | package (bundles) | from | hops (classic) | classic (ms) | v1 (ms) |\n|---|---|---|---|---|---|");
    for r in rows {
        if let Some(u) = &r.upgrade {
            let _ = writeln!(
                w,
                "| {} | {} ({}) | {} in {} | {} | {:.0} | {:.0} |",
                r.name, u.package, u.bundles, u.from, u.channel, u.hops, u.classic_ms, u.v1_ms
            );
        }
    }
    let _ = writeln!(w, "\n## opreg diff\n\n`opreg diff DB SOURCE -o json`: the built database against the catalog it was built from (both read and validated, every version of every channel resolved for stranding under classic rules), process start to exit.\n");
    let _ = writeln!(w, "| catalog | wall (s) | peak RSS (MB) |\n|---|---|---|");
    for r in rows {
        if let Some(d) = &r.diff {
            let _ = writeln!(
                w,
                "| {} | {:.1} | {:.0} |",
                r.name,
                d.wall.as_secs_f64(),
                mb(d.maxrss_kb)
            );
        }
    }
    let _ = writeln!(w, "\n## Method notes\n\n* Synthetic catalogs: `cargo bench --bench harness -- gen --scale S --seed {} -o FILE` writes the same bytes for the same seed (sha256 above); 64 packages per unit of scale, package `i` depends only on (seed, i). See `benches/harness/synth.rs` for the shape.\n* Every server is a separate `opreg serve` process on a loopback port; the harness kills it after use.", a.seed);
    o
}
