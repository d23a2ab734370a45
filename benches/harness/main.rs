//! opreg's benchmark harness (issue 7). `scripts/bench.sh` runs it and writes BENCHMARKS.md.
//!
//! For each catalog (the largest real ones in `../shared/testdata/corpus`, and synthetic ones
//! at scales 1×, 4× and 16× from the deterministic generator in `synth.rs`) it measures, in
//! child processes of its own:
//!
//! * `opreg ingest`: wall time, CPU time and peak RSS, next to the floor: parsing the same input
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
//!   change to the new content served (`http.rs`);
//! * outside `--smoke`, `opreg validate --images` at the community catalog's scale
//!   (`image_checks.rs`) and `opreg mirror delete`'s two phases against stand-in images
//!   (`mirror_delete.rs`, `stand_ins.rs`), both in registries on loopback.
//!
//! Subcommands: `run` (the suite; `--smoke` for a seconds-long run on tiny inputs, `--baseline
//! BIN` for the side-by-side section, `--step BIN` for a build in between), `gen` (write a
//! synthetic catalog), `probe`, `floor`, `rows`, `catalogd`, `signing`, `filter`, `image-checks`,
//! `delete`, `image` and `baseline` (one measurement alone, for iterating), and internal ones
//! run as children (`floor-parse`, `floor-serve`, `file-server`).

mod baseline;
mod baseline_images;
mod cli;
mod corpus;
mod curl_peer;
mod fanout;
mod filter;
mod floor;
mod growth;
mod http;
mod http_tls;
mod image;
mod image_build;
mod image_checks;
mod load;
mod measure;
mod memload;
mod mirror_delete;
mod olm_rows;
mod parts;
mod peaks;
mod procs;
mod report;
mod signing;
mod stand_ins;
mod synth;

use clap::Parser;
use cli::{Cli, Cmd, RunArgs};
use load::{Keys, LoadStats, Rpc};
use measure::{
    file_mb, floor_parse, mb, measure_upgrade, median, probe, read_keys, sha256_file, Upgrade,
};
use procs::{ChildStats, Server};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const DEFAULT_SEED: u64 = 20_240_601;

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
        Some(Cmd::Gaps { report }) => {
            let text = std::fs::read_to_string(&report).expect("read the report");
            let mut text = report::without_known_gaps(&text);
            report::known_gaps(&mut text);
            std::fs::write(&report, text).expect("write the report");
        }
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
        Some(Cmd::Baseline {
            catalog,
            bin,
            label,
            rounds,
            work,
        }) => baseline::alone(&catalog, &bin, &label, rounds, &work),
        Some(Cmd::Floor { db, duration, work }) => floor::alone(&db, duration, &work),
        Some(Cmd::Rows {
            catalog,
            requests,
            growth,
            work,
        }) => parts::rows(&catalog, requests, growth, &work),
        Some(Cmd::Catalogd {
            catalog,
            duration,
            rounds,
            work,
        }) => parts::catalogd(&catalog, Duration::from_secs_f64(duration), rounds, &work),
        Some(Cmd::ImageChecks { rounds, work }) => {
            match image_checks::measure(&procs::opreg_bin(), &work, rounds) {
                Ok(table) => print!("{table}"),
                Err(e) => {
                    eprintln!("harness: image checks: {e}");
                    std::process::exit(1);
                }
            }
        }
        Some(Cmd::Signing {
            catalog,
            rounds,
            work,
        }) => match signing::measure(&procs::opreg_bin(), &catalog, &work, rounds) {
            Ok(table) => print!("{table}"),
            Err(e) => {
                eprintln!("signing: {e}");
                std::process::exit(1);
            }
        },
        Some(Cmd::Filter {
            catalog,
            rounds,
            work,
        }) => match filter::measure(
            &filter::plan_bin(),
            &procs::opreg_bin(),
            &catalog,
            &work,
            rounds,
        ) {
            Ok(section) => print!("{section}"),
            Err(e) => {
                eprintln!("filter: {e}");
                std::process::exit(1);
            }
        },
        Some(Cmd::Delete {
            catalog,
            delete_rounds,
            generate_rounds,
            work,
        }) => {
            let m = mirror_delete::measure(
                &procs::opreg_bin(),
                Some(&catalog),
                &work,
                (delete_rounds, generate_rounds),
            );
            print!("{}", mirror_delete::section(&m));
            if m.delete.is_err() || m.generate.is_err() {
                std::process::exit(1);
            }
        }
        Some(Cmd::Image {
            catalog,
            bins,
            rounds,
            work,
        }) => {
            if let Err(e) = image::compare(&bins, &catalog, &work, rounds) {
                eprintln!("harness image: {e}");
                std::process::exit(1);
            }
        }
        None => {
            eprintln!("harness: no subcommand; see --help. Use scripts/bench.sh for the suite.");
        }
    }
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

