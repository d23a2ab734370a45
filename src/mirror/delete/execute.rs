//! Phase 2: a `DeleteImageList` executed. The list is checked whole first (every item inside
//! the destination, of a type opreg mirrors, and mirrored by the workspace); then each
//! registry is probed for deletes; then the catalogs of the plan are rebuilt without their
//! removed bundles; then each listed image that nothing still standing names is deleted by
//! digest (an index with its children), and last the signatures of what was deleted. The
//! records are updated as deletes succeed, so the same command after a crash finishes the job.

use super::list::{self, Checked, ItemType};
use super::{catalogs, Change};
use crate::error::Error;
use crate::image::reference::Reference;
use crate::mirror::standing::{Owner, Standing};
use crate::progress::{Event, Progress};
use crate::registry::{BlobSource, Deleted, Registry};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// How to execute a list.
#[derive(Clone, Debug)]
pub struct ExecuteOptions {
    pub list: PathBuf,
    /// `--workspace`; by default the directory above the list's `delete/`.
    pub workspace: Option<PathBuf>,
    /// `REGISTRY[/PREFIX]`, without `docker://`.
    pub destination: String,
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
}

/// A list checked whole, with its workspace's record and the plan's catalog changes.
struct Prepared {
    items: Vec<Checked>,
    changes: Vec<Change>,
    workspace: PathBuf,
    standing: Standing,
}

/// Reads and checks the list: inside the destination, of types opreg mirrors, and every item
/// mirrored by the workspace (found beside the list, or `--workspace`).
fn prepare(opts: &ExecuteOptions) -> Result<Prepared, Error> {
    let usage = |e: crate::mirror::MirrorError| Error::Usage(e.to_string());
    let name = opts.list.display().to_string();
    let text =
        std::fs::read_to_string(&opts.list).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let parsed = list::read(&text, &name).map_err(usage)?;
    let destination = opts.destination.trim_end_matches('/').to_string();
    let items = list::check(&parsed, &destination).map_err(usage)?;
    let plan = super::read_plan(&opts.list).map_err(usage)?;
    let workspace = match (&opts.workspace, &plan) {
        (Some(w), _) => w.clone(),
        (None, Some(_)) => above_delete_dir(&opts.list),
        (None, None) => {
            return Err(Error::Usage(format!(
                "{name} has no opreg plan beside it ({}): give --workspace, the workspace that mirrored these images",
                super::plan_path(&opts.list).display()
            )))
        }
    };
    let standing = Standing::read(&workspace).map_err(usage)?;
    let unknown: Vec<String> = items
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let d = dest_of(c);
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
            Some(why) => report.kept.push((dest_of(c).to_string(), why)),
            None => report.deleted.push(dest_of(c).to_string()),
        }
    }
    report
}

