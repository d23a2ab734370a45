//! `opreg mirror delete`: flags to [`crate::mirror::delete`]'s two phases, progress, and the
//! summary; the work is the library's.

use super::connection_args::{DestFlags, RegistryArgs};
use super::output;
use super::progress::Drawer;
use crate::error::Error;
use crate::mirror::delete::{self, execute};
use crate::mirror::destination::Destination;
use crate::text::count;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Phase 1 writes the list (oc-mirror's DeleteImageList) and opreg's plan beside it, reading the
registry only:
  opreg mirror delete --generate --config delete.yaml --workspace file://ws docker://mirror.lab:5000/ocp

Review WS/delete/delete-images.yaml and delete-plan.json (every image deleted or kept, and why),
then phase 2 deletes what the list names, catalogs rebuilt first:
  opreg mirror delete --delete-yaml-file ws/delete/delete-images.yaml docker://mirror.lab:5000/ocp

A mirror on disk is its own workspace; its list names images as oci:DIR:NAME:
  opreg mirror delete --generate --config delete.yaml file://mirror-dir

Exit codes: 0 all done, 1 any failure (each listed), 2 usage or configuration, 130 interrupted.
Deleting frees no storage by itself: run the registry's garbage collector (docs/mirror.md).";

/// Delete what a mirror no longer needs, in oc-mirror's two phases: --generate writes the list
/// from a DeleteImageSetConfiguration; --delete-yaml-file executes a list.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// oc-mirror's DeleteImageSetConfiguration (mirror.openshift.io/v2alpha1 or v1alpha2): its
    /// delete.operators (the selection rules of mirror) and delete.additionalImages.
    #[arg(long, short = 'c', value_name = "FILE", requires = "generate")]
    pub config: Option<PathBuf>,
    /// Phase 1: write WORKSPACE/delete/delete-images[-ID].yaml and delete-plan[-ID].json;
    /// nothing is deleted.
    #[arg(long, requires = "config")]
    pub generate: bool,
    /// Name the files delete-images-ID.yaml and delete-plan-ID.json.
    #[arg(long, value_name = "ID", requires = "generate")]
    pub delete_id: Option<String>,
    /// Phase 2: the list to execute (its workspace is the directory above its delete/, or
    /// --workspace).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "generate",
        required_unless_present = "generate"
    )]
    pub delete_yaml_file: Option<PathBuf>,
    /// The workspace that mirrored the images [default: opreg-mirror for --generate; a
    /// file://DIR destination is its own].
    #[arg(long, value_name = "[file://]DIR")]
    pub workspace: Option<String>,
    /// The registry mirrored to, docker://REGISTRY[/PREFIX], or a mirror on disk, file://DIR
    /// (its own workspace: names leave its layout, unused blobs are removed).
    #[arg(value_name = "DESTINATION")]
    pub destination: String,
    /// Phase 2: check the list and say what would be deleted and kept; change nothing.
    #[arg(long, conflicts_with = "generate")]
    pub dry_run: bool,
    /// Carry on past an image that fails (the exit code is still 1).
    #[arg(long)]
    pub keep_going: bool,
    /// Leave signatures, attestations, SBOMs and referrers of deleted images.
    #[arg(long)]
    pub keep_signatures: bool,
    /// oc-mirror's flag, accepted: opreg deletes signatures unless --keep-signatures.
    #[arg(long)]
    pub delete_signatures: bool,
    /// Print only errors.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub registries: RegistryArgs,
    #[command(flatten)]
    pub dest: DestFlags,
    /// Content-addressed blob cache for the catalogs' pulls [default: as for render].
    #[arg(long, value_name = "DIR", help_heading = "Registries")]
    pub image_cache: Option<PathBuf>,
    #[command(flatten)]
    pub limits: super::image_args::LimitArgs,
}

pub fn run(a: Args) -> super::Ended {
    match run_inner(&a) {
        Ok(e) => e,
        Err(e) => e.into(),
    }
}

