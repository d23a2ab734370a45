//! Copying the planned images: each one whole, by digest (every platform of an index, the
//! manifests byte for byte), at most `parallel_images` at a time with `parallel_layers` blobs
//! each, a blob shared by several images sent once (and mounted where another repository of
//! the destination registry has it). An image whose digest the destination already holds at
//! its tag is not copied again, so a rerun copies only what is missing.
//!
//! With each image go its signatures ([`super::signatures`]). A failure stops the run unless
//! `keep_going` is set; either way every failure is reported.

use super::completed;
pub use super::ends::End;
use super::ends::{self, Reader};
use super::placements;
use super::plan::PlannedImage;
use super::signatures::{self, Found};
use crate::image::copy::{self, CopyOptions, InFlight};
use crate::image::destination::Destination;
use crate::image::reference::{self, Reference};
use crate::oci::manifest::{self, Manifest};
use crate::progress::{Event, Progress};
use crate::registry::Connections;
use anyhow::{anyhow, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How to copy.
#[derive(Clone, Debug)]
pub struct TransferOptions {
    pub parallel_images: usize,
    pub parallel_layers: usize,
    pub keep_going: bool,
    /// Leave signatures, attestations, SBOMs and referrers behind.
    pub remove_signatures: bool,
    pub max_manifest_size: u64,
    pub chunk_size: u64,
    /// Where the repositories holding each blob sent are kept across runs (a rerun mounts
    /// from them instead of uploading again).
    pub placements: Option<std::path::PathBuf>,
    /// The source side's image options when a `--signature-policy` is to be satisfied: each
    /// image's digest is checked before it is copied.
    pub policy: Option<crate::image::ImageOptions>,
    /// Where the images are read: registries, or the layout of a mirror to disk.
    pub from: End,
    /// Where they go: registries, or a layout (named by their sources).
    pub to: End,
    /// The record of the images completed at the destination registry, read at the start and
    /// appended to as each completes ([`completed`]).
    pub completed: Option<std::path::PathBuf>,
    /// The longest one image's copy may take, its signatures included (`--image-timeout`).
    pub image_timeout: Option<std::time::Duration>,
}

/// What happened to one image.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub source: String,
    pub destination: String,
    /// The digest copied (the source's, kept at the destination).
    pub digest: String,
    /// The destination held it already (found there, or recorded as completed).
    pub already_there: bool,
    /// Taken as there because the workspace's record of completed images holds it: the
    /// destination was not asked.
    pub recorded: bool,
    pub uploaded: usize,
    pub uploaded_bytes: u64,
    pub mounted: usize,
    pub skipped: usize,
    /// Signature tags and referrers copied with it (`TAG` or `DIGEST`).
    pub signatures: Vec<String>,
    /// The failure, when it failed.
    pub error: Option<String>,
}

/// What a dry run learned of one image at the source and the destination.
#[derive(Clone, Debug, Default)]
pub struct Inspected {
    pub digest: String,
    /// Blobs (configs and layers, each once) and their bytes.
    pub blobs: usize,
    pub bytes: u64,
    /// Blobs the destination has already, and their bytes (when it could be asked).
    pub present: usize,
    pub present_bytes: u64,
    /// The destination was asked about every blob (false: the source could not be read, or
    /// the destination did not answer).
    pub asked: bool,
    pub signatures: Vec<Found>,
    pub error: Option<String>,
}

impl Inspected {
    /// Whether the destination holds every blob of the image.
    pub fn all_there(&self) -> bool {
        self.asked && self.present == self.blobs
    }
}

