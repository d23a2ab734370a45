//! `opreg mirror` from start to end. Three ways: registries to a registry, registries to disk
//! (`file://DIR`), and disk to a registry (`--from file://DIR`). First the plan: every catalog
//! pinned, filtered, its dependencies added, validated (or, from disk, the plan the mirror to
//! disk made). Then either the plan is written and the run stops (`dry_run`), or the images
//! are copied, each filtered catalog is rebuilt (or, from disk, taken from the layout) and
//! pushed after its images, and the cluster resources are written. Nothing is copied when the
//! plan fails; no catalog is pushed when one of its images failed.

use super::config::{self, ImageSetConfiguration};
pub use super::destination::{parse_from, Destination};
use super::disk;
use super::history::Date;
use super::plan::{self, Plan, PlanOptions};
use super::prune;
use super::rebuild::{self, RebuildOptions, Rebuilt};
use super::resources::{self, CatalogResource, Mirrored};
use super::transfer::{self, End, Inspected, Outcome, TransferOptions};
use super::workspace;
use crate::error::Error;
use crate::image::reference::ImageSource;
use crate::progress::Progress;
use crate::registry::{Connection, Connections};
use std::path::{Path, PathBuf};

/// What to mirror, and how.
#[derive(Clone, Debug)]
pub struct MirrorOptions {
    /// The `ImageSetConfiguration` file (not with `from`).
    pub config: Option<PathBuf>,
    /// A mirror to disk to push (`--from file://DIR`), in place of a configuration.
    pub from: Option<PathBuf>,
    pub destination: Destination,
    /// Where the plan, the cluster resources and the run's record go (for a mirror to disk,
    /// its DIR).
    pub workspace: PathBuf,
    /// A mirror to disk's archives hold what runs since this date added (else the last run's).
    pub since: Option<Date>,
    /// The longest one image's copy may take (its signatures included).
    pub image_timeout: Option<std::time::Duration>,
    pub dry_run: bool,
    /// How to pull catalogs, the rebuild's base and every image copied: the source side's
    /// connection, cache, limits and signature policy. The destination's connection is
    /// [`mirror`]'s argument.
    pub image: crate::image::ImageOptions,
    pub parallel_images: usize,
    pub parallel_layers: usize,
    pub keep_going: bool,
    pub max_nested_paths: usize,
    pub catalog_base: Option<String>,
    pub remove_signatures: bool,
    /// Signs each rebuilt catalog after its push (it has a new digest, so no signature from
    /// its source covers it).
    pub sign_key: Option<crate::sign::keys::SigningKey>,
    /// Delete what earlier runs mirrored and this one no longer selects ([`super::prune`]).
    pub prune: bool,
}

impl MirrorOptions {
    /// Where the plan and the run's record go: DIR for a mirror to disk, else `workspace`.
    pub fn workspace_dir(&self) -> &Path {
        match (&self.destination, &self.from) {
            (Destination::Disk(dir), None) => dir,
            _ => &self.workspace,
        }
    }
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
    /// A mirror to disk's archives.
    pub archives: Vec<PathBuf>,
    /// What the user should know that is no failure (cluster resources of an earlier run to
    /// another destination replaced).
    pub notes: Vec<String>,
    /// Each filtered catalog written for review (a dry run's, or a `--keep-going` run's): its
    /// reference in the configuration and its directory.
    pub filtered: Vec<(String, PathBuf)>,
    /// What earlier runs mirrored and this one no longer selects: counted, or pruned.
    pub pruned: Option<super::prune::Pruned>,
}

