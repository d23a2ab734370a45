//! `opreg mirror`: flags to [`crate::mirror::run::MirrorOptions`], a progress bar, and the
//! summary; the work is [`crate::mirror`]'s.

use super::connection_args::{DestFlags, RegistryArgs, SrcFlags};
use super::output;
use super::progress::{human, Drawer};
use crate::error::Error;
use crate::mirror::run::{self, Destination, MirrorOptions, Report};
use crate::text::count;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    pub action: Option<Action>,
    /// oc-mirror v2's ImageSetConfiguration (mirror.openshift.io/v2alpha1): its operators,
    /// additionalImages, blockedImages and archiveSize.
    #[arg(
        long,
        short = 'c',
        value_name = "FILE",
        required_unless_present = "from"
    )]
    pub config: Option<PathBuf>,
    /// Push a mirror to disk (file://DIR, unpacking its mirror_*.tar archives first) to the
    /// registry, in place of --config.
    #[arg(long, value_name = "file://DIR", conflicts_with = "config")]
    pub from: Option<String>,
    /// Where the images go: docker://REGISTRY[/PREFIX], or file://DIR (an OCI layout with the
    /// plan and the configuration, DIR being the workspace).
    #[arg(value_name = "DESTINATION", required = true)]
    pub destination: Option<String>,
    /// Write the plan and copy nothing: WORKSPACE/dry-run/mapping.txt, plan.json (every image,
    /// and why each bundle is kept) and catalogs/ (each filtered catalog as it would be pushed,
    /// to review with `opreg diff SOURCE-CATALOG DIR`), also when images cannot be reached.
    #[arg(long)]
    pub dry_run: bool,
    /// Holds the plan, the run's record (mapping.txt, plan.json, results.json) and the
    /// cluster resources; for file://DIR, DIR is the workspace.
    #[arg(long, value_name = "DIR", default_value = "opreg-mirror")]
    pub workspace: PathBuf,
    /// Mirror to disk: the archives hold what every run since this date (YYYY-MM-DD, UTC)
    /// added [default: what this run added; archives are written when archiveSize is set].
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_since)]
    pub since: Option<crate::mirror::history::Date>,
    /// The longest one image's copy may take, signatures included (a Go duration: 90s, 10m,
    /// 1h30m); past it the image fails like any other.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::duration::parse)]
    pub image_timeout: Duration,
    /// Images copied at the same time.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub parallel_images: usize,
    /// Blobs of one image copied at the same time.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub parallel_layers: usize,
    /// Carry on past an image that fails after its retries (the exit code is still 1); the
    /// filtered catalogs are written to WORKSPACE/catalogs/ whatever happens.
    #[arg(long)]
    pub keep_going: bool,
    /// Fold destination paths deeper than N components, as oc-mirror does (0: never).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_nested_paths: usize,
    /// Rebuild each filtered catalog on this image instead of the source catalog's own.
    #[arg(long, value_name = "IMAGE")]
    pub catalog_base: Option<String>,
    /// Leave signatures, attestations, SBOMs and referrers behind.
    #[arg(long)]
    pub remove_signatures: bool,
    /// Check every source image (catalogs, bundles, related and additional images) against this
    /// containers-policy.json before copying it; a refused image fails like any other.
    #[arg(long, value_name = "FILE", env = "OPREG_SIGNATURE_POLICY")]
    pub signature_policy: Option<PathBuf>,
    /// Sign each rebuilt catalog with this cosign private key after it is pushed.
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// The key's passphrase, from this file [default: $COSIGN_PASSWORD, else a prompt].
    #[arg(long, value_name = "FILE", requires = "sign_key")]
    pub passphrase_file: Option<PathBuf>,
    /// After a complete run, delete what earlier runs of this workspace mirrored and this
    /// configuration no longer selects, by mirror delete's rules (nothing anything kept names);
    /// with --dry-run, only write the list (WORKSPACE/delete/delete-images-prune.yaml).
    #[arg(long)]
    pub prune: bool,
    /// Print only errors.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub sides: Sides,
}

// What else `mirror` does. (A plain comment: a doc comment would become mirror's about text.)
#[derive(clap::Subcommand, Debug)]
pub enum Action {
    Delete(Box<super::mirror_delete::Args>),
}

