//! Copying an image or an index, every platform of it, from a registry or an OCI layout to a
//! registry or an OCI layout, keeping every digest: manifests are copied byte for byte.
//!
//! The manifests are read first (they are small and size-limited); then the blobs go, at most
//! [`CopyOptions::jobs`] at a time, each streamed from the source to the destination without
//! being held whole: a blob the destination has is not sent (HEAD), one in another repository
//! of the same registry is mounted, others are uploaded (in chunks when large). Manifests go
//! last, an index's children before the index, so a tag never points at something missing.
//! Copies running at the same time that share an [`InFlight`] send a blob they share once.
//! Every end is written through a [`Destination`]; progress goes out as [`Event`]s.

use super::destination::Destination;
use super::reference::{ImageSource, Reference};
use crate::oci::layout_reader::Layout;
use crate::oci::source::BlobSource;
pub use crate::progress::Sent;
use crate::progress::{Event, Progress};
use crate::registry::upload::Sending;
use crate::registry::{Connection, Connections, Registry};
use anyhow::{anyhow, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// How to copy (how to reach each side is the caller's [`Connections`], given beside).
#[derive(Clone, Debug)]
pub struct CopyOptions {
    /// A repository of the destination's registry that may hold some of the blobs (a base
    /// image's): they are mounted from it. Without one, a source repository on the same
    /// registry is mounted from.
    pub mount_from: Option<String>,
    /// Blobs larger than this go up in chunks of this size.
    pub chunk_size: u64,
    /// Largest manifest accepted, in bytes.
    pub max_manifest_size: u64,
    /// Blobs copied at the same time (at least 1).
    pub jobs: usize,
    /// Blobs being sent, shared by copies that run at the same time.
    pub in_flight: Arc<InFlight>,
}

impl Default for CopyOptions {
    fn default() -> CopyOptions {
        CopyOptions {
            mount_from: None,
            chunk_size: 16 << 20,
            max_manifest_size: 4 << 20,
            jobs: 4,
            in_flight: Arc::default(),
        }
    }
}

/// A blob's send, done once.
type Outcome = OnceLock<Result<Sent, String>>;

/// The blobs copies have sent or are sending, by destination and digest: a second copy of the
/// same blob to the same place waits for the first and sends nothing.
#[derive(Debug, Default)]
pub struct InFlight {
    blobs: Mutex<HashMap<String, Arc<Outcome>>>,
    /// A repository each blob was sent to, by registry and digest: a blob another repository
    /// of the same registry needs is mounted from it.
    placed: Mutex<HashMap<(String, String), String>>,
    /// Placements made since [`InFlight::take_new`] was last called.
    new: Mutex<Vec<Placement>>,
}

/// A blob at a registry, and a repository of it that holds the blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub registry: String,
    pub digest: String,
    pub repository: String,
}

impl InFlight {
    fn placed(&self, registry: &str, digest: &str) -> Option<String> {
        self.placed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(registry.to_string(), digest.to_string()))
            .cloned()
    }

    fn place(&self, registry: &str, repository: &str, digest: &str) {
        let mut placed = self.placed.lock().unwrap_or_else(|e| e.into_inner());
        let key = (registry.to_string(), digest.to_string());
        if let std::collections::hash_map::Entry::Vacant(v) = placed.entry(key) {
            v.insert(repository.to_string());
            self.new
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Placement {
                    registry: registry.to_string(),
                    digest: digest.to_string(),
                    repository: repository.to_string(),
                });
        }
    }

    /// Remembers where an earlier run put a blob: a copy that needs it mounts it from there (and
    /// uploads it when the mount is refused).
    pub fn seed(&self, p: Placement) {
        self.placed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((p.registry, p.digest))
            .or_insert(p.repository);
    }

    /// The placements made since the last call, for a caller that keeps them across runs.
    pub fn take_new(&self) -> Vec<Placement> {
        std::mem::take(&mut *self.new.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `send` once for `key`; later callers get its outcome as [`Sent::Skipped`]. A caller
    /// that waited on another copy's send that failed (its image's own time ran out, say) tries
    /// once itself, so that one image's failure does not become another's.
    fn once(&self, key: String, send: impl FnOnce() -> Result<Sent>) -> Result<Sent> {
        let mut send = Some(send);
        let mut last = String::new();
        for _ in 0..2 {
            let cell = self
                .blobs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(key.clone())
                .or_default()
                .clone();
            let mut mine = false;
            let out = cell.get_or_init(|| {
                mine = true;
                match send.take() {
                    Some(f) => f().map_err(|e| format!("{e:#}")),
                    None => Err("the send was already tried".into()),
                }
            });
            if mine && out.is_err() {
                // A failed send is not remembered: the next copy tries again.
                self.blobs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key);
            }
            match out {
                Ok(sent) if mine => return Ok(*sent),
                Ok(_) => return Ok(Sent::Skipped),
                Err(e) if mine || send.is_none() => return Err(anyhow!("{e}")),
                Err(e) => {
                    last = e.clone();
                    // The failed outcome is forgotten (if its sender has not done so yet).
                    let mut blobs = self.blobs.lock().unwrap_or_else(|e| e.into_inner());
                    if blobs.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                        blobs.remove(&key);
                    }
                }
            }
        }
        Err(anyhow!("{last}"))
    }
}

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The digest of the top manifest or index, as the destination now holds it.
    pub digest: String,
    /// Blobs sent, and their bytes.
    pub uploaded: usize,
    pub uploaded_bytes: u64,
    /// Blobs mounted from another repository.
    pub mounted: usize,
    /// Blobs the destination had already (or another copy sent).
    pub skipped: usize,
    /// Manifests put, an index's children included.
    pub manifests: usize,
}