/// Copies `images`; returns one outcome per image attempted, in the plan's order.
pub fn copy_all(
    images: &[PlannedImage],
    sides: &Connections,
    opts: &TransferOptions,
    progress: &dyn Progress,
) -> Vec<Outcome> {
    progress.report(Event::Images(images.len()));
    let shared = Shared {
        in_flight: Arc::new(InFlight::default()),
        found: signatures::Cache::default(),
        completed: opts
            .completed
            .as_deref()
            .map(completed::read)
            .unwrap_or_default(),
    };
    let log = opts.placements.as_deref();
    if let Some(path) = log {
        for p in placements::read(path) {
            shared.in_flight.seed(p);
        }
    }
    let stop = |o: &Outcome| o.error.is_some() && !opts.keep_going;
    parallel(images.len(), opts.parallel_images, stop, |i| {
        let img = &images[i];
        progress.report(Event::ImageStarted(&img.wanted.source));
        let mut out = copy_one(img, sides, opts, &shared, progress);
        if let Some(path) = log {
            if let Err(e) = placements::append(path, &shared.in_flight.take_new()) {
                out.error.get_or_insert(format!("{}: {e}", path.display()));
            }
        }
        progress.report(Event::ImageDone {
            name: &img.wanted.source,
            ok: out.error.is_none(),
        });
        out
    })
}

/// What a dry run reads of each image: its blobs and bytes, those the destination has, and
/// its signatures. Nothing is copied.
pub fn inspect_all(
    images: &[PlannedImage],
    sides: &Connections,
    opts: &TransferOptions,
) -> Vec<Inspected> {
    let cache = signatures::Cache::default();
    parallel(
        images.len(),
        opts.parallel_images,
        |_| false,
        |i| {
            let mut out = Inspected::default();
            if let Err(e) = inspect(&images[i], sides, opts, &cache, &mut out) {
                out.error = Some(crate::text::one_line(&e));
            }
            out
        },
    )
}

fn inspect(
    img: &PlannedImage,
    sides: &Connections,
    opts: &TransferOptions,
    cache: &signatures::Cache,
    out: &mut Inspected,
) -> Result<()> {
    let from = reference::parse(&img.wanted.source).map_err(|e| anyhow!("{e}"))?;
    let mut src = Reader::open(&opts.from, &from, &sides.source)?;
    let limit = opts.max_manifest_size;
    let top = src.top(&img.wanted.source, &from, limit)?;
    out.digest = crate::digest::sha256(&top.bytes);
    let mut digests = vec![out.digest.clone()];
    let mut images = Vec::new();
    match manifest::parse_manifest(&top.bytes, top.content_type.as_deref())
        .map_err(|e| anyhow!("{e}"))?
    {
        Manifest::Index { manifests } => {
            for d in manifests {
                let child = src.manifest(&d.digest, limit)?;
                let m = manifest::parse_manifest(&child.bytes, Some(&d.media_type))
                    .map_err(|e| anyhow!("{e}"))?;
                images.push(m);
                digests.push(d.digest);
            }
        }
        m => images.push(m),
    }
    let blobs = manifest::blobs_of(images).unwrap_or_default();
    // What the source holds is counted whole before the destination is asked: a destination
    // that cannot be asked leaves the count of what it has, not of what there is.
    out.blobs = blobs.len();
    out.bytes = blobs.iter().map(|(_, size)| size).sum();
    let mut dest = ends::destination(&opts.to, &img.destination, &out.digest, &sides.destination)?;
    for (d, size) in &blobs {
        if dest.has_blob(d)? {
            out.present += 1;
            out.present_bytes += size;
        }
    }
    out.asked = true;
    if !opts.remove_signatures {
        out.signatures = find_signatures(&mut src, &from, &digests, cache, limit)?;
    }
    Ok(())
}

/// What travels with an image, found where it is read.
fn find_signatures(
    src: &mut Reader,
    from: &Reference,
    digests: &[String],
    cache: &signatures::Cache,
    limit: u64,
) -> Result<Vec<Found>> {
    match src {
        Reader::Registry(reg) => signatures::find(reg, from, digests, cache),
        Reader::Layout(layout, _) => signatures::find_in_layout(layout, from, digests, limit),
    }
}

