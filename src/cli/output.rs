//! Everything a command prints goes through here, so that no print can panic and every line on
//! stderr follows `--log-format`.
//!
//! * Results go to stdout with [`out`]. When the reader has gone (`opreg graph … | head -1`),
//!   the broken pipe is remembered and further output dropped: the command finishes and exits
//!   with its own code, quietly. Any other write error is returned for the command to report.
//! * Reports go to stderr with [`diagnostic`], [`error`] and [`status`]: plain lines in the
//!   text format, one JSON object per line (through the same `tracing` subscriber as every log
//!   line) in the JSON format. A failed write to stderr is ignored: there is nowhere left to
//!   say so.

use crate::diag::{Diagnostic, Severity};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static JSON: AtomicBool = AtomicBool::new(false);
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Chooses the format of stderr reports; called once by logging initialization.
pub(crate) fn set_json(json: bool) {
    JSON.store(json, Ordering::Relaxed);
}

/// True with `--log-format json`.
pub(crate) fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Writes `text` to stdout and flushes it. A reader that went away is not an error: the rest of
/// the output is dropped.
pub fn out(text: &str) -> std::io::Result<()> {
    write_out(|w| w.write_all(text.as_bytes()))
}

/// Runs `f` on a locked, buffered stdout and flushes; a broken pipe is swallowed as in [`out`].
pub fn write_out(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return Ok(());
    }
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    match f(&mut w).and_then(|_| w.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_GONE.store(true, Ordering::Relaxed);
            // The buffer's remains must not be written again on drop.
            let _ = w.into_parts();
            Ok(())
        }
        other => other,
    }
}

/// A line on stderr as it is, whatever happens to stderr.
fn err_line(line: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{line}");
}

/// Writes what `f` writes to stdout ([`write_out`]); a failure is `writing output: …`.
pub fn write_or_fail(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> super::Ended {
    match write_out(f) {
        Ok(()) => super::Ended::Done,
        Err(e) => crate::error::Error::failed(format_args!("writing output: {e}")).into(),
    }
}

/// A line on stderr as it is, in either log format (grpc_health_probe's own output).
pub fn plain(line: &str) {
    err_line(line)
}

/// A catalog diagnostic: its one-line form, or a JSON log event with its fields.
pub fn diagnostic(d: &Diagnostic) {
    if !json() {
        return err_line(&d.to_string());
    }
    let file = d.origin.as_ref().map(|o| o.file.as_str());
    let document = d.origin.as_ref().and_then(|o| o.doc);
    let (p, c, b) = (&d.package, &d.channel, &d.bundle);
    let msg = crate::text::elide(&d.message, 4096, 512);
    let help = d.help.as_deref();
    macro_rules! event {
        ($level:expr) => {
            tracing::event!(
                $level,
                rule = d.rule.id(),
                file,
                document,
                package = p.as_deref(),
                channel = c.as_deref(),
                bundle = b.as_deref(),
                help,
                "{msg}"
            )
        };
    }
    match d.severity {
        Severity::Error => event!(tracing::Level::ERROR),
        Severity::Warning => event!(tracing::Level::WARN),
    }
}

/// A failure of the command: `error: MESSAGE`, or a JSON error event.
pub fn error(msg: impl std::fmt::Display) {
    match error_text(&msg) {
        Some(line) => err_line(&line),
        None => tracing::error!("{msg}"),
    }
}

/// What [`error`] writes for `msg` (without the line's end), when it is plain text: a JSON
/// event is stamped as it is written.
pub fn error_text(msg: &dyn std::fmt::Display) -> Option<String> {
    (!json()).then(|| format!("error: {msg}"))
}

/// A warning that is no catalog diagnostic: `warning: MESSAGE`, or a JSON warning event.
pub fn warning(msg: impl std::fmt::Display) {
    if json() {
        tracing::warn!("{msg}");
    } else {
        err_line(&format!("warning: {msg}"));
    }
}

/// A summary or note for the user (`valid: …`, `wrote …`): as it is, or a JSON info event.
pub fn status(msg: impl std::fmt::Display) {
    if json() {
        tracing::info!("{msg}");
    } else {
        err_line(&msg.to_string());
    }
}

/// The summary of a failed command (`3 error(s): the catalog is invalid`): a plain line, or a
/// JSON event at error level.
pub fn failure_summary(msg: impl std::fmt::Display) {
    if json() {
        tracing::error!("{msg}");
    } else {
        err_line(&msg.to_string());
    }
}
