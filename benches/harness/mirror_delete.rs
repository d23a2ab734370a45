//! `opreg mirror delete` (`scripts/bench.sh --delete`), two figures against `docker-registry`
//! on loopback (plain HTTP, deletes enabled at the destination):
//!
//! * phase 2 on 200 images: 200 small distinct stand-ins (`stand_ins.rs`) mirrored as a
//!   configuration's `additionalImages`, the list generated from a DeleteImageSetConfiguration
//!   naming all 200, then timed: `opreg mirror delete --delete-yaml-file` of that list. Each
//!   round mirrors again and generates again first (not timed). Target: under 10 s.
//! * phase 1 over a catalog mirror's workspace: the community catalog rewritten so that every
//!   image it names is a stand-in, pushed as a catalog image, the 20-package configuration of
//!   `filter.rs` planned (in this process, to push only the stand-ins it names) and mirrored
//!   once (not timed), then timed: `opreg mirror delete --generate` of a DeleteImageSetConfiguration
//!   removing 10 of those packages, each run with an empty image cache (so it pulls the
//!   mirrored catalog). Target: under 2 s.

use crate::image::{start_registry, start_registry_with, Pushed, Registry};
use crate::measure::median;
use crate::procs::{run_child, ChildStats};
use crate::report::Target;
use crate::stand_ins::{rewrite_catalog, Parts, StandIn};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Images of the first figure, and the repositories they are spread over.
const IMAGES: usize = 200;
const REPOS: usize = 10;
const DELETE_SECS: f64 = 10.0;
const GENERATE_SECS: f64 = 2.0;
/// The packages the second figure's configuration deletes: the last 10 of `filter::CONFIG`.
const REMOVED: [&str; 10] = [
    "keycloak-operator",
    "opentelemetry-operator",
    "strimzi-kafka-operator",
    "camel-k",
    "cert-manager",
    "external-secrets-operator",
    "ack-s3-controller",
    "gitlab-operator-kubernetes",
    "jaeger",
    "infinispan",
];

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

/// The first figure: wall times of phase 2.
pub struct Deletes {
    pub runs: Vec<ChildStats>,
}

/// The second figure: wall times of phase 1, images in the workspace's record, images listed.
pub struct Generates {
    pub runs: Vec<ChildStats>,
    pub standing: usize,
    pub listed: usize,
}

pub struct Measured {
    pub delete: Result<Deletes, String>,
    pub generate: Result<Generates, String>,
}