fn run(mut a: RunArgs) {
    let bin = procs::opreg_bin();
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

    let rt = load::client_runtime().expect("client runtime");

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
        // Best of 3, as the floor.
        let ingests: Vec<ChildStats> = (0..if a.smoke { 1 } else { 3 })
            .map(|_| {
                let _ = std::fs::remove_file(&db);
                procs::run_child(
                    Command::new(&bin)
                        .arg("ingest")
                        .arg(&input.path)
                        .arg("-o")
                        .arg(&db)
                        .arg("-q"),
                    &errf,
                )
                .unwrap_or_else(|e| panic!("ingest {}: {e}", input.name))
            })
            .collect();
        row.ingest = *ingests
            .iter()
            .min_by_key(|s| s.wall)
            .expect("one ingest run");
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
            row.verify_ms = procs::parse_elapsed(&s.log_text(), "integrity check passed");
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

    // `opreg mirror delete` against stand-ins in registries of its own (the full run only); its
    // rows go into the Targets table, so it is measured before the report is rendered.
    let delete = (!a.smoke).then(|| {
        eprintln!("harness: == opreg mirror delete ==");
        let community = corpus
            .as_ref()
            .map(|d| d.join("community-operators.fbc.json"))
            .filter(|p| p.is_file());
        mirror_delete::measure(&bin, community.as_deref(), &work, (3, 5))
    });
    let more = delete
        .as_ref()
        .map(mirror_delete::targets)
        .unwrap_or_default();
    let mut report = report::render(&a, &rows, &more, dur, warmup, starts);
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
        eprintln!("harness: == {}: image build and push ==", primary.name);
        let row = image_build::measure(&bin, &primary.path, &work);
        if let Err(e) = &row {
            eprintln!("harness: image build not measured: {e}");
        }
        image_build::section(&mut report, &primary.name, &row);
        eprintln!("harness: == {}: catalogd HTTP API ==", primary.name);
        let rounds = if a.smoke { 1 } else { 3 };
        let row = http::measure(&bin, &primary.path, &work, dur, rounds);
        if let Err(e) = &row {
            eprintln!("harness: HTTP API not measured: {e}");
        }
        http::section(&mut report, &primary.name, &row);
        eprintln!("harness: == {}: build peaks ==", primary.name);
        let peaks = peaks::measure(&bin, &primary.path, &work, if a.smoke { 1 } else { 3 });
        if let Err(e) = &peaks {
            eprintln!("harness: build peaks not measured: {e}");
        }
        peaks::section(&mut report, &primary.name, &peaks);
    }
    // `validate --images` on a synthetic catalog of the community catalog's scale (its own
    // stand-in registry, so the full run only: the smoke run skips it).
    if !a.smoke {
        eprintln!("harness: == validate --images at the community catalog's scale ==");
        let _ = writeln!(report, "\n## Checking a catalog's images\n");
        match image_checks::measure(&bin, &work, 3) {
            Ok(table) => report.push_str(&table),
            Err(e) => {
                eprintln!("harness: image checks not measured: {e}");
                let _ = writeln!(report, "Not measured: {e}");
            }
        }
    }
    if let Some(m) = &delete {
        report.push_str(&mirror_delete::section(m));
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
    if let (Some(old), Some(p)) = (&a.baseline, primary) {
        let step = a
            .step
            .as_ref()
            .map(|b| (b.as_path(), a.step_label.as_str()));
        let base = baseline::Plan {
            baseline: old,
            label: &a.baseline_label,
            bin: &bin,
            bin_label: baseline::THIS_BUILD,
            catalog: &p.path,
            work: &work,
            warmup,
            dur,
            rounds: if a.smoke { 1 } else { 3 },
        };
        baseline::sections(&mut report, &rt, &p.name, &base, step);
    }
    report::known_gaps(&mut report);
    match &a.out {
        Some(p) => std::fs::write(p, report).expect("write report"),
        None => print!("{report}"),
    }
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