/// Runs `f` on `0..count`, `workers` at a time; once `stop` holds for a result, no new item
/// starts. The results, in order, of the items that ran.
fn parallel<T: Send>(
    count: usize,
    workers: usize,
    stop: impl Fn(&T) -> bool + Sync,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.clamp(1, count.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= count || stopped.load(Ordering::SeqCst) {
                    return;
                }
                let out = f(i);
                if stop(&out) {
                    stopped.store(true, Ordering::SeqCst);
                }
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, out));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, o)| o).collect()
}

/// What copies running at the same time share.
struct Shared {
    in_flight: Arc<InFlight>,
    found: signatures::Cache,
    /// The images earlier runs completed at the destination registry.
    completed: completed::Completed,
}

fn copy_one(
    img: &PlannedImage,
    sides: &Connections,
    opts: &TransferOptions,
    shared: &Shared,
    progress: &dyn Progress,
) -> Outcome {
    let mut out = Outcome {
        source: img.wanted.source.clone(),
        destination: img.destination.clone(),
        ..Default::default()
    };
    // Every request of this image's copy, on either side, ends by its deadline.
    let timed;
    let sides = match opts.image_timeout {
        Some(t) => {
            let mut s = sides.clone();
            let deadline = std::time::Instant::now() + t;
            s.source.deadline = Some(deadline);
            s.destination.deadline = Some(deadline);
            timed = s;
            &timed
        }
        None => sides,
    };
    if let Err(e) = try_copy(img, sides, opts, shared, progress, &mut out) {
        out.error = Some(crate::text::one_line(&e));
    }
    out
}

