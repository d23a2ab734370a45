//! `opreg mirror` from start to end: read the configuration, make the plan (every catalog
//! pinned, filtered, its dependencies added, validated), then either write the plan and stop
//! (`dry_run`), or copy the images, rebuild and push each filtered catalog after its images,
//! and write the cluster resources. Nothing is copied when the plan fails.

use super::config::{self, ImageSetConfiguration};
use super::plan::{self, Plan, PlanOptions};
use super::rebuild::{self, RebuildOptions, Rebuilt};
use super::resources::{self, CatalogResource, Kind, Mirrored};
use super::transfer::{self, Inspected, Outcome, Progress, TransferOptions};
use super::workspace;
use crate::error::Error;
use crate::image::registry::Connection;
use std::path::{Path, PathBuf};

/// Where a mirror goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// `docker://REGISTRY[/PREFIX]`.
    Registry(String),
}

impl Destination {
    /// Parses `docker://REGISTRY[/PREFIX]`.
    pub fn parse(s: &str) -> Result<Destination, Error> {
        if let Some(rest) = s.strip_prefix("docker://") {
            let rest = rest.trim_end_matches('/');
            if rest.is_empty() || rest.contains('@') || rest.starts_with('/') {
                return Err(Error::Usage(format!(
                    "{s}: expected docker://REGISTRY[/PREFIX]"
                )));
            }
            crate::imageref::parse(&format!("{rest}/x"))
                .map_err(|e| Error::Usage(format!("{s}: {e}")))?;
            return Ok(Destination::Registry(rest.to_string()));
        }
        Err(Error::Usage(format!(
            "{s}: the destination is docker://REGISTRY[/PREFIX]"
        )))
    }
}

/// What to mirror, and how.
#[derive(Clone, Debug)]
pub struct MirrorOptions {
    /// The `ImageSetConfiguration` file.
    pub config: PathBuf,
    pub destination: Destination,
    /// Where the plan, the cluster resources and the run's record go.
    pub workspace: PathBuf,
    pub dry_run: bool,
    /// How to pull catalogs and the rebuild's base: the source side's connection, cache, limits.
    pub image: crate::image::ImageOptions,
    pub source: Connection,
    pub dest: Connection,
    pub parallel_images: usize,
    pub parallel_layers: usize,
    pub keep_going: bool,
    pub max_nested_paths: usize,
    pub catalog_base: Option<String>,
    pub remove_signatures: bool,
    /// Signs each rebuilt catalog after its push (it has a new digest, so no signature from
    /// its source covers it).
    pub sign_key: Option<crate::sign::keys::SigningKey>,
}

/// What a mirror did.
#[derive(Debug, Default)]
pub struct Report {
    pub plan: Plan,
    /// A dry run's reading of each image.
    pub inspected: Vec<Inspected>,
    /// Each image copied, found there already, or failed.
    pub outcomes: Vec<Outcome>,
    /// Images the run did not reach (it stopped at a failure).
    pub not_attempted: usize,
    pub rebuilt: Vec<Rebuilt>,
    /// The signature tags written for the rebuilt catalogs.
    pub signed: Vec<String>,
    /// The files written in the workspace.
    pub written: Vec<PathBuf>,
}

impl Report {
    /// Every failure, one line each.
    pub fn failures(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter_map(|o| {
                o.error
                    .as_ref()
                    .map(|e| format!("{} -> {}: {e}", o.source, o.destination))
            })
            .chain(
                self.inspected
                    .iter()
                    .zip(&self.plan.images)
                    .filter_map(|(i, img)| {
                        i.error
                            .as_ref()
                            .map(|e| format!("{}: {e}", img.wanted.source))
                    }),
            )
            .collect()
    }
}

/// Reads and validates the configuration file; the error names it.
pub fn read_config(path: &Path) -> Result<ImageSetConfiguration, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    config::parse(&text)
        .map_err(|e| Error::Usage(format!("{}: {}", path.display(), e.replace('\n', "; "))))
}

