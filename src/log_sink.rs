//! Where log lines go: standard error, each line written as it ends, except a server's per-call
//! lines, which are gathered into one buffer and written in batches.
//!
//! A server logs one line per call (opm does the same), about a tenth of a small call's CPU
//! (GetPackage: 17 against 15 µs without it). Written with one `write(2)` each, the writes were
//! 4.4 % of the server's perf samples; batched, 1.4 %. Batched lines are written when 16 KiB
//! have gathered, when the oldest is 100 ms old (checked as each line is added), when any other
//! line is logged (after them, so the order is kept), when the server goes idle, and when the
//! server ends. A server killed with SIGKILL can lose up to 100 ms of call lines.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bytes gathered before they are written.
const FLUSH_BYTES: usize = 16 * 1024;
/// The longest a line waits while more lines arrive.
const FLUSH_AGE: Duration = Duration::from_millis(100);

static BATCHED: AtomicBool = AtomicBool::new(false);
static BUFFER: Mutex<Pending> = Mutex::new(Pending {
    bytes: Vec::new(),
    since: None,
});

struct Pending {
    bytes: Vec<u8>,
    /// When the oldest buffered line arrived.
    since: Option<Instant>,
}

impl Pending {
    fn write_out(&mut self) {
        if !self.bytes.is_empty() {
            // A closed or full stderr must not stop the server: errors are dropped.
            let _ = std::io::stderr().lock().write_all(&self.bytes);
            self.bytes.clear();
        }
        self.since = None;
    }
}

/// From now on, per-call lines are batched (a server calls this once it starts).
pub fn batch() {
    BATCHED.store(true, Ordering::Relaxed);
}

/// Writes whatever is buffered.
pub fn flush() {
    if let Ok(mut p) = BUFFER.lock() {
        p.write_out();
    }
}

/// The writer `tracing_subscriber` formats each log line into.
pub struct Sink;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Sink {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line { urgent: true }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line {
        Line {
            urgent: meta.target() != crate::metrics::layer::CALL_LOG_TARGET
                || !BATCHED.load(Ordering::Relaxed),
        }
    }
}

/// One log line (the formatter writes it whole, then drops the writer).
pub struct Line {
    urgent: bool,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut p = BUFFER.lock().unwrap_or_else(|e| e.into_inner());
        p.bytes.extend_from_slice(buf);
        p.since.get_or_insert_with(Instant::now);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let mut p = BUFFER.lock().unwrap_or_else(|e| e.into_inner());
        let due = self.urgent
            || p.bytes.len() >= FLUSH_BYTES
            || p.since.is_some_and(|t| t.elapsed() >= FLUSH_AGE);
        if due {
            p.write_out();
        }
    }
}