/// Copies the image or index `from` names to `to`. An untagged registry destination is tagged
/// `latest`; an untagged layout entry is listed without a name. The error is one line naming
/// both references.
pub fn copy(
    from: &ImageSource,
    to: &ImageSource,
    sides: &Connections,
    opts: &CopyOptions,
    progress: &dyn Progress,
) -> Result<Copied> {
    copy_inner(from, &source_reference(from), to, sides, opts, progress).map_err(|e| {
        anyhow!(
            "{}",
            crate::text::one_line(format!("copy {} to {}: {e:#}", name(from), name(to)))
        )
    })
}

/// A reference as given (`oci:DIR[:TAG]` for a layout).
pub fn name(s: &ImageSource) -> String {
    match s {
        ImageSource::Registry(r) => r.given.clone(),
        ImageSource::Layout { dir, tag } => match tag {
            Some(t) => format!("oci:{}:{t}", dir.display()),
            None => format!("oci:{}", dir.display()),
        },
    }
}

/// [`copy`] of the manifest `digest` of `from`, the error left for the caller to word.
pub fn copy_digest(
    from: &ImageSource,
    digest: &str,
    to: &ImageSource,
    sides: &Connections,
    opts: &CopyOptions,
    progress: &dyn Progress,
) -> Result<Copied> {
    copy_inner(from, digest, to, sides, opts, progress)
}

/// The tag or digest `from` names ("" for a layout's only image).
fn source_reference(from: &ImageSource) -> String {
    match from {
        ImageSource::Registry(r) => r
            .digest
            .clone()
            .unwrap_or_else(|| r.tag.clone().unwrap_or_else(|| "latest".into())),
        ImageSource::Layout { tag, .. } => tag.clone().unwrap_or_default(),
    }
}

fn copy_inner(
    from: &ImageSource,
    reference: &str,
    to: &ImageSource,
    sides: &Connections,
    opts: &CopyOptions,
    progress: &dyn Progress,
) -> Result<Copied> {
    let mut src = open_source(from, &sides.source)?;
    let image = crate::oci::image::read(&mut *src, reference, opts.max_manifest_size)?;
    progress.report(Event::Blobs {
        count: image.blobs.len(),
        bytes: image.blobs.iter().map(|b| b.1).sum(),
    });
    let mut out = Copied {
        digest: image.digest().to_string(),
        ..Default::default()
    };
    copy_blobs(&image.blobs, from, to, sides, opts, progress, &mut out)?;
    let sending = sending(&sides.destination, opts);
    let mut dest = Destination::open(to, &sides.destination, true)?;
    for d in &image.children {
        dest.put_manifest(d, &sending)?;
        progress.report(Event::Manifest(&d.desc.digest));
    }
    // Untagged: put by digest when the destination names one, else as `latest`.
    dest.put_top(&image.top, &sending)?;
    progress.report(Event::Manifest(image.digest()));
    out.manifests = image.children.len() + 1;
    Ok(out)
}

fn sending(dest: &Connection, opts: &CopyOptions) -> Sending {
    Sending {
        chunk_size: opts.chunk_size.max(1),
        retries: crate::registry::retry::Retries {
            attempts: dest.retries.attempts.max(1),
            ..dest.retries
        },
    }
}

fn open_source(from: &ImageSource, conn: &Connection) -> Result<Box<dyn BlobSource + Send>> {
    Ok(match from {
        ImageSource::Registry(r) => Box::new(Registry::new(r, conn)?),
        ImageSource::Layout { dir, .. } => Box::new(Layout::open(dir)?),
    })
}