/// `bin ARGS` (plain HTTP to every registry), its cost and its stderr.
fn opreg(bin: &Path, args: &[&str], dir: &Path) -> Result<(ChildStats, String), String> {
    let errf = dir.join("child.stderr");
    let mut cmd = Command::new(bin);
    cmd.args(args).env_remove("OPREG_SIGNATURE_POLICY");
    let st = run_child(&mut cmd, &errf)?;
    Ok((st, std::fs::read_to_string(&errf).unwrap_or_default()))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `opreg mirror --use-http --config CFG --workspace WS docker://DEST` (not timed). Run again
/// (at most twice) when the destination answered a manifest PUT with DIGEST_INVALID: Debian's
/// `docker-registry` does so now and then while the same blob is linked into the repository by
/// another copy at the same time (the stand-ins all share their two blobs); a rerun copies what
/// is left, as opreg's message says.
fn mirror(bin: &Path, cfg: &Path, ws: &Path, dest: &str, dir: &Path) -> Result<(), String> {
    let cache = dir.join("cache");
    let args = [
        "mirror",
        "--use-http",
        "--config",
        s(cfg),
        "--workspace",
        s(ws),
    ];
    let mut all = args.to_vec();
    all.extend(["--image-cache", s(&cache), dest]);
    let mut tries = 0;
    loop {
        match opreg(bin, &all, dir) {
            Err(x) if tries < 2 && x.contains("DIGEST_INVALID") => {
                tries += 1;
                let line = x
                    .lines()
                    .find(|l| l.contains("DIGEST_INVALID"))
                    .unwrap_or("");
                eprintln!("harness: mirror set-up failed, running it again: {line}");
            }
            r => return r.map(|_| ()),
        }
    }
}

/// `opreg mirror delete --use-http --generate ...`, with an empty image cache; the list.
fn generate(
    bin: &Path,
    cfg: &Path,
    ws: &Path,
    dest: &str,
    dir: &Path,
) -> Result<(ChildStats, PathBuf), String> {
    let cache = dir.join("generate-cache");
    let _ = std::fs::remove_dir_all(&cache);
    let args = [
        "mirror",
        "delete",
        "--use-http",
        "--generate",
        "--config",
        s(cfg),
    ];
    let mut all = args.to_vec();
    all.extend(["--workspace", s(ws), "--image-cache", s(&cache), dest]);
    let (st, _) = opreg(bin, &all, dir)?;
    Ok((st, ws.join("delete/delete-images.yaml")))
}

fn listed(list: &Path) -> Result<usize, String> {
    let text = std::fs::read_to_string(list).map_err(|x| format!("{}: {x}", list.display()))?;
    Ok(text.matches("imageReference:").count())
}

fn write(p: &Path, text: &str) -> Result<(), String> {
    std::fs::write(p, text).map_err(|x| format!("{}: {x}", p.display()))
}

/// A fresh directory `work/name` with a source registry and a destination that takes deletes.
fn registries(work: &Path, name: &str) -> Result<(PathBuf, Registry, Registry), String> {
    let dir = work.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(e)?;
    let src = start_registry(&dir.join("src"))?;
    let dst = start_registry_with(&dir.join("dst"), true)?;
    Ok((dir, src, dst))
}

/// The first figure, `rounds` times.
fn deletes(bin: &Path, work: &Path, rounds: usize) -> Result<Deletes, String> {
    let (dir, src, dst) = registries(work, "delete-200")?;
    let host = format!("127.0.0.1:{}", src.port);
    let parts = Parts::new()?;
    let images: Vec<StandIn> = (0..IMAGES)
        .map(|i| {
            parts.stand_in(
                &format!("bench/app{}", i % REPOS),
                Some(&format!("v{i}")),
                i,
            )
        })
        .collect();
    parts.push(&src.base(), &images.iter().collect::<Vec<_>>())?;
    let names: String = images
        .iter()
        .map(|i| format!("  - name: {host}/{}:{}\n", i.repo, i.name))
        .collect();
    let (cfg, del) = (dir.join("imageset.yaml"), dir.join("delete.yaml"));
    write(&cfg, &format!("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n{names}"))?;
    write(&del, &format!("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  additionalImages:\n{names}"))?;
    let ws = dir.join("ws");
    let dest = format!("docker://127.0.0.1:{}/prefix", dst.port);
    let mut runs = Vec::new();
    for r in 0..rounds.max(1) {
        mirror(bin, &cfg, &ws, &dest, &dir)?;
        let (_, list) = generate(bin, &del, &ws, &dest, &dir)?;
        let n = listed(&list)?;
        if n != IMAGES {
            return Err(format!(
                "round {r}: the list names {n} images, not {IMAGES}"
            ));
        }
        let args = [
            "mirror",
            "delete",
            "--use-http",
            "--delete-yaml-file",
            s(&list),
            &dest,
        ];
        let (st, err) = opreg(bin, &args, &dir)?;
        if !err.contains(&format!("deleted {IMAGES} images")) {
            return Err(format!(
                "round {r}: no \"deleted {IMAGES} images\" in: {}",
                err.trim()
            ));
        }
        eprintln!("harness: mirror delete of {IMAGES} images: {:.2?}", st.wall);
        runs.push(st);
    }
    Ok(Deletes { runs })
}

/// Plans `cfg` in this process (as `opreg mirror` does) and returns the sources of its images.
fn planned_sources(cfg: &Path, cache: &Path) -> Result<Vec<String>, String> {
    use opreg::mirror::plan::{self, PlanOptions};
    let config = opreg::mirror::run::read_config(cfg).map_err(|x| x.detail())?;
    let opts = PlanOptions {
        image: opreg::image::ImageOptions {
            connection: opreg::registry::Connection {
                use_http: true,
                ..Default::default()
            },
            image_cache: Some(cache.to_path_buf()),
            ..Default::default()
        },
        destination: "mirror.example.com/plan".into(),
        max_nested_paths: 0,
    };
    let p = plan::plan(&config, &opts).map_err(|x| x.detail())?;
    Ok(p.images.into_iter().map(|i| i.wanted.source).collect())
}

/// The second figure, `rounds` times, on `catalog` (the community catalog).
fn generates(bin: &Path, catalog: &Path, work: &Path, rounds: usize) -> Result<Generates, String> {
    let repaired = crate::corpus::repaired_copy(catalog, &work.join("corpus"))
        .map_err(|x| format!("writing the repaired corpus copy: {x}"))?;
    let (dir, src, dst) = registries(work, "delete-plan")?;
    let host = format!("127.0.0.1:{}", src.port);
    let parts = Parts::new()?;
    let rewritten = dir.join(catalog.file_name().unwrap_or_default());
    let stand_ins = rewrite_catalog(&repaired, &rewritten, &host, &parts)?;
    let pushed = Pushed::new(&rewritten, &dir)?;
    let cfg = dir.join("imageset.yaml");
    write(
        &cfg,
        &crate::filter::CONFIG.replace("CATALOG", &pushed.reference),
    )?;
    let sources = planned_sources(&cfg, &dir.join("cache"))?;
    let needed = sources
        .iter()
        .map(|r| {
            stand_ins
                .get(r)
                .ok_or_else(|| format!("the plan names {r}, not a stand-in"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    eprintln!(
        "harness: {} of {} stand-ins named by the plan; pushing them",
        needed.len(),
        stand_ins.len()
    );
    parts.push(&src.base(), &needed)?;
    let ws = dir.join("ws");
    let dest = format!("docker://127.0.0.1:{}/prefix", dst.port);
    mirror(bin, &cfg, &ws, &dest, &dir)?;
    let record = std::fs::read(ws.join("standing.json")).map_err(e)?;
    let record: serde_json::Value = serde_json::from_slice(&record).map_err(e)?;
    let standing = record["images"].as_object().map_or(0, |m| m.len());
    let packages: String = REMOVED
        .iter()
        .map(|p| format!("    - name: {p}\n"))
        .collect();
    let del = dir.join("delete.yaml");
    write(&del, &format!("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  operators:\n  - catalog: {}\n    packages:\n{packages}", pushed.reference))?;
    let (mut runs, mut n) = (Vec::new(), 0);
    for _ in 0..rounds.max(1) {
        let (st, list) = generate(bin, &del, &ws, &dest, &dir)?;
        n = listed(&list)?;
        eprintln!(
            "harness: mirror delete --generate ({n} of {standing} images listed): {:.2?}",
            st.wall
        );
        runs.push(st);
    }
    drop((src, dst));
    Ok(Generates {
        runs,
        standing,
        listed: n,
    })
}

/// Both figures; the second needs the community catalog (`catalog`).
pub fn measure(
    bin: &Path,
    catalog: Option<&Path>,
    work: &Path,
    rounds: (usize, usize),
) -> Measured {
    let delete = deletes(bin, work, rounds.0);
    if let Err(x) = &delete {
        eprintln!("harness: mirror delete of {IMAGES} images not measured: {x}");
    }
    let generate = match catalog {
        Some(c) => generates(bin, c, work, rounds.1),
        None => Err("the community catalog is not in the corpus".into()),
    };
    if let Err(x) = &generate {
        eprintln!("harness: mirror delete --generate not measured: {x}");
    }
    Measured { delete, generate }
}

/// Median, lowest and highest wall time in seconds.
fn walls(runs: &[ChildStats]) -> (f64, f64, f64) {
    let w: Vec<f64> = runs.iter().map(|r| r.wall.as_secs_f64()).collect();
    let lo = w.iter().copied().fold(f64::MAX, f64::min);
    (median(&w), lo, w.iter().copied().fold(0.0, f64::max))
}

fn wall_cell(runs: &[ChildStats]) -> String {
    let (m, lo, hi) = walls(runs);
    format!("{m:.2} s ({lo:.2}–{hi:.2})")
}

/// The rows of the report's Targets table.
pub fn targets(m: &Measured) -> Vec<Target> {
    let mut t = Vec::new();
    if let Ok(d) = &m.delete {
        t.push(Target {
            what: format!("`mirror delete` of {IMAGES} images (loopback registry)"),
            limit: "< 10 s".into(),
            measured: format!("{} (median of {})", wall_cell(&d.runs), d.runs.len()),
            ok: walls(&d.runs).0 < DELETE_SECS,
        });
    }
    if let Ok(g) = &m.generate {
        t.push(Target {
            what: format!("`mirror delete --generate`, {} images mirrored", g.standing),
            limit: "< 2 s".into(),
            measured: format!("{} (median of {})", wall_cell(&g.runs), g.runs.len()),
            ok: walls(&g.runs).0 < GENERATE_SECS,
        });
    }
    t
}

/// `x` fit for a table cell.
fn one_line(x: &str) -> String {
    x.replace('\n', " ").replace('|', "/")
}

/// The report section.
pub fn section(m: &Measured) -> String {
    let mut t = format!(
        "\n## Mirror delete\n\nDebian's `docker-registry` on loopback (deletes enabled), stand-in images. \
         Phase 2: `opreg mirror delete --delete-yaml-file` of a list naming {IMAGES} images mirrored as \
         `additionalImages` (each round mirrors and generates again first, not timed). Phase 1: \
         `opreg mirror delete --generate` over the workspace of one `opreg mirror` of the 20-package \
         configuration of the community catalog (stand-ins, digests rewritten; see --filter) deleting \
         {} of its packages, with an empty image cache. Wall time: median (min–max).\n\n\
         | run | wall | target | verdict |\n|---|---|---|---|\n",
        REMOVED.len()
    );
    let verdict = |ok: bool| if ok { "MET" } else { "NOT MET" };
    match &m.delete {
        Ok(d) => {
            let _ = writeln!(
                t,
                "| phase 2: {IMAGES} images deleted, median of {} | {} | < 10 s | {} |",
                d.runs.len(),
                wall_cell(&d.runs),
                verdict(walls(&d.runs).0 < DELETE_SECS)
            );
        }
        Err(x) => {
            let x = one_line(x);
            let _ = writeln!(
                t,
                "| phase 2: {IMAGES} images | not measured: {x} | < 10 s | |"
            );
        }
    }
    match &m.generate {
        Ok(g) => {
            let _ = writeln!(
                t,
                "| phase 1: {} of {} images in the workspace listed, median of {} | {} | < 2 s | {} |",
                g.listed,
                g.standing,
                g.runs.len(),
                wall_cell(&g.runs),
                verdict(walls(&g.runs).0 < GENERATE_SECS)
            );
        }
        Err(x) => {
            let x = one_line(x);
            let _ = writeln!(t, "| phase 1 | not measured: {x} | < 2 s | |");
        }
    }
    t
}
