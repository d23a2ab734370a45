//! Progress of long library work (pulling layers, reading and validating SOURCEs, writing a
//! database), reported through a [`Progress`] the caller gives. The library draws nothing:
//! the command line turns reports into a bar on a terminal, and into nothing with
//! `--log-format json`, `-q` or a stderr that is not a terminal (`cli::progress`).

use std::io::Read;
use std::sync::Arc;

/// What a task counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    /// Items of this name ("packages").
    Items(&'static str),
}

/// Receives progress reports; every method does nothing by default.
pub trait Progress: Send + Sync {
    /// A step whose size is unknown begins ("reading sources", "validating").
    fn step(&self, _what: &str) {}
    /// A counted task begins: `total` units.
    fn task(&self, _label: &str, _total: u64, _unit: Unit) {}
    /// Units of the task done so far.
    fn position(&self, _done: u64) {}
    /// The step or task is over.
    fn done(&self) {}
}

/// Reports nothing.
struct Silent;
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
        self.0.step(what)
    }

    pub fn task(&self, label: &str, total: u64, unit: Unit) {
        self.0.task(label, total, unit)
    }

    pub fn position(&self, done: u64) {
        self.0.position(done)
    }

    pub fn done(&self) {
        self.0.done()
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