/// Copies `blobs`, `opts.jobs` at a time; the first failure stops the rest.
fn copy_blobs(
    blobs: &[(String, u64)],
    from: &ImageSource,
    to: &ImageSource,
    sides: &Connections,
    opts: &CopyOptions,
    progress: &dyn Progress,
    out: &mut Copied,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let totals = Mutex::new((out.clone(), None::<anyhow::Error>));
    let jobs = opts.jobs.clamp(1, blobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let result = (|| -> Result<()> {
                    let mut worker = Worker::new(from, to, sides, opts)?;
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= blobs.len() || failed.load(Ordering::SeqCst) {
                            return Ok(());
                        }
                        let (digest, size) = &blobs[i];
                        let sent = worker.blob(digest, *size)?;
                        progress.report(Event::Blob {
                            digest,
                            size: *size,
                            sent,
                        });
                        let mut t = totals.lock().unwrap_or_else(|e| e.into_inner());
                        match sent {
                            Sent::Skipped => t.0.skipped += 1,
                            Sent::Mounted => t.0.mounted += 1,
                            Sent::Uploaded => {
                                t.0.uploaded += 1;
                                t.0.uploaded_bytes += size;
                            }
                        }
                    }
                })();
                if let Err(e) = result {
                    failed.store(true, Ordering::SeqCst);
                    totals
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .1
                        .get_or_insert(e);
                }
            });
        }
    });
    let (totals, error) = totals.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = error {
        return Err(e);
    }
    *out = totals;
    Ok(())
}

/// One thread's clients: its own source and destination connections.
struct Worker<'a> {
    src: Box<dyn BlobSource + Send>,
    dest: Destination,
    opts: &'a CopyOptions,
    sending: Sending,
    /// Where blobs may be mounted from.
    mount_from: Option<String>,
}

impl<'a> Worker<'a> {
    fn new(
        from: &ImageSource,
        to: &ImageSource,
        sides: &Connections,
        opts: &'a CopyOptions,
    ) -> Result<Worker<'a>> {
        let src = open_source(from, &sides.source)?;
        let dest = Destination::open(to, &sides.destination, true)?;
        let mount_from = match to {
            ImageSource::Registry(r) => mount_source(from, r, opts),
            ImageSource::Layout { .. } => None,
        };
        Ok(Worker {
            src,
            dest,
            opts,
            sending: sending(&sides.destination, opts),
            mount_from,
        })
    }

    fn blob(&mut self, digest: &str, size: u64) -> Result<Sent> {
        let (src, opts, mount_from) = (&mut self.src, self.opts, self.mount_from.as_deref());
        let sending = self.sending;
        let in_flight = &opts.in_flight;
        let Some((registry, repository)) = self
            .dest
            .repository()
            .map(|(r, p)| (r.to_string(), p.to_string()))
        else {
            let key = match self.dest.target() {
                ImageSource::Layout { dir, .. } => format!("oci:{}@{digest}", dir.display()),
                ImageSource::Registry(r) => format!("{}@{digest}", r.given),
            };
            let dest = &mut self.dest;
            return in_flight.once(key, || {
                dest.put_blob(&mut **src, digest, size, None, &sending)
            });
        };
        let dest = &mut self.dest;
        let mut send = |mount_from: Option<&str>| -> Result<Sent> {
            dest.put_blob(&mut **src, digest, size, mount_from, &sending)
        };
        // One send per registry and blob: the first copy that needs it sends it to its
        // repository, and the others (at the same time or later) mount it from there.
        let mut first = false;
        let sent = in_flight.once(format!("{registry}@{digest}"), || {
            first = true;
            // A repository an earlier run sent it to ([`InFlight::seed`]) is mounted from.
            let earlier = in_flight
                .placed(&registry, digest)
                .filter(|p| *p != repository);
            let sent = send(mount_from.or(earlier.as_deref()))?;
            in_flight.place(&registry, &repository, digest);
            Ok(sent)
        })?;
        if first {
            return Ok(sent);
        }
        match in_flight.placed(&registry, digest) {
            Some(p) if p == repository => Ok(Sent::Skipped),
            placed => send(placed.as_deref().or(mount_from)),
        }
    }
}

/// The repository to mount from: the caller's, else the source's when it is another
/// repository of the destination's registry.
fn mount_source(from: &ImageSource, to: &Reference, opts: &CopyOptions) -> Option<String> {
    let from_repo = match from {
        ImageSource::Registry(r) if r.registry == to.registry => Some(r.repository.clone()),
        _ => None,
    };
    opts.mount_from
        .clone()
        .or(from_repo)
        .filter(|m| *m != to.repository)
}
