//! Phase 2: a `DeleteImageList` executed. The list is checked whole first (every item of the
//! destination's form, of a type opreg mirrors, and mirrored by the workspace); then the
//! destination is probed for deletes; then the catalogs of the plan are rebuilt without their
//! removed bundles; then each listed image that nothing still standing names is deleted (an
//! index with its platform images), and last the signatures of what was deleted. The records
//! are updated as deletes succeed, so the same command after a crash finishes the job. The
//! order is this module's; what each step does at a registry or in a mirror on disk is the
//! [`Target`]'s.

use super::list::{self, Checked, ItemType};
use super::Change;
use crate::error::Error;
use crate::mirror::destination::Destination;
use crate::mirror::standing::{Owner, Standing};
use crate::progress::{Event, Progress};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// How to execute a list.
#[derive(Clone, Debug)]
pub struct ExecuteOptions {
    pub list: PathBuf,
    /// `--workspace`; by default the directory above the list's `delete/` (a mirror on disk
    /// is its own).
    pub workspace: Option<PathBuf>,
    pub destination: Destination,
    pub keep_going: bool,
    pub keep_signatures: bool,
    /// Check the list and say what would be deleted and kept; change nothing.
    pub dry_run: bool,
    /// How catalogs are pulled and pushed, and the registry reached (the destination's).
    pub image: crate::image::ImageOptions,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub deleted: Vec<String>,
    pub already_gone: Vec<String>,
    /// Listed, but still needed: the image and what needs it.
    pub kept: Vec<(String, Vec<String>)>,
    pub failed: Vec<(String, String)>,
    pub catalogs_rebuilt: Vec<String>,
    pub signatures: usize,
    /// Items not tried because an earlier one failed (without `--keep-going`).
    pub not_attempted: usize,
    /// A mirror on disk's blobs that no remaining image uses, removed (`None` at a registry,
    /// whose own collector frees storage).
    pub blobs_removed: Option<usize>,
}

/// What deleting one image did.
pub enum Gone {
    /// Deleted: the manifest's digest, then its platform images'.
    Now(Vec<String>),
    Already,
    /// The name now gives another digest than the recorded one: left alone.
    Moved(String),
}

/// Where phase 2 acts: a registry ([`super::registry`]) or a mirror on disk
/// ([`super::disk`]). [`execute`] calls it in its order.
pub trait Target {
    /// Refuses, in one line, a destination that cannot delete; nothing has changed yet.
    fn probe(&mut self, first: Option<&Checked>, changes: &[Change]) -> Result<(), Error>;
    /// Rebuilds `ch`'s catalog without its removed bundles; the digest written, if one was.
    fn rebuild(&mut self, ch: &Change, standing: &Standing) -> Result<Option<String>, Error>;
    /// Deletes the image `c` names, unless its name gives another digest than `recorded`;
    /// an index's platform images go with it unless `in_use`.
    fn delete(
        &mut self,
        c: &Checked,
        recorded: Option<&str>,
        in_use: &BTreeSet<String>,
    ) -> anyhow::Result<Gone>;
    /// The digests other images standing in the repository of `name` use.
    fn in_use(&self, standing: &Standing, name: &str) -> BTreeSet<String>;
    /// The image `c` names, `digest`, is gone: the records forget it.
    fn forget(&mut self, c: &Checked, digest: &str);
    /// Deletes the signatures, attestations, SBOMs and referrers of `digests` (an image's and
    /// its platform images'); how many went.
    fn signatures(&mut self, c: &Checked, digests: &[String]) -> anyhow::Result<usize>;
    /// Writes what stands now (after each catalog, and after the images).
    fn record(&mut self, standing: &Standing) -> Result<(), Error>;
    /// After every delete: what the target collects itself (a layout's unused blobs); how many
    /// blobs went (`None`: the target collects nothing itself).
    fn finish(&mut self) -> Result<Option<usize>, Error> {
        Ok(None)
    }
}

/// A list checked whole, with its workspace's record and the plan's catalog changes.
struct Prepared {
    items: Vec<Checked>,
    changes: Vec<Change>,
    workspace: PathBuf,
    standing: Standing,
}