/// Runs the mirror. An `Err` is a failure before anything was copied (a bad configuration, a
/// catalog that cannot be read or filters to an invalid one); failures of single images are
/// in the report.
pub fn mirror(opts: &MirrorOptions, progress: &dyn Progress) -> Result<Report, Error> {
    let cfg = read_config(&opts.config)?;
    let Destination::Registry(dest) = &opts.destination;
    let plan = plan::plan(
        &cfg,
        &PlanOptions {
            image: opts.image.clone(),
            destination: dest.clone(),
            max_nested_paths: opts.max_nested_paths,
        },
    )?;
    let transfer = TransferOptions {
        source: opts.source.clone(),
        destination: opts.dest.clone(),
        parallel_images: opts.parallel_images,
        parallel_layers: opts.parallel_layers,
        keep_going: opts.keep_going,
        remove_signatures: opts.remove_signatures,
        max_manifest_size: opts.image.max_manifest_size,
        chunk_size: 16 << 20,
        placements: (!opts.dry_run).then(|| opts.workspace.join("placements.tsv")),
        policy: opts
            .image
            .signature_policy
            .is_some()
            .then(|| opts.image.clone()),
    };
    for op in &cfg.mirror.operators {
        if !op.target_catalog_source_template.is_empty() {
            resources::check_template(Path::new(&op.target_catalog_source_template))
                .map_err(Error::Usage)?;
        }
    }
    let mut report = Report {
        plan,
        ..Default::default()
    };
    let catalogs: Vec<(String, String)> = report
        .plan
        .catalogs
        .iter()
        .map(|c| (c.pinned.clone(), c.destination.clone()))
        .collect();
    if opts.dry_run {
        report.inspected = transfer::inspect_all(&report.plan.images, &transfer);
        let dir = opts.workspace.join("dry-run");
        let mapping = workspace::mapping(&report.plan, &report.inspected, &catalogs);
        let plan_json = workspace::plan_json(&report.plan, &report.inspected);
        write(&mut report, &dir.join("mapping.txt"), mapping.as_bytes())?;
        write(&mut report, &dir.join("plan.json"), &pretty(&plan_json))?;
        write_resources(&mut report, &dir.join("cluster-resources"), opts)?;
        return Ok(report);
    }
    let plan_json = pretty(&workspace::plan_json(&report.plan, &[]));
    write(&mut report, &opts.workspace.join("plan.json"), &plan_json)?;
    report.outcomes = transfer::copy_all(&report.plan.images, &transfer, progress);
    report.not_attempted = report.plan.images.len() - report.outcomes.len();
    let mapping = workspace::mapping(&report.plan, &[], &catalogs);
    write(
        &mut report,
        &opts.workspace.join("mapping.txt"),
        mapping.as_bytes(),
    )?;
    let results = workspace::results_json(&report.outcomes);
    write(
        &mut report,
        &opts.workspace.join("results.json"),
        &pretty(&results),
    )?;
    if !report.failures().is_empty() || report.not_attempted > 0 {
        // A catalog is pushed only when every image it names is at the destination.
        return Ok(report);
    }
    let rebuild = RebuildOptions {
        image: opts.image.clone(),
        catalog_base: opts.catalog_base.clone(),
        destination: opts.dest.clone(),
        chunk_size: 16 << 20,
    };
    for c in &report.plan.catalogs {
        progress.image_started(&c.destination);
        let r = rebuild::rebuild(c, &rebuild, &crate::image::copy::NoProgress)?;
        if let Some(key) = &opts.sign_key {
            let to = crate::image::reference::parse(&r.destination).map_err(Error::Usage)?;
            let limit = opts.image.max_manifest_size;
            let s = crate::image::signature::sign_pushed(&to, &r.digest, key, &opts.dest, limit)
                .map_err(|e| Error::failed(crate::image::one_line(&e)))?;
            report.signed.push(format!("{} {}", r.destination, s.tag));
        }
        progress.image_done(&c.destination, true);
        report.rebuilt.push(r);
    }
    write_resources(&mut report, &opts.workspace.join("cluster-resources"), opts)?;
    Ok(report)
}

/// The cluster resources of the plan's images and catalogs, written to `dir`.
fn write_resources(report: &mut Report, dir: &Path, opts: &MirrorOptions) -> Result<(), Error> {
    let mirrored: Vec<Mirrored> = report
        .plan
        .images
        .iter()
        .map(|i| Mirrored {
            source: i.wanted.source.clone(),
            destination: i.destination.clone(),
            kind: match i.wanted.origins.first() {
                Some(super::images::Origin::Additional) => Kind::Additional,
                _ => Kind::Operator,
            },
        })
        .collect();
    let catalogs: Vec<CatalogResource> = report
        .plan
        .catalogs
        .iter()
        .map(|c| CatalogResource {
            source: c.entry.catalog.clone(),
            destination: c.destination.clone(),
            template: Some(&c.entry.target_catalog_source_template)
                .filter(|t| !t.is_empty())
                .map(PathBuf::from),
        })
        .collect();
    let files = resources::render(&mirrored, &catalogs, opts.max_nested_paths > 0)
        .map_err(Error::failed)?;
    resources::write(dir, &files).map_err(Error::failed)?;
    report
        .written
        .extend(files.iter().map(|(name, _)| dir.join(name)));
    Ok(())
}

fn pretty(v: &serde_json::Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

fn write(report: &mut Report, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    workspace::write_file(path, bytes)
        .map_err(|e| Error::failed(format!("{}: {e}", path.display())))?;
    report.written.push(path.to_path_buf());
    Ok(())
}
