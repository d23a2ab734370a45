//! The issue-17 rows run after the main suite: OLM fan-out and memory under load on the
//! primary catalog (`fanout.rs`, `memload.rs`), and growth up to 64× (`growth.rs`). Also the
//! `rows` subcommand, which runs just these against one catalog.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What to run.
pub struct Plan {
    /// Requests in the memory-under-load run.
    pub requests: usize,
    /// Growth scales, smallest first (empty: no growth section).
    pub growth: Vec<f64>,
    pub seed: u64,
    /// Seconds of idle watched after the memory load (the target's window is 10 s).
    pub idle_secs: u64,
    /// Write the growth plot to docs/ (the full run, whose report links it) rather than the
    /// work directory.
    pub svg_in_docs: bool,
}

impl Plan {
    pub fn new(smoke: bool, seed: u64) -> Plan {
        Plan {
            requests: if smoke { 20_000 } else { 1_000_000 },
            growth: if smoke {
                vec![0.05, 0.1, 0.2]
            } else {
                vec![1.0, 4.0, 16.0, 64.0]
            },
            seed,
            idle_secs: if smoke { 2 } else { 10 },
            svg_in_docs: !smoke,
        }
    }
}

/// Ingests `catalog` once and appends the fan-out and memory sections for it, then growth.
pub fn append(
    report: &mut String,
    bin: &Path,
    work: &Path,
    name: &str,
    catalog: Option<&Path>,
    plan: &Plan,
) {
    if let Some(catalog) = catalog {
        let db = work.join("olm-rows.db");
        let _ = std::fs::remove_file(&db);
        let built = crate::procs::run_child(
            Command::new(bin)
                .arg("ingest")
                .arg(catalog)
                .arg("-o")
                .arg(&db)
                .arg("-q"),
            &work.join("olm-rows.stderr"),
        );
        match built {
            Err(e) => {
                crate::fanout::section(report, name, &Err(format!("ingest: {e}")));
                crate::memload::section(report, name, &Err(format!("ingest: {e}")));
            }
            Ok(_) => {
                eprintln!("harness: == {name}: OLM fan-out ==");
                let f = crate::fanout::measure(bin, &db, work);
                crate::fanout::section(report, name, &f);
                eprintln!(
                    "harness: == {name}: memory under load ({} requests) ==",
                    plan.requests
                );
                let m = crate::memload::measure(bin, &db, work, plan.requests, plan.idle_secs);
                crate::memload::section(report, name, &m);
            }
        }
        let _ = std::fs::remove_file(&db);
    }
    if !plan.growth.is_empty() {
        eprintln!("harness: == growth {:?} ==", plan.growth);
        let g = crate::growth::measure(bin, work, plan.seed, &plan.growth);
        let mut link = None;
        if let Ok(points) = &g {
            if points.len() >= 2 {
                let path: PathBuf = crate::growth::svg_path(plan.svg_in_docs, work);
                match std::fs::write(&path, crate::growth::svg(points)) {
                    Ok(()) => {
                        link = Some(if plan.svg_in_docs {
                            "docs/bench-growth.svg".into()
                        } else {
                            path.display().to_string()
                        })
                    }
                    Err(e) => eprintln!("harness: {}: {e}", path.display()),
                }
            }
        }
        crate::growth::section(report, &g, link.as_deref());
    }
}
