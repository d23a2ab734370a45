//! Progress of long library work (reading and validating SOURCEs, pulling layers, writing a
//! database, copying images, mirroring), reported as typed [`Event`]s to the one [`Progress`]
//! trait the caller gives. The library draws nothing: the command line turns events into a
//! spinner or a bar on a terminal, into log lines with `--log-format json`, and into nothing
//! with `-q` or a stderr that is not a terminal (`cli::progress`, the one drawer).

use std::io::Read;
use std::sync::Arc;

/// What a task counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    /// Items of this name ("packages").
    Items(&'static str),
}

/// How a blob reached the destination of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// It was there already.
    Skipped,
    /// Mounted from another repository of the same registry.
    Mounted,
    /// Its bytes were sent.
    Uploaded,
}

/// One progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Steps: one whose size is unknown begins ("reading sources", "validating").
    Step(&'a str),
    /// A counted task begins: `total` units.
    Task {
        label: &'a str,
        total: u64,
        unit: Unit,
    },
    /// Units of the task done so far.
    Position(u64),
    /// Problems the task has found so far (image checks: images missing or unreachable).
    Findings(u64),
    /// The step or task is over.
    Done,
    /// Images: a run of this many begins (a mirror).
    Images(usize),
    /// One image's copy begins.
    ImageStarted(&'a str),
    /// One image's copy is over, well or not.
    ImageDone { name: &'a str, ok: bool },
    /// Blobs: a copy's blobs and their bytes, once its manifests are read.
    Blobs { count: usize, bytes: u64 },
    /// One blob done: its size and how it got there.
    Blob {
        digest: &'a str,
        size: u64,
        sent: Sent,
    },
    /// A manifest put (an index's children first, the top last).
    Manifest(&'a str),
    /// Bytes: of blobs sent or found at the destination, for a count across copies.
    Bytes(u64),
    /// A line for the user, shown as it happens (above any bar): a mirror's catalog pinned and
    /// filtered, before its images are read.
    Note(&'a str),
}

/// Receives progress events, from any thread; the default reports nothing.
pub trait Progress: Send + Sync {
    fn report(&self, _event: Event<'_>) {}
}

/// Reports nothing.
pub struct Silent;
impl Progress for Silent {}

/// A shared handle to a [`Progress`], for options structs; the default reports nothing.
#[derive(Clone)]
pub struct Reporter(Arc<dyn Progress>);

impl Reporter {
    pub fn new(p: Arc<dyn Progress>) -> Reporter {
        Reporter(p)
    }

    /// Reports nothing.
    pub fn none() -> Reporter {
        Reporter(Arc::new(Silent))
    }

    pub fn step(&self, what: &str) {
        self.0.report(Event::Step(what))
    }

    pub fn task(&self, label: &str, total: u64, unit: Unit) {
        self.0.report(Event::Task { label, total, unit })
    }

    pub fn position(&self, done: u64) {
        self.0.report(Event::Position(done))
    }

    pub fn done(&self) {
        self.0.report(Event::Done)
    }

    pub fn findings(&self, so_far: u64) {
        self.0.report(Event::Findings(so_far))
    }

    /// `r`, reporting the bytes read as the position of a task begun by the caller.
    pub fn reading<R: Read>(&self, r: R) -> Reading<R> {
        Reading {
            inner: r,
            read: 0,
            progress: self.clone(),
        }
    }
}

impl Default for Reporter {
    fn default() -> Self {
        Reporter::none()
    }
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter")
    }
}

/// A reader that reports its bytes ([`Reporter::reading`]).
pub struct Reading<R> {
    inner: R,
    read: u64,
    progress: Reporter,
}

impl<R: Read> Read for Reading<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        self.progress.position(self.read);
        Ok(n)
    }
}
