//! Subcommands that run one part of the suite alone, for iterating on it: the same
//! measurements and report sections as `run`, printed as Markdown.

use crate::{corpus, http, olm_rows, peaks, procs, DEFAULT_SEED};
use std::path::Path;
use std::time::Duration;

/// `rows`: the OLM fan-out and memory-under-load rows on `catalog` (and growth at the given
/// scales).
pub fn rows(catalog: &Path, requests: usize, growth: Vec<f64>, work: &Path) {
    let _ = std::fs::create_dir_all(work);
    let plan = olm_rows::Plan {
        requests,
        growth,
        // The plot of a partial run stays in the work directory.
        svg_in_docs: false,
        ..olm_rows::Plan::new(false, DEFAULT_SEED)
    };
    let mut report = String::new();
    let bin = procs::opreg_bin();
    let name = catalog.file_name().unwrap_or_default().to_string_lossy();
    // The corpus catalogs need their few broken icons replaced (corpus.rs).
    let catalog = corpus::repaired_copy(catalog, &work.join("corpus")).expect("copy");
    olm_rows::append(&mut report, &bin, work, &name, Some(&catalog), &plan);
    print!("{report}");
}

/// `catalogd`: the catalogd HTTP API section and the build peaks on `catalog`, as the suite
/// measures them on its primary catalog.
pub fn catalogd(catalog: &Path, dur: Duration, rounds: usize, work: &Path) {
    let _ = std::fs::create_dir_all(work);
    let bin = procs::opreg_bin();
    let name = catalog.file_name().unwrap_or_default().to_string_lossy();
    let catalog = corpus::repaired_copy(catalog, &work.join("corpus")).expect("copy");
    let mut report = String::new();
    let row = http::measure(&bin, &catalog, work, dur, rounds);
    if let Err(e) = &row {
        eprintln!("harness: HTTP API not measured: {e}");
    }
    http::section(&mut report, &name, &row);
    let peaks = peaks::measure(&bin, &catalog, work, rounds);
    if let Err(e) = &peaks {
        eprintln!("harness: build peaks not measured: {e}");
    }
    peaks::section(&mut report, &name, &peaks);
    print!("{report}");
}