/// Reads and checks the list: of the destination, of types opreg mirrors, and every item
/// mirrored by the workspace (found beside the list, or `--workspace`).
fn prepare(opts: &ExecuteOptions) -> Result<Prepared, Error> {
    let usage = |e: crate::mirror::MirrorError| Error::Usage(e.to_string());
    let name = opts.list.display().to_string();
    let text =
        std::fs::read_to_string(&opts.list).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let parsed = list::read(&text, &name).map_err(usage)?;
    let items = list::check(&parsed, &opts.destination).map_err(usage)?;
    let plan = super::read_plan(&opts.list).map_err(usage)?;
    let workspace = match (&opts.destination, &opts.workspace, &plan) {
        (Destination::Disk(dir), _, _) => dir.clone(),
        (_, Some(w), _) => w.clone(),
        (_, None, Some(_)) => above_delete_dir(&opts.list),
        (_, None, None) => {
            return Err(Error::Usage(format!(
                "{name} has no opreg plan beside it ({}): give --workspace, the workspace that mirrored these images",
                super::plan_path(&opts.list).display()
            )))
        }
    };
    let standing = super::record_of(&opts.destination, &workspace)?;
    let unknown: Vec<String> = items
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let d = c.name.as_str();
            !standing.images.contains_key(d)
                && !standing.catalogs.contains_key(d)
                && !standing.deleted.contains_key(d)
        })
        .map(|(i, c)| {
            format!(
                "item {} (imageReference {:?}): not mirrored by the workspace {}",
                i + 1,
                c.item.image_reference,
                workspace.display()
            )
        })
        .collect();
    if !unknown.is_empty() {
        return Err(Error::Usage(format!(
            "the delete list is refused, nothing was deleted:\n{}",
            unknown.join("\n")
        )));
    }
    Ok(Prepared {
        items,
        changes: plan.map(|p| p.catalogs).unwrap_or_default(),
        workspace,
        standing,
    })
}

/// What a run would do, with nothing changed.
fn dry_run(p: &Prepared) -> Report {
    let mut report = Report::default();
    let mut after = p.standing.clone();
    for ch in p.changes.iter().filter(|c| !c.whole) {
        remove_bundles(&mut after, ch);
        report.catalogs_rebuilt.push(ch.destination.clone());
    }
    let (whole, generic, listed) = sets(&p.changes, &p.items);
    let needed = needed(&after, &whole, &generic, &listed);
    for c in &p.items {
        match keep_reason(c, &after, &needed, &whole) {
            Some(why) => report.kept.push((c.name.clone(), why)),
            None => report.deleted.push(c.name.clone()),
        }
    }
    report
}

/// Opens the target of a list checked whole, given its workspace.
pub type Open<'a> = dyn Fn(&Path) -> Result<Box<dyn Target>, Error> + 'a;

/// Executes the list as `opts` say, on the target `open` gives.
pub fn execute(
    opts: &ExecuteOptions,
    open: &Open,
    progress: &dyn Progress,
) -> Result<Report, Error> {
    let prepared = prepare(opts)?;
    if opts.dry_run {
        return Ok(dry_run(&prepared));
    }
    let mut target = open(&prepared.workspace)?;
    run(prepared, target.as_mut(), opts, progress)
}

/// The steps, in order, on `target`.
fn run(
    p: Prepared,
    target: &mut dyn Target,
    opts: &ExecuteOptions,
    progress: &dyn Progress,
) -> Result<Report, Error> {
    let Prepared {
        items,
        changes,
        mut standing,
        ..
    } = p;
    let mut report = Report::default();
    if items.is_empty() && changes.is_empty() {
        return Ok(report);
    }
    target
        .probe(items.first(), &changes)
        .map_err(|e| Error::failed(format!("{}; nothing was deleted", e.detail())))?;
    // Done / total: the catalogs rebuilt, then the images.
    progress.report(Event::Images(
        changes.iter().filter(|c| !c.whole).count() + items.len(),
    ));
    // Catalogs first: no catalog names a bundle whose images are deleted.
    for ch in changes.iter().filter(|c| !c.whole) {
        progress.report(Event::ImageStarted(&ch.destination));
        let r = target
            .rebuild(ch, &standing)
            .map_err(|e| Error::failed(format!("{}; nothing was deleted", e.detail())))?;
        if let Some(digest) = r {
            report.catalogs_rebuilt.push(ch.destination.clone());
            if let Some(c) = standing.catalogs.get_mut(&ch.destination) {
                c.digest = digest;
            }
        }
        remove_bundles(&mut standing, ch);
        target.record(&standing)?;
        progress.report(Event::ImageDone {
            name: &ch.destination,
            ok: true,
        });
    }
    let (whole, generic, listed) = sets(&changes, &items);
    let needed = needed(&standing, &whole, &generic, &listed);
    // Whole catalogs go before their images; then the images.
    let mut order: Vec<&Checked> = items.iter().collect();
    order.sort_by_key(|c| c.item.kind != ItemType::OperatorCatalog);
    let mut signed: Vec<(&Checked, Vec<String>)> = Vec::new();
    let mut stop = false;
    for c in order {
        if stop {
            report.not_attempted += 1;
            continue;
        }
        let dest = c.name.clone();
        if let Some(why) = keep_reason(c, &standing, &needed, &whole) {
            report.kept.push((dest.clone(), why));
            progress.report(Event::ImageDone {
                name: &dest,
                ok: true,
            });
            continue;
        }
        progress.report(Event::ImageStarted(&dest));
        let recorded = standing
            .images
            .get(&dest)
            .map(|i| i.digest.clone())
            .or_else(|| standing.catalogs.get(&dest).map(|c| c.digest.clone()))
            .or_else(|| standing.deleted.get(&dest).cloned())
            .filter(|d| !d.is_empty());
        let in_use = target.in_use(&standing, &dest);
        match target.delete(c, recorded.as_deref(), &in_use) {
            Ok(Gone::Now(digests)) => {
                target.forget(c, &digests[0]);
                standing.delete(&dest, &digests[0]);
                signed.push((c, digests));
                report.deleted.push(dest.clone());
            }
            Ok(Gone::Already) => {
                if let Some(d) = &recorded {
                    target.forget(c, d);
                    standing.delete(&dest, d);
                }
                report.already_gone.push(dest.clone());
            }
            Ok(Gone::Moved(now)) => report.kept.push((
                dest.clone(),
                vec![format!(
                    "the name now gives {now}, not the digest the workspace mirrored"
                )],
            )),
            Err(e) => {
                report
                    .failed
                    .push((dest.clone(), crate::text::one_line(&e)));
                stop = !opts.keep_going;
            }
        }
        progress.report(Event::ImageDone {
            name: &dest,
            ok: report.failed.last().is_none_or(|(d, _)| d != &dest),
        });
    }
    target.record(&standing)?;
    // Signatures last: an image is never left without its signature while it stands.
    for (c, digests) in signed.iter().filter(|_| !opts.keep_signatures) {
        match target.signatures(c, digests) {
            Ok(n) => report.signatures += n,
            Err(e) => report.failed.push((
                format!("signatures of {}", c.name),
                crate::text::one_line(&e),
            )),
        }
    }
    report.blobs_removed = target.finish()?;
    Ok(report)
}