impl Report {
    /// Every failure, one line each.
    pub fn failures(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter_map(|o| {
                o.error.as_ref().map(|e| match o.source == o.destination {
                    // A mirror to disk names each image by its source.
                    true => format!("{}: {e}", o.source),
                    false => format!("{} -> {}: {e}", o.source, o.destination),
                })
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
        .map_err(|e| Error::Usage(format!("{}: {}", path.display(), crate::text::one_line(e))))
}

/// The three ways a mirror runs.
enum Way<'a> {
    ToRegistry(&'a str),
    ToDisk(&'a Path),
    FromDisk(&'a Path, &'a str),
}

/// Runs the mirror. An `Err` is a failure before anything was copied (a bad configuration, a
/// catalog that cannot be read or filters to an invalid one); failures of single images are
/// in the report.
pub fn mirror(
    opts: &MirrorOptions,
    dest: &Connection,
    progress: &dyn Progress,
) -> Result<Report, Error> {
    let sides = Connections {
        source: opts.image.connection.clone(),
        destination: dest.clone(),
    };
    let way =
        match (&opts.config, &opts.from, &opts.destination) {
            (Some(_), None, Destination::Registry(d)) => Way::ToRegistry(d),
            (Some(_), None, Destination::Disk(dir)) => Way::ToDisk(dir),
            (None, Some(dir), Destination::Registry(d)) => Way::FromDisk(dir, d),
            (None, Some(_), Destination::Disk(_)) => {
                return Err(Error::Usage(
                    "--from file://DIR goes to a registry: docker://REGISTRY[/PREFIX]".into(),
                ))
            }
            (Some(_), Some(_), _) => return Err(Error::Usage(
                "--config and --from exclude each other: a mirror to disk holds its configuration"
                    .into(),
            )),
            (None, None, _) => {
                return Err(Error::Usage(
                    "--config FILE or --from file://DIR is required".into(),
                ))
            }
        };
    check_way(opts, &way)?;
    let workspace = opts.workspace_dir();
    // A destination that cannot take images is said once the configuration is read, before
    // the catalogs are (a dry run reports it per image, as what it could not ask).
    let check_dest = |d: &str| match opts.dry_run {
        true => Ok(()),
        false => check_destination(d, &sides.destination),
    };
    let (cfg, plan, layout_names) = match way {
        Way::FromDisk(dir, dest) => {
            unpack(dir)?;
            let (cfg, listing) = disk::read(dir)?;
            let (plan, names) = disk::plan(&cfg, &listing, dest, opts.max_nested_paths)?;
            check_dest(dest)?;
            (cfg, plan, names)
        }
        Way::ToRegistry(_) | Way::ToDisk(_) => {
            let cfg = read_config(opts.config.as_deref().unwrap_or(Path::new("")))?;
            if let Way::ToRegistry(d) = way {
                check_dest(d)?;
            }
            let dest = match way {
                Way::ToRegistry(d) => d.to_string(),
                _ => String::new(),
            };
            let p = plan::plan(
                &cfg,
                &PlanOptions {
                    image: opts.image.clone(),
                    destination: dest,
                    max_nested_paths: opts.max_nested_paths,
                },
            )?;
            (cfg, p, Vec::new())
        }
    };
    for c in &plan.catalogs {
        progress.report(crate::progress::Event::Note(&plan::pinned_line(c)));
        // A dry run is a review: why each package's bundles are kept (each bundle's reasons
        // are in the plan file).
        for line in plan::why_lines(c).iter().filter(|_| opts.dry_run) {
            let line = format!("catalog {}: {line}", c.entry.catalog);
            progress.report(crate::progress::Event::Note(&line));
        }
    }
    for op in &cfg.mirror.operators {
        if !op.target_catalog_source_template.is_empty() && !matches!(way, Way::ToDisk(_)) {
            resources::check_template(Path::new(&op.target_catalog_source_template))
                .map_err(|e| Error::Usage(e.to_string()))?;
        }
    }
    let transfer = transfer_options(opts, &way);
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
        report.inspected = transfer::inspect_all(&report.plan.images, &sides, &transfer);
        let dir = workspace.join("dry-run");
        let mapping = workspace::mapping(&report.plan, &report.inspected, &catalogs);
        let plan_json = workspace::plan_json(&report.plan, &report.inspected);
        write(&mut report, &dir.join("mapping.txt"), mapping.as_bytes())?;
        write(&mut report, &dir.join("plan.json"), &pretty(&plan_json))?;
        report.filtered = workspace::write_filtered(&dir, &report.plan)?;
        if let Way::ToRegistry(d) | Way::FromDisk(_, d) = way {
            write_resources(&mut report, &dir.join("cluster-resources"), opts)?;
            report.pruned =
                prune::after_run(&pruning(opts, dest), workspace, &report.plan, d, progress)?;
        }
        return Ok(report);
    }
    if !matches!(way, Way::FromDisk(..)) {
        check_sources(&report.plan, &sides)?;
    }
    let plan_json = pretty(&workspace::plan_json(&report.plan, &[]));
    write(&mut report, &workspace.join("plan.json"), &plan_json)?;
    report.outcomes = transfer::copy_all(&report.plan.images, &sides, &transfer, progress);
    report.not_attempted = report.plan.images.len() - report.outcomes.len();
    let mapping = workspace::mapping(&report.plan, &[], &catalogs);
    write(
        &mut report,
        &workspace.join("mapping.txt"),
        mapping.as_bytes(),
    )?;
    let results = workspace::results_json(&report.outcomes);
    write(
        &mut report,
        &workspace.join("results.json"),
        &pretty(&results),
    )?;
    if opts.keep_going && !matches!(way, Way::FromDisk(..)) {
        // Whatever happens to the images, the catalog that would go can be reviewed (from
        // disk, it is in the layout already).
        report.filtered = workspace::write_filtered(workspace, &report.plan)?;
    }
    if !report.failures().is_empty() || report.not_attempted > 0 {
        // A catalog goes only where every image it names is.
        return Ok(report);
    }
    match way {
        Way::ToRegistry(_) => push_rebuilt(&mut report, opts, dest, progress)?,
        Way::ToDisk(dir) => to_disk(&mut report, opts, &cfg, dir, progress)?,
        Way::FromDisk(dir, _) => {
            push_from_disk(&mut report, opts, &sides, dir, &layout_names, progress)?
        }
    }
    if let Way::ToRegistry(d) | Way::FromDisk(_, d) = way {
        super::standing::record(workspace, &report.plan, &report.rebuilt, &report.outcomes)
            .map_err(|e| Error::failed(e.to_string()))?;
        write_resources(&mut report, &workspace.join("cluster-resources"), opts)?;
        report.pruned =
            prune::after_run(&pruning(opts, dest), workspace, &report.plan, d, progress)?;
    }
    Ok(report)
}

/// `--sign-key` and `--prune` work on a registry.
fn check_way(opts: &MirrorOptions, way: &Way) -> Result<(), Error> {
    match (way, opts.sign_key.is_some() || opts.prune) {
        (Way::ToDisk(_), true) => Err(Error::Usage(
            "--sign-key and --prune work on a registry: give them to the run with --from file://DIR".into(),
        )),
        _ => Ok(()),
    }
}

/// How the run prunes: at the destination, without the source's signature policy.
fn pruning(opts: &MirrorOptions, dest: &Connection) -> prune::PruneOptions {
    prune::PruneOptions {
        prune: opts.prune,
        dry_run: opts.dry_run,
        keep_going: opts.keep_going,
        image: crate::image::ImageOptions {
            connection: dest.clone(),
            signature_policy: None,
            ..opts.image.clone()
        },
    }
}

fn transfer_options(opts: &MirrorOptions, way: &Way) -> TransferOptions {
    TransferOptions {
        parallel_images: opts.parallel_images,
        parallel_layers: opts.parallel_layers,
        keep_going: opts.keep_going,
        remove_signatures: opts.remove_signatures,
        max_manifest_size: opts.image.max_manifest_size,
        chunk_size: 16 << 20,
        placements: match way {
            Way::ToRegistry(_) | Way::FromDisk(..) if !opts.dry_run => {
                Some(opts.workspace.join("placements.tsv"))
            }
            _ => None,
        },
        policy: opts
            .image
            .signature_policy
            .is_some()
            .then(|| opts.image.clone()),
        from: match way {
            Way::FromDisk(dir, _) => End::Layout(dir.to_path_buf()),
            _ => End::Registry,
        },
        to: match way {
            Way::ToDisk(dir) => End::Layout(dir.to_path_buf()),
            _ => End::Registry,
        },
        image_timeout: opts.image_timeout,
        completed: match way {
            Way::ToRegistry(_) | Way::FromDisk(..) if !opts.dry_run => {
                Some(opts.workspace.join(super::completed::FILE))
            }
            _ => None,
        },
    }
}

/// Asks each registry the run reads images from, once, before anything is copied: a problem
/// of a whole registry (no connection, TLS, refused credentials) is one error naming it, not
/// one per image.
fn check_sources(plan: &Plan, sides: &Connections) -> Result<(), Error> {
    let mut asked = std::collections::BTreeSet::new();
    for img in &plan.images {
        if let Ok(r) = crate::image::reference::parse(&img.wanted.source) {
            if asked.insert(r.registry.clone()) {
                check_registry(&r, &sides.source)?;
            }
        }
    }
    Ok(())
}

/// [`check_sources`] for the destination `REGISTRY[/PREFIX]`, before the catalogs are read.
fn check_destination(dest: &str, conn: &Connection) -> Result<(), Error> {
    match crate::image::reference::parse(&format!("{}/opreg-check", dest.trim_end_matches('/'))) {
        Ok(r) => check_registry(&r, conn),
        Err(_) => Ok(()),
    }
}

fn check_registry(r: &crate::image::reference::Reference, conn: &Connection) -> Result<(), Error> {
    crate::registry::Registry::new(r, conn)
        .and_then(|mut reg| reg.check())
        .map_err(|e| {
            Error::failed(format!(
                "registry {}: {}; nothing was copied",
                r.registry,
                crate::text::one_line(&e)
            ))
        })
}

/// Unpacks DIR's archives over it, when it has any (blobs already there are skipped).
fn unpack(dir: &Path) -> Result<(), Error> {
    let archives = disk::archives(dir).map_err(|e| Error::Usage(e.to_string()))?;
    if !archives.is_empty() {
        super::archive::unpack(&archives, dir).map_err(Error::failed)?;
    }
    Ok(())
}

/// Rebuilds each filtered catalog and pushes it (signed with the key, if any).
fn push_rebuilt(
    report: &mut Report,
    opts: &MirrorOptions,
    dest: &Connection,
    progress: &dyn Progress,
) -> Result<(), Error> {
    let rebuild = rebuild_options(opts);
    for i in 0..report.plan.catalogs.len() {
        let c = &report.plan.catalogs[i];
        progress.report(crate::progress::Event::ImageStarted(&c.destination));
        let r = rebuild::rebuild(c, &rebuild, dest, &crate::progress::Silent)?;
        sign(report, opts, dest, &r)?;
        progress.report(crate::progress::Event::ImageDone {
            name: &r.destination,
            ok: true,
        });
        report.rebuilt.push(r);
    }
    Ok(())
}

fn rebuild_options(opts: &MirrorOptions) -> RebuildOptions {
    RebuildOptions {
        image: opts.image.clone(),
        catalog_base: opts.catalog_base.clone(),
        chunk_size: 16 << 20,
    }
}

/// Signs a pushed catalog with the key, if one was given.
fn sign(
    report: &mut Report,
    opts: &MirrorOptions,
    dest: &Connection,
    r: &Rebuilt,
) -> Result<(), Error> {
    if let Some(key) = &opts.sign_key {
        let to = crate::image::reference::parse(&r.destination)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let limit = opts.image.max_manifest_size;
        let s = crate::image::signature::sign_pushed(&to, &r.digest, key, dest, limit)
            .map_err(|e| Error::failed(crate::text::one_line(&e)))?;
        report.signed.push(format!("{} {}", r.destination, s.tag));
    }
    Ok(())
}

/// Mirror to disk's end: each filtered catalog rebuilt into the layout, the listing and the
/// configuration written, the run recorded in the history, and the archives packed when the
/// configuration has an `archiveSize` or `--since` was given.
fn to_disk(
    report: &mut Report,
    opts: &MirrorOptions,
    cfg: &ImageSetConfiguration,
    dir: &Path,
    progress: &dyn Progress,
) -> Result<(), Error> {
    let rebuild = rebuild_options(opts);
    for c in &report.plan.catalogs {
        progress.report(crate::progress::Event::ImageStarted(&c.destination));
        let r = rebuild::rebuild_to_layout(c, &rebuild, dir, &c.destination)?;
        progress.report(crate::progress::Event::ImageDone {
            name: &c.destination,
            ok: true,
        });
        report.rebuilt.push(r);
    }
    let digests: Vec<String> = report.rebuilt.iter().map(|r| r.digest.clone()).collect();
    let listing = disk::listing(&report.plan, &digests);
    let mut text = serde_json::to_vec_pretty(&listing).map_err(|e| Error::failed(e.to_string()))?;
    text.push(b'\n');
    let config = opts.config.as_deref().unwrap_or(Path::new(""));
    let config_text =
        std::fs::read(config).map_err(|e| Error::Usage(format!("{}: {e}", config.display())))?;
    write(report, &dir.join(disk::CONFIG), &config_text)?;
    write(report, &dir.join(disk::LISTING), &text)?;
    // The run goes into the history only once its archives are complete: a run that fails
    // or is interrupted while packing leaves its blobs for the next run to pack.
    let history = disk::with_this_run(dir).map_err(Error::failed)?;
    if cfg.archive_size.is_some() || opts.since.is_some() {
        let packed = disk::pack(dir, &history, opts.since.as_ref(), cfg.archive_size)
            .map_err(Error::failed)?;
        report.archives = packed;
    }
    super::history::write(dir, &history).map_err(Error::failed)?;
    report.written.push(dir.join(super::history::FILE));
    Ok(())
}

/// Disk to mirror's end: each rebuilt catalog copied from the layout to its destination.
fn push_from_disk(
    report: &mut Report,
    opts: &MirrorOptions,
    sides: &Connections,
    dir: &Path,
    names: &[String],
    progress: &dyn Progress,
) -> Result<(), Error> {
    let copy = crate::image::copy::CopyOptions {
        max_manifest_size: opts.image.max_manifest_size,
        ..Default::default()
    };
    for (i, name) in names.iter().enumerate() {
        let c = &report.plan.catalogs[i];
        progress.report(crate::progress::Event::ImageStarted(&c.destination));
        let to = crate::image::reference::parse(&c.destination)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let from = ImageSource::Layout {
            dir: dir.to_path_buf(),
            tag: Some(name.clone()),
        };
        let copied = crate::image::copy::copy(
            &from,
            &ImageSource::Registry(to),
            sides,
            &copy,
            &crate::progress::Silent,
        )
        .map_err(|e| Error::failed(crate::text::one_line(&e)))?;
        let r = Rebuilt {
            destination: c.destination.clone(),
            digest: copied.digest,
            platforms: Vec::new(),
            with_cache: false,
        };
        sign(report, opts, &sides.destination, &r)?;
        progress.report(crate::progress::Event::ImageDone {
            name: &r.destination,
            ok: true,
        });
        report.rebuilt.push(r);
    }
    Ok(())
}

/// The cluster resources of the plan's images and catalogs, written to `dir`.
fn write_resources(report: &mut Report, dir: &Path, opts: &MirrorOptions) -> Result<(), Error> {
    let mirrored: Vec<Mirrored> = report.plan.images.iter().map(Mirrored::from).collect();
    let catalogs: Vec<CatalogResource> = report
        .plan
        .catalogs
        .iter()
        .map(CatalogResource::from)
        .collect();
    let files = resources::render(&mirrored, &catalogs, opts.max_nested_paths > 0)
        .map_err(Error::failed)?;
    // The resources are for one destination: a workspace reused for another replaces them,
    // and says so.
    let marker = dir.join(".destination");
    let now = match &opts.destination {
        Destination::Registry(d) => d.clone(),
        Destination::Disk(p) => p.display().to_string(),
    };
    if let Ok(before) = std::fs::read_to_string(&marker) {
        if before.trim() != now {
            report.notes.push(format!(
                "{}: the cluster resources of the earlier run to {} are replaced by this run's, \
                 for {now}; give each destination its own --workspace to keep both",
                dir.display(),
                before.trim()
            ));
        }
    }
    resources::write(dir, &files).map_err(Error::failed)?;
    workspace::write_named(&marker, format!("{now}\n").as_bytes()).map_err(Error::failed)?;
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
    workspace::write_named(path, bytes).map_err(Error::failed)?;
    report.written.push(path.to_path_buf());
    Ok(())
}