// The connection flags, for both sides or for one, and the catalogs' blob cache.
#[derive(clap::Args, Debug, Clone)]
pub struct Sides {
    #[command(flatten)]
    pub registries: RegistryArgs,
    #[command(flatten)]
    pub src: SrcFlags,
    #[command(flatten)]
    pub dest: DestFlags,
    /// Content-addressed blob cache for the catalogs' pulls [default: as for render].
    #[arg(long, value_name = "DIR", help_heading = "Registries")]
    pub image_cache: Option<PathBuf>,
    #[command(flatten)]
    pub limits: super::image_args::LimitArgs,
}

pub fn run(mut a: Args) -> super::Ended {
    if let Some(Action::Delete(d)) = a.action.take() {
        return super::mirror_delete::run(*d);
    }
    let opts = match options(&a) {
        Ok(o) => o,
        Err(e) => return e.into(),
    };
    let bar = Drawer::mirror(a.quiet);
    let dest = a.sides.registries.destination(&a.sides.dest);
    let result = run::mirror(&opts, &dest, &bar);
    drop(bar);
    match result {
        Ok(report) => summary(&report, &opts, a.quiet),
        Err(e) => e.into(),
    }
}

fn options(a: &Args) -> Result<MirrorOptions, Error> {
    let s = &a.sides;
    let image = crate::image::ImageOptions {
        connection: s.registries.source(&s.src),
        image_cache: s.image_cache.clone(),
        signature_policy: a.signature_policy.clone(),
        max_manifest_size: s.limits.max_manifest_size,
        max_layer_size: s.limits.max_layer_size,
        ..Default::default()
    };
    // The key is read (and its passphrase asked for) before anything is copied.
    let sign_key = match &a.sign_key {
        Some(k) => Some(super::sign::signing_key(k, a.passphrase_file.as_deref())?),
        None => None,
    };
    if a.parallel_images == 0 || a.parallel_layers == 0 {
        return Err(Error::Usage(
            "--parallel-images and --parallel-layers are at least 1".into(),
        ));
    }
    if a.image_timeout.is_zero() {
        return Err(Error::Usage("--image-timeout must be longer than 0".into()));
    }
    Ok(MirrorOptions {
        config: a.config.clone(),
        from: a.from.as_deref().map(run::parse_from).transpose()?,
        destination: Destination::parse(a.destination.as_deref().unwrap_or_default())?,
        workspace: a.workspace.clone(),
        since: a.since.clone(),
        image_timeout: Some(a.image_timeout),
        dry_run: a.dry_run,
        image,
        parallel_images: a.parallel_images,
        parallel_layers: a.parallel_layers,
        keep_going: a.keep_going,
        max_nested_paths: a.max_nested_paths,
        catalog_base: a.catalog_base.clone(),
        remove_signatures: a.remove_signatures,
        sign_key,
        prune: a.prune,
    })
}

fn parse_since(s: &str) -> Result<crate::mirror::history::Date, crate::mirror::MirrorError> {
    crate::mirror::history::Date::parse(s)
}