/// The catalogs deleted whole, the additional images listed, and every image listed.
type Sets<'a> = (BTreeSet<&'a str>, BTreeSet<&'a str>, BTreeSet<&'a str>);

fn sets<'a>(changes: &'a [Change], items: &'a [Checked]) -> Sets<'a> {
    let whole = changes
        .iter()
        .filter(|c| c.whole)
        .map(|c| c.destination.as_str())
        .collect();
    let generic = items
        .iter()
        .filter(|c| c.item.kind == ItemType::Generic)
        .map(|c| c.name.as_str())
        .collect();
    (
        whole,
        generic,
        items.iter().map(|c| c.name.as_str()).collect(),
    )
}

/// The record after `ch`'s catalog was rebuilt: its removed bundles are no longer kept.
fn remove_bundles(standing: &mut Standing, ch: &Change) {
    if let Some(c) = standing.catalogs.get_mut(&ch.destination) {
        for (p, gone) in &ch.removed {
            if let Some(b) = c.bundles.get_mut(p) {
                b.retain(|x| !gone.contains(x));
            }
        }
        c.bundles.retain(|_, b| !b.is_empty());
    }
}

/// The workspace of a list at `WORKSPACE/delete/LIST`.
fn above_delete_dir(list: &Path) -> PathBuf {
    list.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// (repository, digest) -> what still needs it, for every image of the record: the owners
/// that still stand, and any image the list does not name (it stands whatever names it).
fn needed(
    standing: &Standing,
    whole: &BTreeSet<&str>,
    generic: &BTreeSet<&str>,
    listed: &BTreeSet<&str>,
) -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (dest, img) in &standing.images {
        let mut why: Vec<String> = img
            .named_by
            .iter()
            .filter(|o| stands(o, dest, standing, whole, generic))
            .map(super::generate::owner_line)
            .collect();
        if !listed.contains(dest.as_str()) && why.is_empty() {
            why.push(format!("{dest}, which the list does not name"));
        }
        if !why.is_empty() {
            out.entry(Standing::key(dest, &img.digest))
                .or_default()
                .extend(why);
        }
    }
    out
}

/// Whether `owner` of the image at `dest` still stands after the list.
fn stands(
    owner: &Owner,
    dest: &str,
    standing: &Standing,
    whole: &BTreeSet<&str>,
    generic: &BTreeSet<&str>,
) -> bool {
    match owner {
        Owner::Additional => !generic.contains(dest),
        Owner::Bundle {
            catalog,
            package,
            bundle,
            ..
        } => {
            !whole.contains(catalog.as_str())
                && standing
                    .catalogs
                    .get(catalog)
                    .and_then(|c| c.bundles.get(package))
                    .is_some_and(|b| b.contains(bundle))
        }
    }
}

/// Why a listed item is kept, if it is.
fn keep_reason(
    c: &Checked,
    standing: &Standing,
    needed: &BTreeMap<(String, String), Vec<String>>,
    whole: &BTreeSet<&str>,
) -> Option<Vec<String>> {
    let dest = c.name.as_str();
    if let Some(catalog) = standing.catalogs.get(dest) {
        if !whole.contains(dest) {
            return Some(vec![
                "a catalog is deleted only when the configuration names it with no packages".into(),
            ]);
        }
        let going = |d: &str| whole.contains(d);
        return standing
            .sharing(dest, &catalog.digest, &going)
            .map(|by| vec![by]);
    }
    let img = standing.images.get(dest)?;
    needed.get(&Standing::key(dest, &img.digest)).cloned()
}