fn try_copy(
    img: &PlannedImage,
    sides: &Connections,
    opts: &TransferOptions,
    shared: &Shared,
    progress: &dyn Progress,
    out: &mut Outcome,
) -> Result<()> {
    let from = reference::parse(&img.wanted.source).map_err(|e| anyhow!("{e}"))?;
    let limit = opts.max_manifest_size;
    let mut src = Reader::open(&opts.from, &from, &sides.source)?;
    // An image an earlier run completed with this digest is taken as there (no question to
    // the destination). Else an image named by digest is looked for at the destination first:
    // when it is there, the source is not asked, and the destination's copy (checked against
    // the digest) gives an index's platforms for their signatures.
    let recorded = |dest: &Destination, d: &str| {
        let key = (ends::key(dest)?, d.to_string());
        shared.completed.get(&key).cloned()
    };
    let (top, mut dest, held) = match from.digest.clone() {
        Some(d) => {
            let mut dest = ends::destination(&opts.to, &img.destination, &d, &sides.destination)?;
            match recorded(&dest, &d) {
                Some(children) => (Top::Recorded(d, children), dest, true),
                None => match dest.held(&d, limit)? {
                    Some(f) => (Top::Fetched(f), dest, true),
                    None => (
                        Top::Fetched(src.top(&img.wanted.source, &from, limit)?),
                        dest,
                        false,
                    ),
                },
            }
        }
        None => {
            let top = src.top(&img.wanted.source, &from, limit)?;
            let d = crate::digest::sha256(&top.bytes);
            let mut dest = ends::destination(&opts.to, &img.destination, &d, &sides.destination)?;
            match recorded(&dest, &d) {
                Some(children) => (Top::Recorded(d, children), dest, true),
                None => {
                    let there = ends::holds(&mut dest, &d, limit)?;
                    (Top::Fetched(top), dest, there)
                }
            }
        }
    };
    let (digest, children) = top.digest_and_children()?;
    if from.digest.as_deref().is_some_and(|d| d != digest) {
        return Err(anyhow!(
            "manifest {} does not match its digest",
            from.manifest_ref()
        ));
    }
    out.digest = digest.clone();
    if let (Some(p), End::Registry) = (&opts.policy, &opts.from) {
        crate::image::check_signature_policy(std::path::Path::new(&img.wanted.source), p, &digest)?;
    }
    out.already_there = held;
    out.recorded = matches!(top, Top::Recorded(..));
    if !out.already_there {
        let copied = copy::copy_digest(
            &src.image(&from),
            &digest,
            &dest.target(),
            sides,
            &copy_options(opts, shared),
            &Bytes {
                progress,
                shared,
                log: opts.placements.as_deref(),
            },
        )?;
        out.uploaded = copied.uploaded;
        out.uploaded_bytes = copied.uploaded_bytes;
        out.mounted = copied.mounted;
        out.skipped = copied.skipped;
    }
    if !opts.remove_signatures {
        let mut digests = vec![digest.clone()];
        digests.extend(children.iter().cloned());
        let found = find_signatures(&mut src, &from, &digests, &shared.found, limit)?;
        out.signatures = copy_signatures(&found, &src, &from, &mut dest, sides, opts, shared)?;
    }
    if let (Some(path), Some(key), Top::Fetched(_)) = (&opts.completed, ends::key(&dest), &top) {
        completed::append(path, &key, &digest, &children)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// An image's top manifest, as read, or as an earlier run recorded it.
enum Top {
    Fetched(crate::registry::Fetched),
    /// Its digest and an index's platform digests.
    Recorded(String, Vec<String>),
}

impl Top {
    fn digest_and_children(&self) -> Result<(String, Vec<String>)> {
        Ok(match self {
            Top::Recorded(d, children) => (d.clone(), children.clone()),
            Top::Fetched(f) => {
                let children = match manifest::parse_manifest(&f.bytes, f.content_type.as_deref()) {
                    Ok(Manifest::Index { manifests }) => {
                        manifests.into_iter().map(|d| d.digest).collect()
                    }
                    _ => Vec::new(),
                };
                (crate::digest::sha256(&f.bytes), children)
            }
        })
    }
}

/// Copies each signature, attestation, SBOM and referrer the destination lacks.
fn copy_signatures(
    found: &[Found],
    src: &Reader,
    from: &Reference,
    dest: &mut Destination,
    sides: &Connections,
    opts: &TransferOptions,
    shared: &Shared,
) -> Result<Vec<String>> {
    let limit = opts.max_manifest_size;
    let mut copied = Vec::new();
    for f in found {
        let (digest, (to, there), name) = match f {
            Found::Tag { tag, digest } => (
                digest,
                ends::tag_beside(dest, from, tag, digest, limit)?,
                tag,
            ),
            Found::Referrer { digest } => (
                digest,
                ends::referrer_beside(dest, from, digest, limit)?,
                digest,
            ),
        };
        if there {
            continue;
        }
        let mut s = from.clone();
        s.tag = None;
        s.digest = Some(digest.clone());
        copy::copy_digest(
            &src.image(&s),
            digest,
            &to,
            sides,
            &copy_options(opts, shared),
            &crate::progress::Silent,
        )?;
        copied.push(name.clone());
    }
    Ok(copied)
}

fn copy_options(opts: &TransferOptions, shared: &Shared) -> CopyOptions {
    CopyOptions {
        jobs: opts.parallel_layers.max(1),
        in_flight: shared.in_flight.clone(),
        max_manifest_size: opts.max_manifest_size,
        chunk_size: opts.chunk_size,
        ..Default::default()
    }
}

/// A copy's progress, as bytes for the mirror's; each blob's placement recorded as it lands.
struct Bytes<'a> {
    progress: &'a dyn Progress,
    shared: &'a Shared,
    log: Option<&'a std::path::Path>,
}

impl Progress for Bytes<'_> {
    fn report(&self, event: Event<'_>) {
        let Event::Blob { size, .. } = event else {
            return;
        };
        self.progress.report(Event::Bytes(size));
        if let Some(path) = self.log {
            // Losing the record only costs an upload on a rerun.
            let _ = placements::append(path, &self.shared.in_flight.take_new());
        }
    }
}
