//! Stopping long work on SIGINT and SIGTERM without leaving anything behind.
//!
//! While an [`Interrupt`] is alive, the first SIGINT or SIGTERM only raises its flag: the work
//! that polls the flag ([`crate::ingest`]'s pipeline, the source digest) stops at its next
//! step, and the temporary files it made are removed as their owners are dropped. A second
//! signal ends the process at once (exit 130), for work that does not poll. Once the
//! `Interrupt` is dropped, every such signal ends the process at once (signal handlers cannot
//! be taken back, so the handler stays, armed).
//!
//! Commands whose work does not poll a flag use [`exit_on_signal`]: the first SIGINT or
//! SIGTERM removes the temporary files being written ([`crate::atomic::remove_unfinished`]),
//! has the caller say what was and was not done, and ends the process with 130. That work is
//! done by a thread started only once it is needed (before the first temporary file, or at
//! once for a line that must be formatted when it is written): a live second thread makes
//! every system call of the process dearer (1.4 ms of a 23 ms `opreg upgrade`). Until then,
//! the signal handler itself writes the line, made beforehand, and exits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A flag raised by SIGINT or SIGTERM while this value lives.
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    /// Raised when this value is dropped: from then on a signal exits at once.
    armed: Arc<AtomicBool>,
}

impl Interrupt {
    /// Starts catching SIGINT and SIGTERM. If the handlers cannot be installed, the flag is
    /// never raised and the signals keep their default action.
    pub fn catch() -> Interrupt {
        let flag = Arc::new(AtomicBool::new(false));
        let armed = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Registered first, so they see the flags before this signal raises one: only a
            // second signal (or one after the work) exits.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone());
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, armed.clone());
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        Interrupt { flag, armed }
    }

    /// The flag, for work that polls it.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// True once a signal arrived.
    pub fn raised(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.armed.store(true, Ordering::Relaxed);
    }
}

/// How the process ends at once: `main` gives `std::process::exit` (the one place that exits).
static EXIT: std::sync::OnceLock<fn(i32) -> !> = std::sync::OnceLock::new();

/// Sets how [`exit_on_signal`] ends the process.
pub fn set_exit(exit: fn(i32) -> !) {
    let _ = EXIT.set(exit);
}

/// What the watcher thread is started with, until it is.
struct Pending {
    woken: std::os::unix::net::UnixStream,
    report: Box<dyn FnOnce() -> i32 + Send>,
}

static PENDING: std::sync::Mutex<Option<Pending>> = std::sync::Mutex::new(None);

/// Raised once the watcher thread is started: from then on a signal wakes it.
static WATCHING: AtomicBool = AtomicBool::new(false);

/// From now on, the first SIGINT or SIGTERM removes the unfinished temporary files, calls
/// `report` (which says what the interrupted work leaves, and returns the exit code) and ends
/// the process with that code ([`set_exit`]); a second signal exits with 130 at once. The
/// watcher sleeps on a socket the signal handler writes to: no polling. `quick` is what
/// `report` writes and returns, when that is known now: until the watcher is needed, the
/// handler writes it and exits itself. If the handlers cannot be installed, the signals keep
/// their default action.
pub fn exit_on_signal(report: impl FnOnce() -> i32 + Send + 'static, quick: Option<(String, i32)>) {
    let Ok((woken, wake)) = std::os::unix::net::UnixStream::pair() else {
        return;
    };
    *pending() = Some(Pending {
        woken,
        report: Box::new(report),
    });
    let quick: Option<(&'static [u8], i32)> =
        quick.map(|(line, code)| (&*Box::leak(line.into_bytes().into_boxed_slice()), code));
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so it sees the flag before this signal raises it: only a second
        // signal exits here.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone());
        if let Some((line, code)) = quick {
            // SAFETY: the action makes only async-signal-safe calls: an atomic load,
            // write(2) and _exit(2).
            let _ = unsafe {
                signal_hook::low_level::register(sig, move || {
                    if !WATCHING.load(Ordering::SeqCst) {
                        let _ = libc::write(2, line.as_ptr().cast(), line.len());
                        signal_hook::low_level::exit(code);
                    }
                })
            };
        }
        let Ok(w) = wake.try_clone() else {
            return;
        };
        if signal_hook::low_level::pipe::register(sig, w).is_err() {
            return;
        }
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    crate::atomic::before_unfinished(watch);
    if quick.is_none() {
        watch();
    }
}

fn pending() -> std::sync::MutexGuard<'static, Option<Pending>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the watcher thread of [`exit_on_signal`], once.
fn watch() {
    if WATCHING.load(Ordering::SeqCst) {
        return;
    }
    let Some(Pending { mut woken, report }) = pending().take() else {
        return;
    };
    // Raised before the thread runs: a signal from now on is in the socket for it to read.
    WATCHING.store(true, Ordering::SeqCst);
    let watcher = std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            use std::io::Read;
            let mut byte = [0u8; 1];
            if woken.read(&mut byte).is_ok_and(|n| n > 0) {
                crate::atomic::remove_unfinished();
                let code = report();
                if let Some(exit) = EXIT.get() {
                    exit(code);
                }
            }
        });
    if let Err(e) = watcher {
        WATCHING.store(false, Ordering::SeqCst);
        tracing::debug!(error = %e, "cannot watch for interrupts; signals keep their default action");
    }
}