fn summary(r: &Report, opts: &MirrorOptions, quiet: bool) -> super::Ended {
    let note = |m: String| {
        if !quiet {
            output::status(m)
        }
    };
    // Each catalog's "pinned" line was shown as it was planned (a progress note).
    for c in &r.plan.catalogs {
        for w in &c.warnings {
            output::warning(format!("catalog {}: {w}", c.entry.catalog));
        }
    }
    for n in &r.notes {
        output::warning(n);
    }
    for b in &r.plan.blocked {
        note(format!("blocked: {b}"));
    }
    if opts.dry_run {
        let i = &r.inspected;
        let bytes: u64 = i.iter().map(|i| i.bytes - i.present_bytes).sum();
        let there = i.iter().filter(|i| i.all_there()).count();
        let unread = i.iter().filter(|i| i.digest.is_empty()).count();
        let unasked = i
            .iter()
            .filter(|i| !i.asked && !i.digest.is_empty())
            .count();
        let mut caveats = Vec::new();
        if unasked > 0 {
            caveats.push(format!(
                "the destination could not be asked about {}, counted whole",
                count(unasked, "image", "images")
            ));
        }
        if unread > 0 {
            caveats.push(format!(
                "{} could not be read at the source, not counted",
                count(unread, "image", "images")
            ));
        }
        let caveats: String = caveats.iter().map(|c| format!("; {c}")).collect();
        note(format!(
            "dry run: {} to copy ({there} already there), {} to send{caveats}; wrote {}",
            count(i.len() - there, "image", "images"),
            human(bytes),
            opts.workspace_dir().join("dry-run").display()
        ));
    } else {
        let there = r
            .outcomes
            .iter()
            .filter(|o| o.already_there && !o.recorded)
            .count();
        let recorded = r.outcomes.iter().filter(|o| o.recorded).count();
        let sent: u64 = r.outcomes.iter().map(|o| o.uploaded_bytes).sum();
        let sigs: usize = r.outcomes.iter().map(|o| o.signatures.len()).sum();
        let ws = opts.workspace_dir();
        let recorded = match recorded {
            0 => String::new(),
            n => format!(
                ", {n} recorded as done in {}",
                ws.join(crate::mirror::completed::FILE).display()
            ),
        };
        note(format!(
            "mirrored {} ({there} already there{recorded}, {} sent, {}); record in {}",
            count(
                r.outcomes.iter().filter(|o| o.error.is_none()).count(),
                "image",
                "images"
            ),
            human(sent),
            count(
                sigs,
                "signature or attachment",
                "signatures and attachments"
            ),
            ws.display()
        ));
        let to_disk = matches!(opts.destination, Destination::Disk(_)) && opts.from.is_none();
        for c in &r.rebuilt {
            match to_disk {
                true => note(format!("catalog written: {} ({})", c.destination, c.digest)),
                false => note(format!("catalog pushed: {}@{}", c.destination, c.digest)),
            }
        }
        for a in &r.archives {
            note(format!("archive: {}", a.display()));
        }
        for s in &r.signed {
            note(format!("catalog signed: {s}"));
        }
    }
    let failures = r.failures();
    for f in &failures {
        output::error(f);
    }
    let pruned = r.pruned.as_ref().is_none_or(|p| pruned(p, opts, &note));
    for (catalog, dir) in &r.filtered {
        note(format!(
            "filtered catalog of {catalog}: {} (review it with `opreg diff {catalog} {}`)",
            dir.display(),
            dir.display()
        ));
    }
    // A catalog is pushed (or, from disk, copied) only where every image it names is.
    let pushes = !r.plan.catalogs.is_empty()
        && (opts.from.is_some() || matches!(opts.destination, Destination::Registry(_)));
    let held_back = match pushes {
        true => "; no catalog was pushed",
        false => "",
    };
    if r.not_attempted > 0 {
        output::error(format!(
            "{} not attempted after the first failure (--keep-going carries on){held_back}",
            count(r.not_attempted, "image", "images")
        ));
    } else if !failures.is_empty() && !opts.dry_run && pushes {
        output::error(format!(
            "no catalog was pushed: it names the {} that failed above; fix them and run the same \
             command again (what was copied is kept), or leave them out with blockedImages{}",
            count(failures.len(), "image", "images"),
            match r.filtered.is_empty() {
                true => String::new(),
                false => " (the filtered catalog is in the workspace, listed above)".into(),
            }
        ));
    }
    if failures.is_empty() && r.not_attempted == 0 && pruned {
        super::Ended::Done
    } else {
        super::Ended::Reported
    }
}

/// What the run left behind: counted with the command that deletes it, listed (`--dry-run
/// --prune`), or deleted (`--prune`); whether the prune, if any, was whole.
fn pruned(p: &crate::mirror::prune::Pruned, opts: &MirrorOptions, note: &dyn Fn(String)) -> bool {
    let images = count(p.plan.delete.len(), "image", "images");
    if let Some(e) = &p.error {
        output::error(format!("--prune: {e}"));
        return false;
    }
    match (&p.list, &p.executed) {
        (None, _) => {
            let config = opts
                .config
                .as_deref()
                .map_or(String::new(), |c| format!(" --config {}", c.display()));
            let dest = match &opts.destination {
                Destination::Registry(d) => format!("docker://{d}"),
                Destination::Disk(d) => format!("file://{}", d.display()),
            };
            note(format!(
                "{images} mirrored earlier by this workspace are no longer selected; `opreg mirror{config} --workspace {} --prune {dest}` deletes them (with --dry-run, lists them)",
                opts.workspace.display()
            ));
            true
        }
        (Some(list), None) => {
            note(format!(
                "--prune: {images} to delete, {} kept; wrote {} (run without --dry-run to delete them)",
                p.plan.kept.len(),
                list.display(),
            ));
            true
        }
        (Some(_), Some(r)) => super::mirror_delete::summary(r, note),
    }
}
