//! `opreg mirror`'s plan alone: each catalog of an ImageSetConfiguration pinned, pulled, read,
//! filtered, its dependencies added, its channel heads repaired and the result validated, then
//! the list of images, exactly as `opreg mirror` makes it (the library's `mirror::plan::plan`),
//! in a process set up as the `opreg` binary is (its allocator and memory settings). A dry run
//! goes on to inspect every planned image at its source; this stops at the plan, so that the
//! plan can be measured on a machine that cannot reach the images' registries
//! (`scripts/bench.sh --filter` does).
//!
//! ```text
//! cargo build --release --example mirror-plan
//! target/release/examples/mirror-plan CONFIG [--use-http] [--image-cache DIR] [--summary FILE]
//! ```
//!
//! Prints (or writes to FILE) a one-line JSON summary: bundles in the source catalogs and in
//! the filtered ones, the bundles added for dependencies, the number of images, the warnings.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use opreg::mirror::plan::{self, PlanOptions};
use std::path::PathBuf;

const USAGE: &str = "usage: mirror-plan CONFIG [--use-http] [--image-cache DIR] [--summary FILE]";

struct Args {
    config: PathBuf,
    use_http: bool,
    image_cache: Option<PathBuf>,
    summary: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args_os().skip(1);
    let mut config = None;
    let (mut use_http, mut image_cache, mut summary) = (false, None, None);
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--use-http") => use_http = true,
            Some("--image-cache") => image_cache = it.next().map(PathBuf::from),
            Some("--summary") => summary = it.next().map(PathBuf::from),
            Some(s) if s.starts_with('-') => return Err(format!("unknown flag {s}; {USAGE}")),
            _ if config.is_none() => config = Some(PathBuf::from(a)),
            _ => return Err(USAGE.into()),
        }
    }
    Ok(Args {
        config: config.ok_or(USAGE)?,
        use_http,
        image_cache,
        summary,
    })
}

fn run() -> Result<(), String> {
    let a = args()?;
    let cfg = opreg::mirror::run::read_config(&a.config).map_err(|e| e.detail())?;
    let opts = PlanOptions {
        image: opreg::image::ImageOptions {
            connection: opreg::registry::Connection {
                use_http: a.use_http,
                ..Default::default()
            },
            image_cache: a.image_cache,
            ..Default::default()
        },
        // Only names the images at the destination; nothing is sent there.
        destination: "mirror.example.com/plan".into(),
        max_nested_paths: 0,
    };
    let p = plan::plan(&cfg, &opts).map_err(|e| e.detail())?;
    let bundles =
        |c: &opreg::model::Catalog| -> usize { c.packages.values().map(|p| p.bundles.len()).sum() };
    let summary = serde_json::json!({
        "catalogs": p.catalogs.len(),
        "bundlesInSource": p.catalogs.iter().map(|c| c.bundles_in_source).sum::<usize>(),
        "bundlesKept": p.catalogs.iter().map(|c| bundles(&c.catalog)).sum::<usize>(),
        "packagesKept": p.catalogs.iter().map(|c| c.catalog.packages.len()).sum::<usize>(),
        "added": p.catalogs.iter().flat_map(|c| &c.added).map(|a| &a.bundle).collect::<Vec<_>>(),
        "warnings": p.catalogs.iter().flat_map(|c| &c.warnings).collect::<Vec<_>>(),
        "images": p.images.len(),
    })
    .to_string();
    match &a.summary {
        Some(f) => std::fs::write(f, summary).map_err(|e| format!("{}: {e}", f.display())),
        None => {
            println!("{summary}");
            Ok(())
        }
    }
}

fn main() {
    // As the binary does, before anything allocates.
    opreg::memory::at_start();
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