/// Executes the list as `opts` say.
pub fn execute(opts: &ExecuteOptions, progress: &dyn Progress) -> Result<Report, Error> {
    let prepared = prepare(opts)?;
    if opts.dry_run {
        return Ok(dry_run(&prepared));
    }
    let Prepared {
        items,
        changes,
        workspace,
        mut standing,
    } = prepared;
    let mut report = Report::default();
    // The registry is asked on the first image's reference, else the first catalog's.
    let probe_at = match (items.first(), changes.first()) {
        (Some(c), _) => c.reference.clone(),
        (None, Some(ch)) => crate::image::reference::parse(&ch.destination)
            .map_err(|e| Error::Usage(e.to_string()))?,
        (None, None) => return Ok(report),
    };
    let conn = &opts.image.connection;
    Registry::new(&probe_at, conn)
        .and_then(|mut r| r.probe_delete())
        .map_err(|e| {
            Error::failed(format!(
                "{}; nothing was deleted",
                crate::text::one_line(&e)
            ))
        })?;
    // Done / total: the catalogs rebuilt, then the images.
    progress.report(Event::Images(
        changes.iter().filter(|c| !c.whole).count() + items.len(),
    ));
    let records = Records::new(&workspace);
    let completed = crate::mirror::completed::read(&records.completed);
    // Catalogs first: no catalog tag names a bundle whose images are deleted.
    for ch in changes.iter().filter(|c| !c.whole) {
        progress.report(Event::ImageStarted(&ch.destination));
        let r = rebuild_one(ch, &standing, &opts.image)
            .map_err(|e| Error::failed(format!("{}; nothing was deleted", e.detail())))?;
        if let Some(digest) = r {
            report.catalogs_rebuilt.push(ch.destination.clone());
            if let Some(c) = standing.catalogs.get_mut(&ch.destination) {
                c.digest = digest;
            }
        }
        remove_bundles(&mut standing, ch);
        standing
            .write(&workspace)
            .map_err(|e| Error::failed(e.to_string()))?;
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
    let mut signed: Vec<(Reference, Vec<String>)> = Vec::new();
    let mut stop = false;
    for c in order {
        if stop {
            report.not_attempted += 1;
            continue;
        }
        let dest = dest_of(c).to_string();
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
            .or_else(|| standing.deleted.get(&dest).cloned());
        let in_use = in_use(&standing, &completed, &dest);
        match delete_one(&c.reference, recorded.as_deref(), &in_use, conn) {
            Ok(Gone::Now(digests)) => {
                records.gone(&dest, &digests[0], &c.reference);
                standing.delete(&dest, &digests[0]);
                signed.push((c.reference.clone(), digests));
                report.deleted.push(dest.clone());
            }
            Ok(Gone::Already) => {
                if let Some(d) = &recorded {
                    records.gone(&dest, d, &c.reference);
                    standing.delete(&dest, d);
                }
                report.already_gone.push(dest.clone());
            }
            Ok(Gone::Moved(now)) => report.kept.push((
                dest.clone(),
                vec![format!(
                    "the tag now names {now}, not the digest the workspace mirrored"
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
    standing
        .write(&workspace)
        .map_err(|e| Error::failed(e.to_string()))?;
    // Signatures last: an image is never left without its signature while it stands.
    for (r, digests) in signed.iter().filter(|_| !opts.keep_signatures) {
        match delete_signatures(r, digests, conn) {
            Ok(n) => report.signatures += n,
            Err(e) => report.failed.push((
                format!("signatures of {}", r.given),
                crate::text::one_line(&e),
            )),
        }
    }
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
        .map(dest_of)
        .collect();
    (whole, generic, items.iter().map(dest_of).collect())
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

/// An item's destination, as the records name it (without `docker://`).
fn dest_of(c: &Checked) -> &str {
    c.item
        .image_reference
        .strip_prefix("docker://")
        .unwrap_or(&c.item.image_reference)
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

/// The digests other images standing in `dest`'s repository use: their own and, for an
/// index, its platform images' (from the record of completed images).
fn in_use(
    standing: &Standing,
    completed: &crate::mirror::completed::Completed,
    dest: &str,
) -> BTreeSet<String> {
    let repo = crate::mirror::standing::repository_of(dest);
    let mut out = BTreeSet::new();
    for (d, img) in &standing.images {
        if d == dest || crate::mirror::standing::repository_of(d) != repo {
            continue;
        }
        out.insert(img.digest.clone());
        if let Some(children) = completed.get(&(d.clone(), img.digest.clone())) {
            out.extend(children.iter().cloned());
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
    let dest = dest_of(c);
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

/// What deleting one image did.
enum Gone {
    /// Deleted: the manifest's digest, then its children's.
    Now(Vec<String>),
    Already,
    /// The tag names another digest than the recorded one: left alone.
    Moved(String),
}

/// Deletes the image `r` (resolving a tag to its digest first), and the platform images of an
/// index that no other image of the repository uses (`in_use`).
fn delete_one(
    r: &Reference,
    recorded: Option<&str>,
    in_use: &BTreeSet<String>,
    conn: &crate::registry::Connection,
) -> anyhow::Result<Gone> {
    let mut reg = Registry::new(r, conn)?;
    let at = r
        .digest
        .clone()
        .or_else(|| r.tag.clone())
        .unwrap_or_default();
    let Some(m) = reg.manifest_if_any(&at, crate::image::DEFAULT_MAX_MANIFEST_SIZE)? else {
        return Ok(Gone::Already);
    };
    let digest = m
        .digest
        .clone()
        .unwrap_or_else(|| crate::digest::sha256(&m.bytes));
    if recorded.is_some_and(|rec| rec != digest) {
        return Ok(Gone::Moved(digest));
    }
    let children: Vec<String> =
        match crate::oci::manifest::parse_manifest(&m.bytes, m.content_type.as_deref()) {
            Ok(crate::oci::manifest::Manifest::Index { manifests, .. }) => {
                manifests.into_iter().map(|d| d.digest).collect()
            }
            _ => Vec::new(),
        };
    if reg.delete_manifest(&digest)? == Deleted::AlreadyGone {
        return Ok(Gone::Already);
    }
    for child in children.iter().filter(|c| !in_use.contains(*c)) {
        reg.delete_manifest(child)?;
    }
    let mut all = vec![digest];
    all.extend(children);
    Ok(Gone::Now(all))
}

/// Deletes the signatures, attestations, SBOMs and referrers of `digests` in `r`'s repository;
/// returns how many manifests went.
fn delete_signatures(
    r: &Reference,
    digests: &[String],
    conn: &crate::registry::Connection,
) -> anyhow::Result<usize> {
    let mut reg = Registry::new(r, conn)?;
    let limit = crate::image::DEFAULT_MAX_MANIFEST_SIZE;
    let mut n = 0;
    for d in digests {
        let base = crate::digest::tag_form(d);
        let mut found = Vec::new();
        for suffix in [".sig", ".att", ".sbom", ""] {
            if let Some(m) = reg.manifest_if_any(&format!("{base}{suffix}"), limit)? {
                found.push(m.digest.unwrap_or_else(|| crate::digest::sha256(&m.bytes)));
            }
        }
        if let Some(bytes) = reg.get_if_any(&format!("referrers/{d}"), limit)? {
            if let Ok(crate::oci::manifest::Manifest::Index { manifests, .. }) =
                crate::oci::manifest::parse_manifest(&bytes, None)
            {
                found.extend(manifests.into_iter().map(|m| m.digest));
            }
        }
        for f in found {
            if reg.delete_manifest(&f)? == Deleted::Now {
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Rebuilds one catalog; the digest pushed, if one was. The manifest it superseded (or
/// one an interrupted run left) is deleted after the push, unless another catalog or image
/// the workspace keeps in the same repository has that digest (a DELETE would take its tag).
fn rebuild_one(
    ch: &Change,
    standing: &Standing,
    image: &crate::image::ImageOptions,
) -> Result<Option<String>, Error> {
    let r: Reference =
        crate::image::reference::parse(&ch.destination).map_err(|e| Error::Usage(e.to_string()))?;
    let conn = &image.connection;
    let current = Registry::new(&r, conn)
        .and_then(|mut reg| {
            let at = r
                .tag
                .clone()
                .or_else(|| r.digest.clone())
                .unwrap_or_default();
            reg.manifest_if_any(&at, crate::image::DEFAULT_MAX_MANIFEST_SIZE)
        })
        .map_err(|e| Error::failed(crate::text::one_line(&e)))?
        .map(|m| m.digest.unwrap_or_else(|| crate::digest::sha256(&m.bytes)))
        .ok_or_else(|| {
            Error::failed(format!(
                "the catalog {} is not at the destination",
                ch.destination
            ))
        })?;
    let rebuilt = catalogs::rebuild(ch, &current, image)?;
    let superseded = match &rebuilt.digest {
        Some(new) if *new != current => Some(current.clone()),
        Some(_) => None,
        None if current != ch.digest => Some(ch.digest.clone()),
        None => None,
    };
    let shared = |old: &str| standing.sharing(&ch.destination, old, &|_| false).is_some();
    if let Some(old) = superseded.filter(|o| !shared(o)) {
        Registry::new(&r, conn)
            .and_then(|mut reg| reg.delete_manifest(&old))
            .map_err(|e| Error::failed(crate::text::one_line(&e)))?;
    }
    Ok(rebuilt.digest)
}

/// The workspace's append-only records, updated as each image goes.
struct Records {
    completed: PathBuf,
    placements: PathBuf,
}

impl Records {
    fn new(workspace: &Path) -> Records {
        Records {
            completed: workspace.join(crate::mirror::completed::FILE),
            placements: workspace.join("placements.tsv"),
        }
    }

    /// The image at `dest` is gone: the record of completed images forgets it (a later run
    /// copies it again), and no blob is mounted from its repository on a placement's word.
    fn gone(&self, dest: &str, digest: &str, r: &Reference) {
        // A lost line costs a question to the destination on the next run, or an upload.
        let _ = crate::mirror::completed::append_gone(&self.completed, dest, digest);
        if self.placements.exists() {
            let _ = crate::mirror::placements::forget(&self.placements, &r.registry, &r.repository);
        }
    }
}