fn run_inner(a: &Args) -> Result<super::Ended, Error> {
    let destination = Destination::parse(&a.destination)?;
    let image = crate::image::ImageOptions {
        connection: a.registries.destination(&a.dest),
        image_cache: a.image_cache.clone(),
        max_manifest_size: a.limits.max_manifest_size,
        max_layer_size: a.limits.max_layer_size,
        ..Default::default()
    };
    let workspace = a
        .workspace
        .as_deref()
        .map(|w| PathBuf::from(w.strip_prefix("file://").unwrap_or(w)));
    if let (Destination::Disk(dir), Some(_)) = (&destination, &workspace) {
        return Err(Error::Usage(format!(
            "{} is its own workspace: leave out --workspace",
            dir.display()
        )));
    }
    let note = |m: String| {
        if !a.quiet {
            output::status(m)
        }
    };
    if a.generate {
        let config = a.config.as_deref().unwrap_or(std::path::Path::new(""));
        let ws = match &destination {
            Destination::Disk(dir) => dir.clone(),
            Destination::Registry(_) => workspace.unwrap_or_else(|| PathBuf::from("opreg-mirror")),
        };
        let (list, plan) =
            delete::generate(config, &ws, a.delete_id.as_deref(), &destination, &image)?;
        for k in &plan.kept {
            note(format!(
                "kept: {} (needed by {})",
                k.destination,
                k.needed_by.join("; ")
            ));
        }
        for c in &plan.catalogs {
            let bundles: usize = c.removed.values().map(|b| b.len()).sum();
            note(match c.whole {
                true => format!(
                    "catalog {}: deleted with its {}",
                    c.destination,
                    count(bundles, "bundle", "bundles")
                ),
                false => format!(
                    "catalog {}: rebuilt without {}",
                    c.destination,
                    count(bundles, "bundle", "bundles")
                ),
            });
        }
        note(format!(
            "{} to delete, {} kept; wrote {} and {}; review them, then run: opreg mirror delete --delete-yaml-file {} {}",
            count(plan.delete.len(), "image", "images"),
            plan.kept.len(),
            list.display(),
            delete::plan_path(&list).display(),
            list.display(),
            a.destination
        ));
        return Ok(super::Ended::Done);
    }
    let opts = execute::ExecuteOptions {
        list: a.delete_yaml_file.clone().unwrap_or_default(),
        workspace,
        destination,
        keep_going: a.keep_going,
        keep_signatures: a.keep_signatures,
        dry_run: a.dry_run,
        image,
    };
    let bar = Drawer::images(a.quiet, "deleting");
    let result = delete::execute(&opts, &bar);
    drop(bar);
    let r = result?;
    if a.dry_run {
        kept_and_failed(&r, &note);
        note(format!(
            "dry run: {} to delete, {} kept, {} to rebuild; nothing was changed",
            count(r.deleted.len(), "image", "images"),
            r.kept.len(),
            count(r.catalogs_rebuilt.len(), "catalog", "catalogs")
        ));
        return Ok(super::Ended::Done);
    }
    Ok(match summary(&r, &note) {
        true => super::Ended::Done,
        false => super::Ended::Reported,
    })
}

/// Each image kept (with what needs it) and each failure.
fn kept_and_failed(r: &execute::Report, note: &dyn Fn(String)) {
    for (d, why) in &r.kept {
        note(format!("kept: {d} (needed by {})", why.join("; ")));
    }
    for (d, e) in &r.failed {
        output::error(format!("{d}: {e}"));
    }
}

/// The summary of an executed deletion (`mirror delete`, `mirror --prune`); whether
/// everything listed was done.
pub(super) fn summary(r: &execute::Report, note: &dyn Fn(String)) -> bool {
    kept_and_failed(r, note);
    // A target that collects its own blobs is a mirror on disk: nothing is pushed there.
    let on_disk = r.blobs_removed.is_some();
    for c in &r.catalogs_rebuilt {
        match on_disk {
            true => note(format!("catalog rebuilt in the layout: {c}")),
            false => note(format!("catalog rebuilt and pushed: {c}")),
        }
    }
    note(format!(
        "deleted {} ({} already gone, {} kept, {} failed) and {}",
        count(r.deleted.len(), "image", "images"),
        r.already_gone.len(),
        r.kept.len(),
        r.failed.len(),
        count(
            r.signatures,
            "signature or attachment",
            "signatures and attachments"
        )
    ));
    if !r.catalogs_rebuilt.is_empty() && !on_disk {
        note("clusters whose CatalogSource does not poll the registry (no spec.updateStrategy) must be refreshed to see the rebuilt catalogs".into());
    }
    if r.not_attempted > 0 {
        output::error(format!(
            "{} not attempted after the first failure (--keep-going carries on); run the same command again to finish",
            count(r.not_attempted, "image", "images")
        ));
    }
    match r.blobs_removed {
        Some(n) => note(format!(
            "removed {} that no remaining image uses",
            count(n, "blob", "blobs")
        )),
        None if !r.deleted.is_empty() || !r.failed.is_empty() => note(
            "storage is freed only by the registry's garbage collector: see docs/mirror.md".into(),
        ),
        None => {}
    }
    r.failed.is_empty() && r.not_attempted == 0
}
